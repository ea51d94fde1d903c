#!/usr/bin/env python3
"""PESQ-WB (ITU-T P.862.2, PyPI's pesq) of a recording against its reference, for Parley's interop tests.

    pesq_wb.py REFERENCE.wav RECORDING.wav [--skip SECONDS] [--nb]  →  {"pesq_wb": 4.1, "lag_ms": 812.5}

--nb scores narrowband instead (P.862.1 at 8 kHz, the telephone band: {"pesq_nb": …}).

Both are resampled to 16 kHz (8 kHz with --nb); the recording (without its first --skip seconds: a joining client's start-up, when the
reference loops) is aligned to the reference by cross-correlation (its lag printed, from the recording's start), then
the reference's length of it is scored. Mono 16-bit WAVs at any rate (a stereo recording's first channel is used).
"""
import json
import sys
import wave

import numpy as np
from pesq import pesq
from scipy.signal import resample_poly


def read(path):
    with wave.open(path) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).reshape(-1, w.getnchannels())[:, 0]
        return x.astype(np.float64), w.getframerate()


def main():
    ref, ref_rate = read(sys.argv[1])
    rec, rec_rate = read(sys.argv[2])
    skip = float(sys.argv[sys.argv.index("--skip") + 1]) if "--skip" in sys.argv else 0.0
    rate, mode = (8000, "nb") if "--nb" in sys.argv else (16000, "wb")
    ref16, rec16 = resample_poly(ref, rate, ref_rate), resample_poly(rec, rate, rec_rate)
    rec16 = rec16[int(skip * rate):]
    n = len(rec16) + len(ref16)
    corr = np.fft.irfft(np.fft.rfft(rec16, n) * np.conj(np.fft.rfft(ref16, n)), n)
    lag = int(np.argmax(corr[: max(1, len(rec16) - len(ref16))]))
    deg = rec16[lag: lag + len(ref16)]
    if len(deg) < len(ref16):
        deg = np.concatenate([deg, np.zeros(len(ref16) - len(deg))])
    value = pesq(rate, ref16.astype(np.float32) / 32768, deg.astype(np.float32) / 32768, mode)
    print(json.dumps({"pesq_" + mode: round(float(value), 3), "lag_ms": round(lag * 1000 / rate + skip * 1000, 1)}))


if __name__ == "__main__":
    main()
