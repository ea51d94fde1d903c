#!/usr/bin/env python3
"""Parley playout bench: PESQ-WB of speech sent through network traces by the client's real send and receive paths
(jitter-bench --speech: Opus with FEC and DTX, jitter buffer, PLC, time-stretching) on a virtual clock.
Deterministic (same trace, same score) and quick, so receive-side changes can be compared; no NACK, no relay.

  python3 Benchmarks/scripts/quality/playout.py [--trace FILE ...] [--bitrate BPS] [--expected-loss PERCENT] [--json]

Defaults to the shared traces in ../shared/traces (mild, moderate, harsh) plus a clean path. Needs `make release`,
espeak-ng, and PyPI's pesq, numpy, scipy.
"""
import argparse, glob, json, os, subprocess, sys, tempfile
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import BIN, ROOT, ffmpeg_baseline, make_speech, read_wav, score, talkspurt_offsets


def clean_trace(path, packets=3000):
    with open(path, "w") as f:
        f.write("# jb-trace v1 profile=clean\nseq,send_ms,arrival_ms\n")
        for i in range(packets):
            f.write(f"{i},{i * 20}.0,{i * 20 + 1}.0\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", action="append", help="jb-trace v1 CSV (repeatable)")
    ap.add_argument("--bitrate", default="56000", help="the client default")
    ap.add_argument("--expected-loss", default="0", help="the encoder's in-band FEC setting, percent")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    bench = os.path.join(BIN, "jitter-bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"playout.py: {bench} missing: run `make release` first")
    with tempfile.TemporaryDirectory() as d:
        ref = os.path.join(d, "speech.wav")
        make_speech(ref)
        traces = args.trace
        if not traces:
            clean = os.path.join(d, "clean.csv")
            clean_trace(clean)
            shared = sorted(glob.glob(os.path.join(ROOT, "..", "shared", "traces", "trace_*.csv")))
            traces = [clean] + shared
        print(f"ffmpeg libopus {args.bitrate} on the same speech: PESQ-WB {ffmpeg_baseline(ref, d, str(int(args.bitrate) // 1000) + 'k')}")
        for t in traces:
            out = os.path.join(d, "out.wav")
            run = subprocess.run([bench, "--trace", t, "--speech", ref, "--out", out, "--bitrate", args.bitrate,
                                  "--expected-loss", args.expected_loss], capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"playout.py: jitter-bench failed on {t}: {run.stderr.strip()}")
            stats = json.loads(run.stdout.strip().splitlines()[-1])
            rec, rate = read_wav(out)
            value, lag, gap = score(ref, rec, rate)
            spurts = talkspurt_offsets(ref, rec, rate, lag)
            stats.update({"pesq_wb": value, "alignment_ms": lag, "longest_gap_ms": gap, "talkspurt_offsets_ms": spurts})
            if args.json:
                print(json.dumps(stats))
            else:
                print(f"{os.path.basename(t):22} PESQ-WB {value:5.3f}  delay {lag:6.1f} ms  longest gap {gap:3d} ms  "
                      f"(concealed {stats['concealed']}, FEC {stats['fec']}, late {stats['late']}, "
                      f"accelerated {stats['accelerated']}, expanded {stats['expanded']})")
                print(f"{'':22} talkspurts against the whole: {', '.join(f'{o:+.1f}' for o in spurts)} ms")


if __name__ == "__main__":
    main()
