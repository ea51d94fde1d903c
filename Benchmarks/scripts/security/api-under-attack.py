#!/usr/bin/env python3
"""The HTTP API under the attacks of its security review, against a real relay (release build, 2 workers):

1. idle: the relay's resident memory (VmRSS) and threads;
2. N idle connections held (N/50 loopback addresses x 50, under the per-address limit; a connection the relay closes
   is reopened every 0.5 s, as an attacker would): peak memory and threads;
3. the attack: those N, plus 1,100 idle connections from one more address and a slowloris (a header byte every 3 s,
   reopened when closed), for SECONDS: /healthz and an authenticated GET /v1/rooms probed every 0.25 s from 127.0.0.1
   (a new connection each, 2 s to answer), answered / sent and latency;
4. N event-stream readers (admin token, 4 KB receive buffers) that read nothing, while 2 x ROOMS events of ~250 bytes
   are published (rooms created and deleted): peak memory, then memory and streams left as the relay drops them
   (event_stream_stall_timeout_s, 20 s by default; sampled for 40 s);
5. issue 33's event-stream flood: one member token opens 64 room event streams from each of 16 addresses (all of
   http_max_connections) and holds them for SECONDS, then leaves: an admin GET /v1/rooms every 0.25 s (2 s to answer)
   during it and for 25 s after, answered / sent and latency, and how long the relay keeps the streams after;
6. issue 33's upload flood: one member token posts 10 distinct 8 MiB PNGs back to back: the answers, the bytes kept,
   the time taken.

--base DIR runs the same on another build first (the commit before the fix, say) for a baseline from the same run.
usage: python3 Benchmarks/scripts/security/api-under-attack.py [--bin .build/release] [--base DIR] [--idle 300] [--seconds 20] [--rooms 1000]
                                             [--only-issue33]
"""
import argparse
import http.client
import os
import re
import socket
import struct
import subprocess
import tempfile
import threading
import time
import zlib


def status(pid):
    text = open(f"/proc/{pid}/status").read()
    rss = int(re.search(r"VmRSS:\s+(\d+)", text).group(1))
    threads = int(re.search(r"Threads:\s+(\d+)", text).group(1))
    return rss, threads


def connect(port, source, timeout=2.0, held=False):
    """A connection from `source`; a `held` one is left non-blocking, so `closed` never waits on it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    if held:
        s.setblocking(False)
    return s


def closed(s):
    try:
        return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


class Holder(threading.Thread):
    """Keeps `count` idle connections open from 127.0.<k>.<n> addresses, 50 each, reopening the closed ones."""

    def __init__(self, port, count, first_address):
        super().__init__(daemon=True)
        self.port, self.count, self.first = port, count, first_address
        self.socks = [None] * count
        self.reopened = 0
        self.open = 0  # open after the last pass
        self.stop = threading.Event()

    def address(self, i):
        k = self.first + i // 50
        return f"127.0.{k // 250}.{k % 250 + 2}"

    def run(self):
        while not self.stop.is_set():
            for i in range(self.count):
                s = self.socks[i]
                if s is None or closed(s):
                    if s is not None:
                        s.close()
                        self.reopened += 1
                    try:
                        self.socks[i] = connect(self.port, self.address(i), held=True)
                    except OSError:
                        self.socks[i] = None
            self.open = sum(1 for s in self.socks if s is not None)
            self.stop.wait(0.5)
        for s in self.socks:
            if s is not None:
                s.close()


class Slowloris(threading.Thread):
    """Sends a request's headers a byte every 3 s from 127.0.0.3; reopens when the relay closes it."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.closed_by_relay = 0
        self.stop = threading.Event()

    def run(self):
        s = None
        while not self.stop.is_set():
            try:
                if s is None:
                    s = connect(self.port, "127.0.0.3", held=True)
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Slow: ")
                s.sendall(b"x")
                if closed(s):
                    raise OSError("closed")
            except OSError:
                if s is not None:
                    s.close()
                s = None
                self.closed_by_relay += 1
            self.stop.wait(3)
        if s is not None:
            s.close()


def probe(port, path, token=None):
    """(status, seconds) of one request on a new connection; status 0 when none came within 2 s."""
    start = time.monotonic()
    try:
        s = connect(port, "127.0.0.1")
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n{auth}\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        code = int(data.split(b" ")[1]) if data.startswith(b"HTTP/") else 0
    except (OSError, ValueError, IndexError):
        code = 0
    return code, time.monotonic() - start


