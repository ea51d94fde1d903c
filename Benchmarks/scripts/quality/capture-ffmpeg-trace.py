#!/usr/bin/env python3
"""Captures what an ffmpeg sender's pacing looks like to a receiver, as a jb-trace (issue 37).

    python3 Benchmarks/scripts/quality/capture-ffmpeg-trace.py SPEECH.wav READRATE OUT.csv [--port 5004]

ffmpeg reads SPEECH.wav at READRATE × real time (`-readrate`: 0.995 is a sender whose clock runs 0.5 % slow against
ours, 1.005 one 0.5 % fast), encodes it with libopus at 64 kb/s (no DTX) and sends plain RTP to a UDP socket on
loopback here, which notes each packet's arrival on the monotonic clock. Written as `jb-trace v1`: `seq` and
`send_ms` (RTP time) from the first packet, `arrival_ms` from the first arrival + 1.0 ms. ffmpeg sends its frames two
or three at a time about every 40 ms, so the traces carry that burstiness as well as the drift.
"""
import socket, struct, subprocess, sys, time


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    speech, rate, out = sys.argv[1], sys.argv[2], sys.argv[3]
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 5004
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port))
    s.settimeout(3)
    ffmpeg = subprocess.Popen(["ffmpeg", "-hide_banner", "-loglevel", "error", "-readrate", rate, "-i", speech,
                               "-ac", "1", "-ar", "48000", "-c:a", "libopus", "-b:a", "64k", "-f", "rtp",
                               f"rtp://127.0.0.1:{port}"], stdout=subprocess.DEVNULL)
    rows, first = [], None
    while True:
        try:
            datagram = s.recv(2000)
        except socket.timeout:
            break
        now = time.monotonic()
        seq, ts = struct.unpack("!HI", datagram[2:8])
        if first is None:
            first = (seq, ts, now)
        rows.append(((seq - first[0]) & 0xFFFF, ((ts - first[1]) & 0xFFFFFFFF) / 48, (now - first[2]) * 1000 + 1))
    ffmpeg.wait()
    with open(out, "w") as f:
        f.write(f"# jb-trace v1 profile=ffmpeg-readrate-{rate} packets={len(rows)} received={len(rows)} frame_ms=20\n")
        f.write(f"# ffmpeg -readrate {rate} libopus 64k, plain RTP to loopback, arrival = monotonic clock; "
                f"{time.strftime('%Y-%m-%d %H:%M')}; Benchmarks/scripts/quality/capture-ffmpeg-trace.py\n")
        f.write("seq,send_ms,arrival_ms\n")
        for r in rows:
            f.write(f"{r[0]},{r[1]:.1f},{r[2]:.1f}\n")
    print(f"{out}: {len(rows)} packets, last RTP time {rows[-1][1]:.0f} ms arrived at {rows[-1][2]:.0f} ms")


if __name__ == "__main__":
    main()
