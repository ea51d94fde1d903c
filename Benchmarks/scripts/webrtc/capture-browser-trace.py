#!/usr/bin/env python3
"""Captures a jitter-buffer trace of a real browser: the RTP packets headless Chromium sends to a relay (issue 37).

    capture-browser-trace.py [--seconds 60] [--out FILE] [--profile NAME] [--bin DIR] [--keep DIR]
    capture-browser-trace.py --summary FILE...      (the figures of traces already written, one line each)

A release relay on loopback (one worker), a `parley join --listen-only --output` member recording a forward room, and
headless Chromium publishing into that room through the sample page (Samples/web: its offer POSTed to
/v1/rooms/{room}/webrtc, WHIP-style) with espeak-ng speech as its fake microphone (looped by Chromium) for --seconds.
tcpdump records every UDP datagram to the relay's port on `lo`; tshark decodes the port as RTP (SRTP leaves the
header in clear) and keeps the audio SSRC's Opus packets (PT 111: STUN, DTLS and SRTCP are not RTP with that type).

The trace (`jb-trace v1`, Benchmarks/traces/README.md): one row per sequence number from the first packet's,
unwrapped and starting at 0; `send_ms` = (unwrapped RTP timestamp - the first) / 48; `arrival_ms` = capture time -
the first packet's capture time + 1.0 ms (the trace's nominal base), 0.1 ms resolution; a number the sender skipped
or the capture missed is `lost` (its send_ms interpolated). Arrival is tcpdump's kernel timestamp on `lo`: the moment
Chromium's datagram was sent, so the trace is the browser's own sending rhythm, with nothing of a network in it.

Prints the trace's summary: packets, lost, the longest gap between arrivals, the delay floor's steps (the floor: the
least arrival - send in each second; its total step is the last second's floor minus the first's; a step is a rise of
more than 10 ms from one second to the next), the stalls (runs of packets more than 40 ms above their second's floor)
and the load average before and after; and, as a cross-check of the capture, what the recorder received and the
relay forwarded (its /metrics), which equal the trace's packets.
Needs root (tcpdump), chromium, tcpdump, tshark, espeak-ng, ffmpeg (make test installs them) and release builds of
parley-relay and parley (--bin, default .build/release). Every process it starts is stopped before it exits, and
each has a deadline.
"""
import argparse
import glob
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SPEECH_TEXT = ("The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background. "
               "It is easy to tell the depth of a well. These days a chicken leg is a rare dish. "
               "Rice is often served in round bowls. The juice of lemons makes fine punch.")
FRAME_MS = 20
# The trace's first arrival (ms): a nominal base, as the shared traces have one (theirs 40 ms of network).
BASE_MS = 1.0
# A rise of the delay floor from one second to the next larger than this counts as a step (ms).
STEP_MS = 10.0
# A packet later than its second's delay floor by more than this is in a stall (ms): two frames.
STALL_MS = 40.0


class Processes:
    """What the capture started, stopped at the end in reverse order: each by its process group (Chromium's
    renderer and GPU processes are in its group), with `stop_signal` first and SIGKILL after a grace."""

    def __init__(self):
        self.started = []

    def start(self, args, stop_signal=signal.SIGTERM, **kwargs):
        p = subprocess.Popen(args, start_new_session=True, **kwargs)
        self.started.append((p, stop_signal))
        return p

    def stop(self, p, stop_signal, grace=5):
        self.started = [(q, s) for q, s in self.started if q is not p]
        if p.poll() is None:
            try:
                os.killpg(p.pid, stop_signal)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        # What is left of its group (a child that outlived its parent) goes too.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()

    def stop_all(self):
        for p, stop_signal in reversed(self.started):
            self.stop(p, stop_signal)


