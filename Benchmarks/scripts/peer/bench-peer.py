#!/usr/bin/env python3
"""Peer comparison for mix mode: Parley vs Janus AudioBridge, same room shapes, same senders, one run.

Usage (from the repository root):
    python3 Benchmarks/scripts/peer/bench-peer.py [--rooms 5] [--members 10] [--speakers 3] [--seconds 20] [--warmup 3]

    BIN=/path/to/.build/release   where parley-relay and parley are (default: .build/release of this checkout)
    Needs: Debian's `janus` package (apt-get install -y janus), ffmpeg with libopus (encodes the test signal once).

What it does, one peer after the other (never concurrently), everything on 127.0.0.1:
  * Janus 1.1 (config: Benchmarks/scripts/peer/janus/, copied to a temp dir with a free HTTP port; only AudioBridge and the
    HTTP transport loaded): creates R rooms (48 kHz, allow_rtp_participants) and joins M plain-RTP participants per
    room (`join` with `rtp: {ip, port, payload_type: 111}`; the `joined` event says where to send). Janus sends a
    plain-RTP participant nothing before it received one packet from it, so each listener sends one silence frame.
  * Parley (`parley-relay --workers 1`), once per mode of --parley-modes (default mix, then hybrid: the speakers
    hear each other forwarded, one speaker at a time per endpoint, the listeners one mix): creates R rooms and M
    plain-RTP endpoints per room (publish+subscribe,
    receive_address = the participant's socket;
    listeners subscribe-only, since a publishing endpoint that never sends times out).
  * Each participant is one UDP socket on 127.0.0.1 (sends from it, receives on it). S speakers per room send the
    same pre-encoded Opus (48 kHz mono, 20 ms, 32 kbit/s, ffmpeg/libopus, encoded once) as RTP PT 111 at 50 pps from
    this script, on absolute 20 ms deadlines; the others send nothing and only count what they receive.
  * After a warm-up, CPU (utime+stime from /proc/PID/stat, all threads) of the server process is sampled at the start
    and end of a steady window; packets received per participant are counted over the same window.

Output: a table and one JSON line (`{"bench": "peer-mix", ...}`): CPU-seconds per room per wall second for each peer,
the ratio janus/parley, and received pps per listener (≈ 50 when the server mixes for everyone).
"""
import argparse
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
TICK = os.sysconf("SC_CLK_TCK")


def die(msg):
    print("bench-peer: " + msg, file=sys.stderr)
    sys.exit(1)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def http(method, url, body=None, token=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        die("%s %s -> %d %s" % (method, url, e.code, e.read()[:300]))


# ---------- test signal: encode once, read the Opus packets out of the Ogg file ----------

def opus_packets(workdir):
    path = os.path.join(workdir, "signal.opus")
    src = "aevalsrc=0.3*sin(2*PI*220*t)*(0.55+0.45*sin(2*PI*3*t))+0.1*sin(2*PI*1250*t):s=48000:d=10"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", src, "-ac", "1", "-ar", "48000",
                    "-c:a", "libopus", "-b:a", "32k", "-application", "voip", "-frame_duration", "20", path],
                   check=True)
    data = open(path, "rb").read()
    packets, pos, cur = [], 0, b""
    while pos < len(data):
        if data[pos:pos + 4] != b"OggS":
            die("bad ogg page")
        nseg = data[pos + 26]
        segs = data[pos + 27:pos + 27 + nseg]
        pos += 27 + nseg
        for n in segs:
            cur += data[pos:pos + n]
            pos += n
            if n < 255:
                packets.append(cur)
                cur = b""
    packets = [p for p in packets if not p.startswith(b"OpusHead") and not p.startswith(b"OpusTags")]
    if len(packets) < 100:
        die("too few opus packets: %d" % len(packets))
    return packets


# ---------- participants: one socket each; one sender thread, one receiver thread ----------

class Participant:
    def __init__(self, room, idx, speaker, ssrc):
        self.room, self.idx, self.speaker, self.ssrc = room, idx, speaker, ssrc
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        self.dest = None        # where to send RTP (set when the server answered)
        self.sending = False
        self.received = 0
        self.seq = idx * 1000
        self.ts = idx * 100000


