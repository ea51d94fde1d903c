#!/usr/bin/env python3
"""The best any fixed-delay jitter buffer can do on a jb-trace: for each playout delay D above the trace's fastest
packet, the jitter-induced concealment (JICO) an oracle playing every frame at exactly that delay would have, counting
a late frame as rebuilt from the next packet's in-band FEC when that packet is in time (as jitter-bench does for
Parley). Compare jitter-bench's rows with it: a buffer can only be above this curve.

  python3 Benchmarks/scripts/quality/trace-frontier.py ../shared/traces/trace_mild.csv [--jico 1.57]

--jico P also prints the smallest end-to-end delay at which the oracle's JICO is at most P percent.
"""
import argparse


def load(path):
    delays = []
    for line in open(path):
        if line.startswith("#") or line.startswith("seq"):
            continue
        _, sent, arrived = line.strip().split(",")
        try:
            delays.append(float(arrived) - float(sent))
        except ValueError:
            delays.append(None)  # lost on the network: not jitter-induced
    return delays


def jico(relative, d, frame=20.0):
    late = received = 0
    for i, r in enumerate(relative):
        if r is None:
            continue
        received += 1
        if r > d:
            following = relative[i + 1] if i + 1 < len(relative) else None
            if following is None or following + frame > d:
                late += 1
    return late / received


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--jico", type=float, help="percent: the least delay reaching it")
    a = ap.parse_args()
    delays = load(a.trace)
    fastest = min(x for x in delays if x is not None)
    relative = [None if x is None else x - fastest for x in delays]
    for d in [10, 14, 16, 18, 20, 21, 22, 23, 25, 30, 35, 40]:
        print(f"delay {fastest + d:6.1f} ms end to end ({d:4.1f} above the fastest): JICO {jico(relative, d) * 100:5.2f} %")
    if a.jico is not None:
        d = 0.0
        while jico(relative, d) * 100 > a.jico:
            d += 0.1
        print(f"least delay with JICO ≤ {a.jico} %: {fastest + d:.1f} ms end to end")


if __name__ == "__main__":
    main()
