#!/usr/bin/env python3
"""Honest joins while one address floods the relay with handshake initiations (the security review's attack on the
join budget, issue 33 finding 4), against a real relay (release build, one worker):

The flooder asks for a cookie like any client (hello -> cookie), then sends initiations under its own valid cookie
carrying GARBAGE random bytes instead of a Noise message, at RATE a second from one socket, taking each fresh cookie
the relay answers a stale one with. Meanwhile JOINS `parley join`s (one at a time, --duration 1, listen-only, no
audio device) must be welcomed: each one's exit code is counted (0 joined and left; 5 gave up: the relay never
answered; a join that printed no welcome is counted as "never welcomed" whatever its code).

48 bytes is the review's size (too short for any join: refused before the budget is charged); 200 bytes passes that
check, so only the per-source shares of the budget keep it from starving the honest joins.
--base DIR runs the same against another build first (the commit before the fix, say) for a baseline from the same run.
usage: python3 Benchmarks/scripts/security/join-under-flood.py [--bin .build/release] [--base DIR] [--rate 20000] [--garbage 48] [--joins 10]
"""
import argparse
import os
import socket
import subprocess
import threading
import time


def free_port(kind):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Flooder(threading.Thread):
    """Hello, then initiations under its own cookie at `rate` a second until stopped."""

    def __init__(self, port, rate, garbage):
        super().__init__(daemon=True)
        self.port, self.rate, self.garbage = port, rate, garbage
        self.sent = 0
        self.stopping = threading.Event()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)

    def cookie(self, answer):
        # 0x50, version 2, kind 2 (cookie), flags, connection id (4); then the cookie and the relay's key (32).
        if len(answer) > 8 + 32 and answer[0] == 0x50 and answer[1] == 2 and answer[2] == 2:
            return answer[8:-32]
        return None

    def run(self):
        hello = bytes([0x50, 2, 1, 0, 0, 0, 0, 0]) + os.urandom(16)
        hello += bytes(96 - len(hello))
        cookie = None
        deadline = time.time() + 5
        while cookie is None and time.time() < deadline:
            self.sock.sendto(hello, ("127.0.0.1", self.port))
            time.sleep(0.05)
            try:
                cookie = self.cookie(self.sock.recv(2048))
            except BlockingIOError:
                pass
        if cookie is None:
            print("flooder: no cookie from the relay")
            return
        batch = max(1, self.rate // 10000)  # a few every 100 µs: smooth, so each token is taken as it appears
        started = time.time()
        while not self.stopping.is_set():
            header = bytes([0x50, 2, 3, 0, 0, 0, 0, 0, len(cookie)]) + cookie
            for _ in range(batch):
                try:
                    self.sock.sendto(header + os.urandom(self.garbage), ("127.0.0.1", self.port))
                    self.sent += 1
                except (BlockingIOError, OSError):
                    pass
            while True:
                try:
                    fresh = self.cookie(self.sock.recv(2048))
                    if fresh:
                        cookie = fresh
                except (BlockingIOError, OSError):
                    break
            due = started + self.sent / self.rate
            while time.time() < due:  # busy: sleep's granularity would bunch the flood into bursts
                pass


def run(bindir, args, label):
    udp, http = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM)
    env = dict(os.environ, PARLEY_URL=f"http://127.0.0.1:{http}")
    relay = subprocess.Popen([f"{bindir}/parley-relay", "--udp", f"127.0.0.1:{udp}", "--http", f"127.0.0.1:{http}",
                              "--workers", "1", "--state-dir", f"/tmp/join-flood-{os.getpid()}-{label.replace(' ', '-')}"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        line = ""
        for _ in range(20):  # log lines come before the ready line
            line = relay.stdout.readline()
            if not line or "ready" in line:
                break
        if "ready" not in line:
            print(f"{label}: the relay did not start: {line.strip()}")
            return
        threading.Thread(target=lambda: [None for _ in relay.stdout], daemon=True).start()  # keep its pipe drained
        flooder = Flooder(udp, args.rate, args.garbage)
        flooder.start()
        time.sleep(1)
        codes, times = [], []
        for k in range(args.joins):
            started = time.time()
            done = subprocess.run([f"{bindir}/parley", "join", "lobby", "--identity", f"honest-{k}", "--server",
                                   f"127.0.0.1:{udp}", "--duration", "1", "--listen-only", "--no-playback", "--no-tui"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=60)
            # Counted by what it printed: a build before the fix for it exits 0 after --duration even when never welcomed.
            codes.append(done.returncode if "joined lobby" in done.stdout or done.returncode != 0 else "never welcomed")
            times.append(time.time() - started)
        flooder.stopping.set()
        flooder.join(timeout=5)
        elapsed = max(1e-9, sum(times) + 1)
        joined = codes.count(0)
        print(f"{label}: flood of {args.garbage}-byte initiations at {flooder.sent / elapsed:.0f}/s achieved "
              f"({flooder.sent} sent): {joined} of {args.joins} honest joins welcomed; exit codes {codes}; "
              f"each took {min(times):.1f}-{max(times):.1f} s (1 s in the room)")
    finally:
        relay.terminate()
        try:
            relay.wait(timeout=10)
        except subprocess.TimeoutExpired:
            relay.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=".build/release")
    parser.add_argument("--base", help="another build's binaries, measured first")
    parser.add_argument("--rate", type=int, default=20000, help="initiations a second (default 20,000)")
    parser.add_argument("--garbage", type=int, default=48, help="bytes of garbage in each initiation (default 48)")
    parser.add_argument("--joins", type=int, default=10, help="honest joins, one after another (default 10)")
    args = parser.parse_args()
    if args.base:
        run(args.base, args, "base")
    run(args.bin, args, "this build")


if __name__ == "__main__":
    main()