def wait_for(path, pattern, seconds):
    """The first match of `pattern` in the file at `path` within `seconds`, else None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(path, errors="replace") as f:
            m = re.search(pattern, f.read())
        if m:
            return m
        time.sleep(0.05)
    return None


def relay_counters(http):
    """What the relay counted (its /metrics, which loopback reads without a token): packets forwarded to the
    recorder, NACKs answered, the browser's packets it found missing: the capture's cross-check."""
    import urllib.request
    names = {"parley_packets_forwarded_total": "forwarded", "parley_nacks_answered_total": "nacks answered",
             "parley_uplink_packets_lost_total": "uplink lost"}
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=2).read().decode()
    except OSError as e:
        return f"no /metrics: {e}"
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in names:
            values[names[parts[0]]] = int(float(parts[1]))
    return ", ".join(f"{k} {v}" for k, v in values.items())


def make_speech(work):
    """espeak-ng's Harvard sentences at 48 kHz mono 16-bit (Chromium's fake microphone), about 13 s."""
    raw, path = os.path.join(work, "speech-22k.wav"), os.path.join(work, "speech.wav")
    subprocess.run(["espeak-ng", "-s", "150", "-w", raw, SPEECH_TEXT], check=True, timeout=30)
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-i", raw, "-ar", "48000", "-ac", "1",
                    "-c:a", "pcm_s16le", path], check=True, timeout=30)
    return path


def rtp_packets(pcap, port):
    """(capture time s, seq, timestamp) of the Opus packets of the SSRC that sent most of them to `port`."""
    out = subprocess.run(["tshark", "-n", "-r", pcap, "-d", f"udp.port=={port},rtp",
                          "-Y", f"udp.dstport=={port} && rtp.version==2 && rtp.p_type==111",
                          "-T", "fields", "-e", "frame.time_epoch", "-e", "rtp.seq", "-e", "rtp.timestamp",
                          "-e", "rtp.ssrc"], capture_output=True, text=True, check=True, timeout=120).stdout
    rows = [line.split("\t") for line in out.splitlines() if line.count("\t") == 3]
    if not rows:
        return [], None
    counts = {}
    for r in rows:
        counts[r[3]] = counts.get(r[3], 0) + 1
    ssrc = max(counts, key=counts.get)
    return [(float(t), int(s), int(ts)) for t, s, ts, x in rows if x == ssrc], ssrc


def unwrap(values, modulus):
    """Each value of a wrapping counter, unwrapped to the nearest of the previous one (half-range rule)."""
    out, last = [], None
    for v in values:
        if last is None:
            u = v
        else:
            d = (v - last % modulus) % modulus
            u = last + (d - modulus if d >= modulus // 2 else d)
        out.append(u)
        last = u
    return out


def build_trace(packets):
    """[(seq, send_ms, arrival_ms or None)] from the packets in capture order; duplicates keep the first arrival."""
    seqs = unwrap([s for _, s, _ in packets], 1 << 16)
    stamps = unwrap([ts for _, _, ts in packets], 1 << 32)
    first_seq, first_time = min(seqs), min(t for t, _, _ in packets)
    first_stamp = stamps[seqs.index(first_seq)]
    by_seq = {}
    for (t, _, _), s, ts in zip(packets, seqs, stamps):
        by_seq.setdefault(s - first_seq, ((ts - first_stamp) / 48, (t - first_time) * 1000 + BASE_MS))
    last = max(by_seq)
    rows = []
    for k in range(last + 1):
        if k in by_seq:
            send, arrival = by_seq[k]
            rows.append((k, send, round(arrival, 1)))
        else:
            before = max(j for j in by_seq if j < k)
            after = min(j for j in by_seq if j > k)
            b, a = by_seq[before][0], by_seq[after][0]
            rows.append((k, b + (a - b) * (k - before) / (after - before), None))
    return rows, len(packets) - len(by_seq)


def read_trace(path):
    rows, comments = [], []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("#"):
                comments.append(line)
                continue
            parts = line.split(",")
            if len(parts) != 3 or not parts[0].isdigit():
                continue
            rows.append((int(parts[0]), float(parts[1]), None if parts[2] == "lost" else float(parts[2])))
    return rows, comments


def summarize(rows):
    """The figures of a trace: packets, lost, the longest gap between arrivals, the delay floor per second (the
    least arrival - send of each second of send time), its total step and its rises of more than STEP_MS."""
    arrived = [(s, a) for _, s, a in rows if a is not None]
    arrivals = sorted(a for _, a in arrived)
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    floors = {}
    for s, a in arrived:
        second = int(s // 1000)
        floors[second] = min(floors.get(second, float("inf")), a - s)
    floor = [floors[k] for k in sorted(floors)]
    rises = [b - a for a, b in zip(floor, floor[1:]) if b - a > STEP_MS]
    # Stalls: runs of packets later than their second's floor by more than STALL_MS (sent late, then in a burst).
    stalls, peak, above = 0, 0.0, False
    for s, a in arrived:
        late = a - s - floors[int(s // 1000)]
        if late > STALL_MS and not above:
            stalls += 1
        above = late > STALL_MS
        peak = max(peak, late)
    return {"stalls": stalls, "stall_peak_ms": round(peak, 1),
            "packets": len(rows), "lost": len(rows) - len(arrived), "seconds": round(rows[-1][1] / 1000, 1),
            "max_gap_ms": round(max(gaps), 1) if gaps else 0.0,
            "floor_step_ms": round(floor[-1] - floor[0], 1) if floor else 0.0,
            "steps": len(rises), "step_sizes_ms": [round(r) for r in rises]}


def summary_line(name, rows):
    s = summarize(rows)
    return (f"{name}: {s['packets']} packets over {s['seconds']} s, {s['lost']} lost; longest gap between arrivals "
            f"{s['max_gap_ms']} ms; delay floor step {s['floor_step_ms']} ms in {s['steps']} steps > {STEP_MS:g} ms "
            f"{s['step_sizes_ms']}; {s['stalls']} stalls > {STALL_MS:g} ms above the floor, the longest "
            f"{s['stall_peak_ms']} ms")


def write_trace(path, rows, profile, description):
    received = sum(1 for r in rows if r[2] is not None)
    with open(path, "w") as f:
        f.write(f"# jb-trace v1 profile={profile} packets={len(rows)} received={received} frame_ms={FRAME_MS}\n")
        f.write(f"# {description}\n")
        f.write("seq,send_ms,arrival_ms\n")
        for seq, send, arrival in rows:
            f.write(f"{seq},{send:.1f},{'lost' if arrival is None else f'{arrival:.1f}'}\n")


def capture(args, work, procs):
    binary = os.path.abspath(args.bin)
    load_before = os.getloadavg()
    speech = make_speech(work)
    relay_log = os.path.join(work, "relay.log")
    with open(relay_log, "w") as log:
        procs.start([os.path.join(binary, "parley-relay"), "--udp", "127.0.0.1:0", "--http", "127.0.0.1:0",
                     "--workers", "1", "--log-level", "info"], stdout=log, stderr=subprocess.STDOUT,
                    env=dict(os.environ, PARLEY_STATE_DIR=os.path.join(work, "state"),
                             PARLEY_WEB_ROOT=os.path.join(ROOT, "Samples", "web")))
    ready = wait_for(relay_log, r"ready on udp 127\.0\.0\.1:(\d+).*http 127\.0\.0\.1:(\d+)", 10)
    if not ready:
        sys.exit(f"the relay did not start:\n{open(relay_log).read()}")
    udp, http = int(ready.group(1)), int(ready.group(2))
    room = f"trace-{random.randint(0, 1 << 30)}"

    pcap, dump_log = os.path.join(work, "relay-port.pcap"), os.path.join(work, "tcpdump.log")
    with open(dump_log, "w") as log:
        # Only what reaches the relay's one port. --immediate-mode: each packet handed over as it comes (without it,
        # the kernel's last unfinished block of packets, up to 0.4 s of the end here, is lost when tcpdump stops);
        # -U: each written at once.
        dump = procs.start(["tcpdump", "-i", "lo", "-n", "--immediate-mode", "-U", "-w", pcap,
                            f"udp and dst port {udp}"],
                           stop_signal=signal.SIGINT, stdout=log, stderr=subprocess.STDOUT)
    if not wait_for(dump_log, r"listening on", 10):
        sys.exit(f"tcpdump did not start:\n{open(dump_log).read()}")

    recording = os.path.join(work, "heard.wav")
    recorder_log = os.path.join(work, "recorder.log")
    with open(recorder_log, "w") as log:
        recorder = procs.start([os.path.join(binary, "parley"), "join", room, "--identity", "rec", "--server",
                                f"127.0.0.1:{udp}", "--listen-only", "--mode", "forward", "--output", recording,
                                "--no-tui", "--duration", str(args.seconds + 20), "--verbose"],
                               stop_signal=signal.SIGINT, stdout=log, stderr=subprocess.STDOUT)
    if not wait_for(recorder_log, f"joined {room}", 10):
        sys.exit(f"the recorder did not join:\n{open(recorder_log).read()}")
    token = subprocess.run([os.path.join(binary, "parley"), "token", "--identity", "web", "--room", room],
                           capture_output=True, text=True, check=True, timeout=10).stdout.strip()

    browser_log = os.path.join(work, "chromium.log")
    with open(browser_log, "w") as log:
        # &report=SECONDS: the page publishes that long, logs "PARLEY RESULT {...}", leaves and closes itself.
        browser = procs.start(["chromium", "--headless=new", "--no-sandbox", "--use-fake-ui-for-media-stream",
                               "--use-fake-device-for-media-stream", f"--use-file-for-fake-audio-capture={speech}",
                               "--allow-loopback-in-peer-connection", "--autoplay-policy=no-user-gesture-required",
                               "--no-first-run", f"--user-data-dir={os.path.join(work, 'chromium')}",
                               "--enable-logging=stderr", "--v=0",
                               f"http://127.0.0.1:{http}/?room={room}&token={token}&join=1&raw=1"
                               f"&report={args.seconds}"], stdout=log, stderr=subprocess.STDOUT)
    result = wait_for(browser_log, r"PARLEY RESULT (\{.*\})", args.seconds + 40)
    load_after = os.getloadavg()
    procs.stop(browser, signal.SIGTERM)
    procs.stop(recorder, signal.SIGINT, grace=10)
    counters = relay_counters(http)
    procs.stop(dump, signal.SIGINT)
    procs.stop_all()
    if not result:
        sys.exit(f"no result from the page:\n{open(browser_log, errors='replace').read()[-3000:]}")
    print(f"page: {result.group(1)[:400]}")
    heard = [line for line in open(recorder_log, errors="replace") if "received ssrc" in line]
    print(f"recorder: {heard[-1].strip() if heard else open(recorder_log).read()[-500:]}")
    print(f"relay: {counters}")

    packets, ssrc = rtp_packets(pcap, udp)
    if len(packets) < 50:
        sys.exit(f"only {len(packets)} RTP packets captured to port {udp}")
    rows, duplicates = build_trace(packets)
    version = subprocess.run(["chromium", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    load = f"load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after on {os.cpu_count()} cores"
    description = (f"{version} headless on loopback, fake microphone espeak-ng speech (raw=1), publishing into a "
                   f"forward room of a Parley release relay (1 worker) through the sample page with one parley join "
                   f"recording; SSRC {ssrc}; tcpdump -i lo on the relay's port, tshark as RTP (PT 111); arrival = "
                   f"capture time; {duplicates} duplicates dropped; {load}; "
                   f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(packets[0][0]))}; "
                   f"Benchmarks/scripts/webrtc/capture-browser-trace.py --seconds {args.seconds}")
    write_trace(args.out, rows, args.profile, description)
    print(summary_line(args.out, rows))
    print(load)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=60, help="how long the browser publishes (default 60)")
    parser.add_argument("--out", default="browser-chromium.csv", help="the trace to write")
    parser.add_argument("--profile", default=None, help="the trace's profile= name (default: the file's name)")
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"),
                        help="where parley-relay and parley are (default .build/release)")
    parser.add_argument("--keep", default=None, help="copy the capture, logs and recording to this directory")
    parser.add_argument("--summary", nargs="+", metavar="FILE", help="print the figures of these traces and exit")
    args = parser.parse_args()
    if args.summary:
        for path in args.summary:
            print(summary_line(os.path.basename(path), read_trace(path)[0]))
        return
    if args.profile is None:
        args.profile = os.path.splitext(os.path.basename(args.out))[0]
    for tool in ["chromium", "tcpdump", "tshark", "espeak-ng", "ffmpeg"]:
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing (make test installs it)")
    # A signal ends the capture through `finally`, so whatever was started is stopped.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda number, _: sys.exit(f"stopped by signal {number}"))
    work = tempfile.mkdtemp(prefix="parley-trace-")
    procs = Processes()
    try:
        capture(args, work, procs)
    finally:
        procs.stop_all()
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for path in glob.glob(os.path.join(work, "*.*")):
                shutil.copy(path, args.keep)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