def metric(port, name):
    """A sample of the relay's /metrics (loopback needs no token), or None."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
    except OSError:
        return None
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def stalled_readers(port, token, pid, count, rooms, rss0):
    readers = []
    for i in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind((f"127.0.1.{i // 50 + 2}", 0))
        s.connect(("127.0.0.1", port))
        s.sendall(f"GET /v1/events HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
        readers.append(s)
    time.sleep(1)
    api = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    headers = {"Authorization": f"Bearer {token}"}
    peak = rss0
    start = time.monotonic()
    for k in range(rooms):
        name = f"stall-{k}-" + "x" * 110
        api.request("POST", "/v1/rooms", body=f'{{"name":"{name}"}}', headers=headers)
        api.getresponse().read()
        api.request("DELETE", f"/v1/rooms/{name}", headers=headers)
        api.getresponse().read()
        if k % 50 == 0:
            peak = max(peak, status(pid)[0])
    published = time.monotonic() - start
    api.close()
    left, after, dropped_at = [], [], None
    for second in range(40):
        time.sleep(1)
        rss, threads = status(pid)
        peak = max(peak, rss)
        streams = metric(port, "parley_http_event_streams")
        left.append(streams)
        after.append(rss)
        if streams == 0 and dropped_at is None:
            dropped_at = second + 1
    dropped = metric(port, "parley_http_event_streams_dropped_total")
    for s in readers:
        s.close()
    print(f"  {count} event-stream readers reading nothing, {2 * rooms} events published in {published:.1f} s: RSS peak "
          f"{peak / 1024:.1f} MB (+{(peak - rss0) / 1024:.1f} MB, {(peak - rss0) / count:.0f} KB per reader); 40 s later "
          f"{after[-1] / 1024:.1f} MB, {threads} threads; "
          + (f"streams open {left[0]:.0f} → 0 after {dropped_at} s, {dropped:.0f} counted as dropped" if dropped_at
             else f"streams open at the end: {left[-1]}"))


def ended(s):
    """Whether the relay ended the connection: what it sent read out, then the end of the stream (never waits)."""
    try:
        while True:
            if s.recv(65536, socket.MSG_DONTWAIT) == b"":
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def stream_flood(port, admin, member, seconds):
    """Issue 33, finding 3: a member token's event streams, 64 from each of 16 addresses; the backend's probes."""
    flood = []
    for a in range(16):
        for _ in range(64):
            try:
                s = connect(port, f"127.0.2.{a + 2}", held=True)
                s.sendall(f"GET /v1/rooms/lobby/events HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer {member}\r\n\r\n".encode())
                flood.append(s)
            except OSError:
                break
    during, after = [], []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        during.append(probe(port, "/v1/rooms", admin))
        time.sleep(0.25)
    held = metric(port, "parley_http_event_streams")
    refused = metric(port, "parley_http_event_streams_refused_total")
    open_socks = sum(1 for s in flood if not ended(s))
    for s in flood:
        s.close()
    left = time.monotonic()
    gone_after = None
    while time.monotonic() - left < 25:
        after.append(probe(port, "/v1/rooms", admin))
        if gone_after is None and metric(port, "parley_http_event_streams") == 0:
            gone_after = time.monotonic() - left
        time.sleep(0.25)

    def line_for(name, results):
        ok = [t for code, t in results if code == 200]
        return (f"    {name}: {len(ok)}/{len(results)} answered 200 within 2 s; latency p50 {quantile(ok, 0.5) * 1000:.1f} ms, "
                f"max {max(ok, default=float('nan')) * 1000:.1f} ms")

    print(f"  event-stream flood, one member token, {len(flood)} streams asked from 16 addresses for {seconds} s: "
          f"{held} held by the relay (refused: {refused}), {open_socks} connections still open at the end")
    print(line_for("GET /v1/rooms during", during))
    print(line_for("GET /v1/rooms in the 25 s after", after))
    print(f"    the attacker's streams gone from the relay {gone_after:.2f} s after it left" if gone_after is not None
          else "    the attacker's streams still open 25 s after it left")


def png(size, fill):
    """A 1×1 grey PNG of `size` bytes: an ancillary chunk of `fill` bytes before IEND, every CRC right."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    head = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)) \
        + chunk(b"IDAT", zlib.compress(b"\x00\x00"))
    end = chunk(b"IEND", b"")
    return head + chunk(b"prVt", bytes([fill]) * (size - len(head) - len(end) - 12)) + end


def upload_flood(port, member, state):
    """Issue 33, finding 6: one member token posts distinct 8 MiB images back to back."""
    codes, kept = [], 0
    images = []
    for k in range(10):
        path = os.path.join(state, f"flood-{k}.png")
        with open(path, "wb") as f:
            f.write(png(8 * 1024 * 1024 - 4096, k))
        images.append(path)
    start = time.monotonic()
    for path in images:
        # curl: a refusal on the headers (429, 507) is answered while the body is still going out.
        out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", "-H", f"Authorization: Bearer {member}",
                              "-H", "Content-Type: image/png", "--data-binary", "@" + path, f"http://127.0.0.1:{port}/v1/attachments"],
                             capture_output=True, text=True).stdout
        code = int(out or 0)
        codes.append(code)
        if code == 201:
            kept += os.path.getsize(path)
    took = time.monotonic() - start
    for path in images:
        os.remove(path)
    blobs = os.path.join(state, "attachments", "blobs")
    on_disk = sum(os.path.getsize(os.path.join(blobs, f)) for f in os.listdir(blobs)) if os.path.isdir(blobs) else 0
    print(f"  upload flood, one member token, 10 distinct 8 MiB PNGs back to back in {took:.2f} s: answers {codes}; "
          f"{kept / 1048576:.1f} MiB kept ({on_disk / 1048576:.1f} MiB of blobs on disk)")