class Traffic:
    def __init__(self, packets):
        self.packets = packets
        self.parts = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.sent = 0

    def add(self, p):
        with self.lock:
            self.parts.append(p)

    def start(self):
        self.t1 = threading.Thread(target=self._send, daemon=True)
        self.t2 = threading.Thread(target=self._recv, daemon=True)
        self.t1.start()
        self.t2.start()

    def _send(self):
        n, t0 = 0, time.monotonic()
        while not self.stop.is_set():
            payload = self.packets[n % len(self.packets)]
            with self.lock:
                parts = [p for p in self.parts if p.sending and p.dest]
            for p in parts:
                hdr = struct.pack("!BBHII", 0x80, 111, p.seq & 0xFFFF, p.ts & 0xFFFFFFFF, p.ssrc)
                try:
                    p.sock.sendto(hdr + payload, p.dest)
                    self.sent += 1
                except OSError:
                    pass
                p.seq += 1
                p.ts += 960
            n += 1
            delay = t0 + n * 0.02 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -0.1:   # fell behind: skip ahead rather than burst
                n = int((time.monotonic() - t0) / 0.02)

    def _recv(self):
        while not self.stop.is_set():
            with self.lock:
                socks = {p.sock: p for p in self.parts}
            if not socks:
                time.sleep(0.01)
                continue
            r, _, _ = select.select(list(socks), [], [], 0.05)
            for s in r:
                p = socks[s]
                while True:
                    try:
                        s.recv(2048)
                        p.received += 1
                    except (BlockingIOError, OSError):
                        break

    def close(self):
        self.stop.set()
        self.t1.join(2)
        self.t2.join(2)
        for p in self.parts:
            p.sock.close()


def measure(pid, traffic, warmup, seconds):
    time.sleep(warmup)
    c0, w0 = cpu_seconds(pid), time.monotonic()
    r0 = {id(p): p.received for p in traffic.parts}
    time.sleep(seconds)
    c1, w1 = cpu_seconds(pid), time.monotonic()
    wall = w1 - w0
    pps_l = [(p.received - r0[id(p)]) / wall for p in traffic.parts if not p.speaker]
    pps_s = [(p.received - r0[id(p)]) / wall for p in traffic.parts if p.speaker]
    return {"cpu_s": c1 - c0, "wall_s": wall,
            "listener_pps_mean": sum(pps_l) / len(pps_l) if pps_l else 0.0,
            "listener_pps_min": min(pps_l) if pps_l else 0.0,
            "speaker_pps_mean": sum(pps_s) / len(pps_s) if pps_s else 0.0}


