#!/usr/bin/env python3
"""Checks impair-proxy's sender model on loopback: RTP packets every 20 ms from a client socket through the proxy
(profile clean, so the proxy's hold is the only delay) to a socket standing for the relay, each packet's hold read as
its arrival minus its send time. About 30 s, nothing left running.

  swift build -c release --product impair-proxy
  python3 Benchmarks/scripts/quality/sender-lag-check.py [--bin .build/release]

Cases: --sender-stalls 1/10/120 (the hold is a staircase: steps of 10–120 ms that add up to what the proxy reports,
the same for the same seed), --sender-drift 0.005 (the hold grows 0.005 ms per ms), --sender-drift -0.005 (it starts
at 1000 ms and shrinks as fast), --sender-stalls 0.2/100/400 (the hold stops at the 2 s cap).
"""
import argparse, os, random, re, socket, struct, subprocess, sys, threading, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TOLERANCE_MS = 3.0  # loopback, the proxy's poll loop and Python's timers on a shared machine


def run(bin_dir, packets, proxy_args, seed=1):
    """Sends `packets` RTP packets through a proxy with `proxy_args`; returns (holds in ms by packet, send times in
    ms from the first, the proxy's summary lines)."""
    port = random.randint(20000, 60000)
    relay = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    relay.bind(("127.0.0.1", port))
    relay.settimeout(0.2)
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client.bind(("127.0.0.1", 0))
    duration = packets * 0.02 + 3
    proxy = subprocess.Popen([os.path.join(bin_dir, "impair-proxy"), "--listen", "127.0.0.2", "--upstream", "127.0.0.1",
                              "--ports", str(port), "--profile", "clean", "--seed", str(seed),
                              "--duration", str(duration)] + proxy_args, stdout=subprocess.PIPE, text=True)
    try:
        ready = proxy.stdout.readline()
        if "ready" not in ready:
            sys.exit(f"impair-proxy did not start: {ready!r}")
        holds = {}

        def receive():
            end = time.monotonic() + duration
            while time.monotonic() < end:
                try:
                    data = relay.recv(2048)
                except socket.timeout:
                    continue
                seq, sent = struct.unpack("!2xH8xd", data[:20])
                holds[seq] = (time.monotonic() - sent) * 1000

        receiver = threading.Thread(target=receive)
        receiver.start()
        start, sends = time.monotonic(), []
        for k in range(packets):
            time.sleep(max(0, start + k * 0.02 - time.monotonic()))
            now = time.monotonic()
            sends.append((now - start) * 1000)
            header = struct.pack("!BBHII", 0x80, 111, k, k * 960, 0x5EED)
            client.sendto(header + struct.pack("!d", now) + bytes(40), ("127.0.0.2", port))
        receiver.join()
        summary = proxy.communicate(timeout=10)[0].splitlines()
    finally:
        if proxy.poll() is None:
            proxy.kill()
            proxy.wait()
        relay.close()
        client.close()
    if len(holds) != packets:
        sys.exit(f"{packets - len(holds)} of {packets} packets did not come through")
    return [holds[k] for k in range(packets)], sends, summary


def floor(holds, window=5):
    """Each hold as the least of it and the next few: a stall stays, a hiccup of this script's threads (which only
    ever makes a packet look later) goes."""
    return [min(holds[k:k + window]) for k in range(len(holds))]


def reported(summary):
    """(stalls, total ms) from the proxy's last lines."""
    m = next(re.search(r"(\d+) sender stalls of ([\d.]+) ms", line) for line in summary if "sender stalls" in line)
    return int(m.group(1)), float(m.group(2))


def slope(xs, ys):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return b, my - b * mx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"), help="where impair-proxy is")
    bin_dir = ap.parse_args().bin
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    holds, _, summary = run(bin_dir, 250, ["--sender-stalls", "1/10/120"])
    holds = floor(holds)
    count, total = reported(summary)
    steps = [(k, b - a) for k, (a, b) in enumerate(zip(holds, holds[1:]), 1) if b - a > 5]
    print(f"stalls 1/10/120, 250 packets: proxy reports {count} stalls, {total:.1f} ms; steps seen at packets "
          + ", ".join(f"{k} (+{d:.1f})" for k, d in steps) + f"; last hold {holds[-1]:.1f} ms")
    check(all(b > a - TOLERANCE_MS for a, b in zip(holds, holds[1:])), "the hold never shrinks")
    check(len(steps) == count and all(10 - TOLERANCE_MS <= d <= 120 + TOLERANCE_MS for _, d in steps),
          "one step of 10–120 ms per reported stall")
    check(abs(holds[-1] - total) < TOLERANCE_MS and abs(sum(d for _, d in steps) - total) < 2 * TOLERANCE_MS,
          "the steps add up to the reported total, and every later packet keeps it")
    again, _, summary2 = run(bin_dir, 250, ["--sender-stalls", "1/10/120"])
    again = floor(again)
    steps2 = [k for k, (a, b) in enumerate(zip(again, again[1:]), 1) if b - a > 5]
    check(reported(summary2) == (count, total) and steps2 == [k for k, _ in steps], "the same seed, the same stalls")

    for drift, start in ((0.005, 0.0), (-0.005, 1000.0)):
        holds, sends, _ = run(bin_dir, 200, ["--sender-drift", str(drift)])
        b, a = slope(sends, holds)
        print(f"drift {drift}, 200 packets: hold {holds[0]:.1f} → {holds[-1]:.1f} ms, fit {a:.1f} + {b:.5f} · t")
        check(abs(b - drift) < 0.0005 and abs(a - start) < TOLERANCE_MS, f"drift {drift}: starts at {start:.0f} ms, "
              f"changes {drift} ms per ms")

    holds, _, summary = run(bin_dir, 150, ["--sender-stalls", "0.2/100/400"])
    holds = floor(holds)
    count, total = reported(summary)
    print(f"stalls 0.2/100/400, 150 packets: proxy reports {count} stalls, {total:.1f} ms; "
          f"last hold {holds[-1]:.1f} ms")
    check(total > 2000 and max(holds) < 2000 + TOLERANCE_MS and abs(holds[-1] - 2000) < TOLERANCE_MS,
          "the hold stops at the 2 s cap")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