def quantile(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(len(v) * q))]


def run(bin_dir, idle, seconds, events_rooms, label, only_issue33=False):
    state = tempfile.mkdtemp(prefix="parley-attack-")
    relay = subprocess.Popen([f"{bin_dir}/parley-relay", "--udp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "2",
                              "--log-level", "error"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env={**os.environ, "PARLEY_STATE_DIR": state})
    try:
        line = relay.stdout.readline()
        port = int(re.search(r"http 127\.0\.0\.1:(\d+)", line).group(1))
        # Minted by this build's client (the baseline's directory may hold only the relay); both take the dev key.
        token = subprocess.run([f"{args.bin}/parley", "token", "--admin", "--identity", "bench"], capture_output=True,
                               text=True).stdout.strip()
        time.sleep(1)
        member = subprocess.run([f"{args.bin}/parley", "token", "--identity", "eve", "--room", "lobby"], capture_output=True,
                                text=True).stdout.strip()
        rss0, threads0 = status(relay.pid)
        print(f"{label}: {bin_dir}")
        print(f"  idle: RSS {rss0 / 1024:.1f} MB, {threads0} threads")
        if only_issue33:
            stream_flood(port, token, member, seconds)
            upload_flood(port, member, state)
            return

        holder = Holder(port, idle, first_address=10)
        holder.start()
        peak, peak_threads, held = rss0, threads0, 0
        for _ in range(12):
            time.sleep(0.5)
            rss, threads = status(relay.pid)
            peak, peak_threads = max(peak, rss), max(peak_threads, threads)
            held = max(held, holder.open)
        print(f"  {idle} idle connections from {(idle + 49) // 50} addresses, 6 s: RSS peak {peak / 1024:.1f} MB "
              f"(+{(peak - rss0) / 1024:.1f} MB, {(peak - rss0) / max(1, held):.1f} KB per connection held), threads peak "
              f"{peak_threads}; at most {held} open at once, {holder.reopened} reopened after the relay closed them")

        flood = []
        for _ in range(1100):
            try:
                flood.append(connect(port, "127.0.0.2", held=True))
            except OSError:
                break
        slow = Slowloris(port)
        slow.start()
        health, rooms = [], []
        deadline = time.monotonic() + seconds
        attack_peak, attack_threads = rss0, threads0
        while time.monotonic() < deadline:
            health.append(probe(port, "/healthz"))
            rooms.append(probe(port, "/v1/rooms", token))
            rss, threads = status(relay.pid)
            attack_peak, attack_threads = max(attack_peak, rss), max(attack_threads, threads)
            time.sleep(0.25)
        flood_open = sum(1 for s in flood if not closed(s))
        slow.stop.set()
        holder.stop.set()
        for s in flood:
            s.close()

        def line_for(name, results):
            ok = [t for code, t in results if code == 200]
            return (f"  {name}: {len(ok)}/{len(results)} answered 200 within 2 s; latency p50 {quantile(ok, 0.5) * 1000:.1f} ms, "
                    f"p99 {quantile(ok, 0.99) * 1000:.1f} ms, max {max(ok, default=float('nan')) * 1000:.1f} ms")

        print(f"  attack, {seconds} s ({idle} idle + {len(flood)} from one address + slowloris at a byte / 3 s): RSS peak "
              f"{attack_peak / 1024:.1f} MB, threads peak {attack_threads}; of the one address's connections {flood_open} "
              f"still open at the end; the slowloris was closed {slow.closed_by_relay} times")
        print(line_for("GET /healthz", health))
        print(line_for("GET /v1/rooms (admin token)", rooms))
        time.sleep(1)
        stalled_readers(port, token, relay.pid, idle, events_rooms, status(relay.pid)[0])
        stream_flood(port, token, member, seconds)
        upload_flood(port, member, state)
    finally:
        relay.terminate()
        relay.wait(10)
        subprocess.run(["rm", "-rf", state])


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=".build/release")
    p.add_argument("--base", help="another build's directory, run first as a baseline")
    p.add_argument("--idle", type=int, default=300)
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--rooms", type=int, default=1000, help="rooms created and deleted to publish events to stalled readers")
    p.add_argument("--only-issue33", action="store_true", help="only the event-stream and upload floods (parts 5 and 6)")
    args = p.parse_args()
    if args.base:
        run(args.base, args.idle, args.seconds, args.rooms, "baseline", args.only_issue33)
    run(args.bin, args.idle, args.seconds, args.rooms, "this build", args.only_issue33)