def terminate(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------- Janus ----------

def run_janus(args, packets, workdir):
    cfg = os.path.join(workdir, "janus")
    shutil.copytree(os.path.join(HERE, "janus"), cfg)
    port = free_port()
    tp = os.path.join(cfg, "janus.transport.http.jcfg")
    txt = open(tp).read().replace("port = 8088", "port = %d" % port)
    open(tp, "w").write(txt)
    log = open(os.path.join(workdir, "janus.log"), "w")
    proc = subprocess.Popen(["janus", "-C", os.path.join(cfg, "janus.jcfg"), "-F", cfg, "-o"],
                            stdout=log, stderr=subprocess.STDOUT)
    base = "http://127.0.0.1:%d/janus" % port
    traffic = Traffic(packets)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/info", timeout=1).read()
                break
            except Exception:
                if proc.poll() is not None:
                    die("janus exited; see " + log.name)
                time.sleep(0.1)
        else:
            die("janus HTTP not up; see " + log.name)
        tx = [0]

        def janus(path, body):
            tx[0] += 1
            body = dict(body, transaction="t%d" % tx[0])
            r = http("POST", base + path, body)
            if r.get("janus") == "error":
                die("janus error: %s" % r)
            return r

        sid = janus("", {"janus": "create"})["data"]["id"]
        spath = "/%d" % sid
        events = {}      # handle id -> list of plugin events
        stop = threading.Event()

        def poll():
            while not stop.is_set():
                try:
                    with urllib.request.urlopen(base + spath + "?maxev=50", timeout=35) as r:
                        evs = json.loads(r.read())
                except Exception:
                    continue
                for ev in evs if isinstance(evs, list) else [evs]:
                    if ev.get("janus") == "event":
                        events.setdefault(ev.get("sender"), []).append(ev)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()

        def plugin_call(hid, body, want):
            r = janus("%s/%d" % (spath, hid), {"janus": "message", "body": body})
            if r.get("janus") == "success":
                return r["plugindata"]["data"], None
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                for ev in events.get(hid, []):
                    d = ev.get("plugindata", {}).get("data", {})
                    if d.get("audiobridge") == want or "error" in d:
                        events[hid].remove(ev)
                        if "error" in d:
                            die("audiobridge error: %s" % d)
                        return d, ev.get("jsep")
                time.sleep(0.005)
            die("no '%s' event for handle %d" % (want, hid))

        ctl = janus(spath, {"janus": "attach", "plugin": "janus.plugin.audiobridge"})["data"]["id"]
        traffic.start()
        ssrc = 0x10000
        for r in range(args.rooms):
            room = 1000 + r
            d, _ = plugin_call(ctl, {"request": "create", "room": room, "sampling_rate": 48000,
                                     "allow_rtp_participants": True, "audiolevel_ext": False}, "created")
            for i in range(args.members):
                hid = janus(spath, {"janus": "attach", "plugin": "janus.plugin.audiobridge"})["data"]["id"]
                ssrc += 1
                p = Participant(r, i, i < args.speakers, ssrc)
                d, _ = plugin_call(hid, {"request": "join", "room": room, "display": "p%d-%d" % (r, i),
                                         "rtp": {"ip": "127.0.0.1", "port": p.port, "payload_type": 111,
                                                 "audiolevel_ext": 0, "fec": False}}, "joined")
                rtp = d.get("rtp")
                if not rtp or not rtp.get("port"):
                    die("join answered without rtp: %s" % d)
                p.dest = (rtp.get("ip") or "127.0.0.1", rtp["port"])
                p.sending = p.speaker
                if not p.speaker:
                    # Janus sends nothing to a plain-RTP participant until it has received one RTP packet from it
                    # (listeners got 0 pps without this): one 3-byte Opus silence frame, then nothing.
                    p.sock.sendto(struct.pack("!BBHII", 0x80, 111, 0, 0, p.ssrc) + b"\xf8\xff\xfe", p.dest)
                traffic.add(p)
        res = measure(proc.pid, traffic, args.warmup, args.seconds)
        res["participants"] = len(traffic.parts)
        stop.set()
        return res
    finally:
        traffic.close()
        terminate(proc)
        log.close()


# ---------- Parley ----------

def run_parley(args, packets, workdir, bindir, mode="mix"):
    log = open(os.path.join(workdir, "parley-relay.log"), "w+")
    proc = subprocess.Popen([os.path.join(bindir, "parley-relay"), "--udp", "127.0.0.1:0", "--http", "127.0.0.1:0",
                             "--workers", "1", "--log-level", "warning", "--allow-cleartext"], stdout=log, stderr=subprocess.STDOUT)
    traffic = Traffic(packets)
    try:
        api = None
        for _ in range(100):
            log.seek(0)
            for line in log:
                if "ready on udp" in line and "http " in line:
                    api = "http://" + line.split("http ")[1].split(";")[0].strip()
            if api or proc.poll() is not None:
                break
            time.sleep(0.1)
        if not api:
            die("parley-relay not ready; see " + log.name)
        token = subprocess.run([os.path.join(bindir, "parley"), "token", "--admin", "--identity", "bench"],
                               check=True, capture_output=True, text=True).stdout.strip()
        traffic.start()
        for r in range(args.rooms):
            name = "peer-%d" % r
            http("POST", api + "/v1/rooms", {"name": name, "mode": mode}, token)
            for i in range(args.members):
                p = Participant(r, i, i < args.speakers, 0)
                a = http("POST", api + "/v1/rooms/%s/rtp-endpoints" % name,
                         {"identity": "p%d" % i, "publish": p.speaker, "subscribe": True, "srtp": False,
                          "receive_address": "127.0.0.1:%d" % p.port}, token)
                p.ssrc = a["ssrc"]
                p.dest = (a["relay_host"], a["relay_port"])
                p.sending = p.speaker
                traffic.add(p)
                if p.speaker:
                    time.sleep(0.06)   # latch: its first packet must arrive before the next endpoint waits
        # Listeners are subscribe-only: a publishing endpoint that never sends is removed after member_timeout (15 s).
        res = measure(proc.pid, traffic, args.warmup, args.seconds)
        res["participants"] = len(traffic.parts)
        # sanity: every speaker latched (the relay counts its packets), so each mix has all of them
        latched = 0
        for r in range(args.rooms):
            for m in http("GET", api + "/v1/rooms/peer-%d/members" % r, None, token)["members"]:
                latched += m["stats"]["packets_in"] > 0
        res["speakers_latched"] = latched
        if latched != args.rooms * args.speakers:
            print("bench-peer: warning: %d of %d speakers latched" % (latched, args.rooms * args.speakers),
                  file=sys.stderr)
        return res
    finally:
        traffic.close()
        terminate(proc)
        log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rooms", type=int, default=5)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--speakers", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--only", choices=["janus", "parley"])
    ap.add_argument("--parley-modes", default="mix,hybrid",
                    help="Parley room modes to run, one after the other (hybrid: the speakers hear each other "
                         "forwarded, the listeners one mix)")
    args = ap.parse_args()
    if not (0 < args.speakers <= args.members) or args.rooms < 1 or not (1 <= args.seconds <= 120):
        die("need 0 < speakers <= members, rooms >= 1, 1 <= seconds <= 120")

    bindir = os.path.abspath(os.path.join(ROOT, os.environ.get("BIN", ".build/release")))
    if args.only != "janus":
        for b in ("parley-relay", "parley"):
            if not os.access(os.path.join(bindir, b), os.X_OK):
                die("%s/%s not found: build with `swift build -c release` or set BIN" % (bindir, b))
    if args.only != "parley" and not shutil.which("janus"):
        die("janus not installed: apt-get install -y janus   (Debian package, tested with 1.1.2)")
    if not shutil.which("ffmpeg"):
        die("ffmpeg not installed: apt-get install -y ffmpeg")

    workdir = tempfile.mkdtemp(prefix="bench-peer-")
    try:
        packets = opus_packets(workdir)
        results = {}
        if args.only != "parley":
            results["janus"] = run_janus(args, packets, workdir)
            time.sleep(1)
        if args.only != "janus":
            for mode in args.parley_modes.split(","):
                results["parley" if mode == "mix" else "parley-" + mode] = run_parley(args, packets, workdir, bindir, mode)
                time.sleep(1)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    janus_ver = ""
    try:
        janus_ver = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "janus"], capture_output=True,
                                   text=True).stdout
    except Exception:
        pass
    print("mix mode: %d rooms x %d members, %d speaking, Opus 48 kHz mono 20 ms 32 kbit/s, %g s window, %d cores"
          % (args.rooms, args.members, args.speakers, args.seconds, os.cpu_count()))
    print("%-14s %10s %16s %14s %14s %14s" % ("peer", "cpu_s", "cpu_s/room/s", "cpu %core", "listener pps",
                                             "speaker pps"))
    out = {"bench": "peer-mix", "rooms": args.rooms, "members": args.members, "speakers": args.speakers,
           "seconds": args.seconds, "janus_version": janus_ver}
    for name, r in results.items():
        per_room = r["cpu_s"] / r["wall_s"] / args.rooms
        r["cpu_s_per_room_per_s"] = per_room
        print("%-14s %10.3f %16.5f %13.1f%% %14.1f %14.1f" % (name, r["cpu_s"], per_room,
                                                              100 * r["cpu_s"] / r["wall_s"],
                                                              r["listener_pps_mean"], r["speaker_pps_mean"]))
        out[name] = {k: round(v, 5) if isinstance(v, float) else v for k, v in r.items()}
    if "janus" in results and "parley" in results:
        pr = results["parley"]["cpu_s_per_room_per_s"]
        ratio = results["janus"]["cpu_s_per_room_per_s"] / pr if pr > 0 else float("inf")
        out["janus_over_parley"] = round(ratio, 2)
        print("Janus uses %.2fx the CPU per mixed room of Parley" % ratio)
    if "janus" in results and "parley-hybrid" in results:
        ph = results["parley-hybrid"]["cpu_s_per_room_per_s"]
        ratio = results["janus"]["cpu_s_per_room_per_s"] / ph if ph > 0 else float("inf")
        out["janus_over_parley_hybrid"] = round(ratio, 2)
        print("Janus uses %.2fx the CPU per room of a Parley hybrid room" % ratio)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
