#!/usr/bin/env python3
"""Parley quality bench: mouth-to-ear latency and PESQ-WB through a real relay on loopback.

  python3 Benchmarks/scripts/quality/measure.py [--modes forward,mix,hybrid] [--profile clean|mild|moderate|harsh] [--runs N] [--json]
                                       [--bin DIR] [--uplink-repair on|off] [--min-delay MS] [--tcp]
                                       [--sender-stalls GAP_S/MIN_MS/MAX_MS] [--sender-drift D]

Through the impairment proxy, run k of each mode uses the proxy's seed k: each flow's media then meets the same losses
and delays in that run of every mode (impair-proxy draws each flow's RTP from a stream of its own), and --runs N
reports the median and spread over seeds 1..N per mode.

Needs release builds (`make release`), espeak-ng, and PyPI's `pesq`, `numpy`, `scipy` (`pip install pesq numpy scipy`).

Latency: alice sends a click train (a 2 ms burst every 500 ms over −50 dBFS noise, so the stream never goes DTX);
bob records what he plays. Both clients print the monotonic time of their first sent/played frame
(PARLEY_TIMELINE=1), so a click's mouth time is capture_start − 20 ms + sample/48 kHz (a 20 ms frame holds audio spoken
during the 20 ms before it is read, as from a microphone) and its ear time is playback_start + sample/48 kHz.

PESQ-WB: alice sends espeak-ng speech; bob's recording is resampled to 16 kHz, aligned to the reference by
cross-correlation, and scored with `pesq` (ITU-T P.862.2, wideband). Each talkspurt is also aligned on its own
("talkspurts against the whole": a buffer that starts the first one at another delay than the rest shows it there),
and the listener's own account is printed: its buffers' counters and where they started (`path at join`).

Repair: before the relay stops, its /metrics are read; each line prints the listener's NACKs the relay answered from
its history and those it no longer held, and the speaker's packets lost on the way to the relay (forward rooms), how
many of them the relay recovered by NACKing the speaker, and how many it gave up on (both runs of a mode added up).
"""
import argparse, json, os, random, re, subprocess, sys, tempfile, time, wave
import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BIN = os.path.join(ROOT, ".build", "release")
# The relay's environment beyond ours (`--uplink-repair` sets PARLEY_UPLINK_REPAIR).
RELAY_ENV = {}
# The impairment proxy's seed for the next run (run k of a mode uses seed k: one seed decides each flow's losses and
# delays, so a mode's runs are different networks and each is the same network in every mode).
SEED = 1
# Options both clients get beyond the defaults (`--min-delay MS` adds `--min-delay MS`).
CLIENT_ARGS = []
# impair-proxy's options beyond the profile (`--sender-stalls`, `--sender-drift`: a real sender's capture stalls and
# clock drift on the media each client sends; with them the proxy runs on the clean profile too).
PROXY_ARGS = []
# /metrics counters read before each relay stops, added up per mode.
COUNTERS = {"parley_nacks_answered_total": "nacks_answered", "parley_nacks_missed_total": "nacks_missed",
            "parley_uplink_packets_lost_total": "uplink_lost", "parley_uplink_packets_recovered_total": "uplink_recovered",
            "parley_uplink_repairs_given_up_total": "uplink_given_up", "parley_uplink_nacks_sent_total": "uplink_nacked"}


def read_counters(http_port):
    """The relay's COUNTERS from /metrics (loopback needs no token), or {} when it does not answer."""
    import urllib.request
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=2).read().decode()
    except OSError:
        return {}
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in COUNTERS:
            values[COUNTERS[parts[0]]] = int(float(parts[1]))
    return values


def write_wav(path, samples, rate=48000):
    with wave.open(path, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(rate)
        w.writeframes(np.clip(samples, -32768, 32767).astype("<i2").tobytes())


def read_wav(path):
    with wave.open(path, "rb") as w:
        rate = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)
        if w.getnchannels() > 1:
            x = x.reshape(-1, w.getnchannels()).mean(axis=1)
    return x, rate


PROFILE = "clean"


def run_pair(mode, alice_input, seconds, workdir, extra=()):
    """Relay + bob (records) + alice (sends alice_input), through the impairment proxy unless the profile is clean;
    returns (bob's recording, alice capture start, bob playback start, the relay's COUNTERS)."""
    port = random.randint(20000, 40000)
    http_port = port + 2  # the two workers take port and port + 1
    relay = subprocess.Popen([os.path.join(BIN, "parley-relay"), "--udp", f"127.0.0.1:{port}", "--http", f"127.0.0.1:{http_port}",
                              "--workers", "2", "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(os.environ, **RELAY_ENV))
    proxy = None
    server = f"127.0.0.1:{port}"
    if PROFILE != "clean" or PROXY_ARGS:
        proxy = subprocess.Popen([os.path.join(BIN, "impair-proxy"), "--listen", "127.0.0.2", "--upstream", "127.0.0.1",
                                  "--ports", f"{port},{port + 1}", "--profile", PROFILE, "--seed", str(SEED)]
                                 + PROXY_ARGS,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server = f"127.0.0.2:{port}"
    try:
        time.sleep(0.5)
        env = dict(os.environ, PARLEY_TIMELINE="1")
        out = os.path.join(workdir, f"bob-{mode}.wav")
        bob_log = open(os.path.join(workdir, f"bob-{mode}.log"), "w")  # bob's receive statistics
        room = f"q{random.randint(0, 1 << 30)}"
        common = ["--server", server, "--mode", mode, "--no-tui"] + CLIENT_ARGS
        bob = subprocess.Popen([os.path.join(BIN, "parley"), "join", room, "--identity", "bob", "--listen-only", "--output", out,
                                "--duration", str(seconds), "--verbose"] + common, env=env, stdout=bob_log, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        alice = subprocess.run([os.path.join(BIN, "parley"), "join", room, "--identity", "alice", "--input", alice_input,
                                "--no-playback"] + list(extra) + common, env=env, capture_output=True, text=True, timeout=seconds + 10)
        _, bob_err = bob.communicate(timeout=seconds + 10)
        cap = int(re.search(r"timeline capture_start_ns (\d+)", alice.stderr).group(1))
        play = int(re.search(r"timeline playback_start_ns (\d+)", bob_err).group(1))
        recording, rate = read_wav(out)
        assert rate == 48000
        time.sleep(0.3)  # /metrics lags the workers by up to 200 ms
        return recording, cap, play, read_counters(http_port)
    finally:
        relay.terminate(); relay.wait()
        if proxy:
            proxy.terminate(); proxy.wait()


def click_onsets(x, threshold):
    """Sample indices where |x| first exceeds threshold, at least 250 ms apart."""
    above = np.flatnonzero(np.abs(x) > threshold)
    onsets, last = [], -10**9
    for i in above:
        if i - last > 12000:
            onsets.append(int(i))
        last = i if i - last > 12000 else last
    return onsets


def latency(mode, workdir):
    rng = np.random.default_rng(1)
    seconds = 10
    x = rng.normal(0, 32768 * 10 ** (-50 / 20), 48000 * seconds)
    clicks = list(range(24000, 48000 * seconds - 24000, 24000))
    for c in clicks:
        x[c:c + 96] += 20000 * np.hanning(96) * np.sin(np.arange(96) * 2 * np.pi * 2000 / 48000)
    path = os.path.join(workdir, "clicks.wav")
    write_wav(path, x)
    rec, cap, play, counters = run_pair(mode, path, seconds + 2, workdir, extra=["--no-dtx"])
    outs = click_onsets(rec, 3000)
    ins = click_onsets(x, 3000)
    if os.environ.get("MEASURE_DEBUG"):
        print("onsets in", ins[:5], "out", outs[:8], "cap", cap, "play", play, file=sys.stderr)
    lat = []
    for i in ins:
        mouth = cap - 20_000_000 + i * 1e9 / 48000
        # the output click closest after the mouth time
        cands = [(play + o * 1e9 / 48000 - mouth) for o in outs]
        cands = [c for c in cands if 0 < c < 400e6]
        if cands:
            lat.append(min(cands) / 1e6)
    lat = np.array(lat)
    return {"mode": mode, "clicks_sent": len(ins), "clicks_heard": int(len(lat)), "counters": counters,
            "mouth_to_ear_ms_median": round(float(np.median(lat)), 1) if len(lat) else None,
            "mouth_to_ear_ms_p95": round(float(np.percentile(lat, 95)), 1) if len(lat) else None,
            "mouth_to_ear_ms_min": round(float(lat.min()), 1) if len(lat) else None}


SPEECH_TEXT = ("The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background. "
               "It is easy to tell the depth of a well. These days a chicken leg is a rare dish. "
               "Rice is often served in round bowls. The juice of lemons makes fine punch.")


def make_speech(path):
    """The test speech (espeak-ng, Harvard sentences) as a WAV at espeak's rate."""
    subprocess.run(["espeak-ng", "-s", "150", "-w", path, SPEECH_TEXT], check=True)


def score(ref_path, rec, rec_rate=48000):
    """PESQ-WB of a recording against the reference WAV, after aligning by cross-correlation; also the alignment and
    the longest interruption (run of 10 ms frames silent in the recording where the reference is loud)."""
    from pesq import pesq
    from scipy.signal import resample_poly
    ref, rate = read_wav(ref_path)
    ref16 = resample_poly(ref, 16000, rate)
    rec16 = resample_poly(rec, 16000, rec_rate)
    n = len(rec16) + len(ref16)
    corr = np.fft.irfft(np.fft.rfft(rec16, n) * np.conj(np.fft.rfft(ref16, n)), n)
    lag = int(np.argmax(corr[: len(rec16)]))
    deg = rec16[lag: lag + len(ref16)]
    if len(deg) < len(ref16):
        deg = np.concatenate([deg, np.zeros(len(ref16) - len(deg))])
    value = pesq(16000, ref16.astype(np.float32) / 32768, deg.astype(np.float32) / 32768, "wb")
    fr = 160
    e_ref = np.sqrt(np.mean(ref16[: len(ref16) // fr * fr].reshape(-1, fr) ** 2, axis=1))
    e_deg = np.sqrt(np.mean(deg[: len(deg) // fr * fr].reshape(-1, fr) ** 2, axis=1))
    run = longest = 0
    for a, b in zip(e_ref, e_deg):
        run = run + 1 if (a > 1000 and b < 100) else 0
        longest = max(longest, run)
    return round(float(value), 3), round(lag / 16, 1), longest * 10


def talkspurt_offsets(ref_path, rec, rec_rate, lag_ms):
    """Each talkspurt's own alignment against the whole recording's, in ms (+: it played later than the rest): the
    reference split at pauses of 300 ms or more, each part cross-correlated with the recording within ±120 ms of the
    overall alignment. A buffer that starts the first talkspurt at another delay than the rest shows it here."""
    from scipy.signal import resample_poly
    ref, rate = read_wav(ref_path)
    ref16 = resample_poly(ref, 16000, rate)
    rec16 = resample_poly(rec, 16000, rec_rate)
    fr = 160
    energy = np.sqrt(np.mean(ref16[: len(ref16) // fr * fr].reshape(-1, fr) ** 2, axis=1))
    loud = energy > max(200.0, np.percentile(energy, 90) / 30)
    spurts, start, quiet = [], None, 0
    for i, on in enumerate(loud):
        if on:
            if start is None:
                start = i
            quiet = 0
        elif start is not None:
            quiet += 1
            if quiet >= 30:
                spurts.append((start, i - quiet + 1)); start = None; quiet = 0
    if start is not None:
        spurts.append((start, len(loud)))
    base = int(round(lag_ms * 16))
    search = 120 * 16
    offsets = []
    for a, b in spurts:
        if b - a < 20:  # shorter than 200 ms: too little to align
            continue
        seg = ref16[a * fr: b * fr]
        lo = max(0, base + a * fr - search)
        hi = min(len(rec16), base + b * fr + search)
        window = rec16[lo:hi]
        if len(window) < len(seg):
            continue
        n = len(window) + len(seg)
        corr = np.fft.irfft(np.fft.rfft(window, n) * np.conj(np.fft.rfft(seg, n)), n)[: len(window) - len(seg) + 1]
        best = lo + int(np.argmax(corr))
        offsets.append(round((best - (base + a * fr)) / 16, 1))
    return offsets


def ffmpeg_baseline(ref_path, workdir, bitrate="56k"):
    """PESQ-WB of the same file through ffmpeg's libopus (its defaults) at `bitrate`, or None without ffmpeg."""
    if subprocess.run(["which", "ffmpeg"], capture_output=True).returncode != 0:
        return None
    opus, back = os.path.join(workdir, "ref.opus"), os.path.join(workdir, "ref-ffmpeg.wav")
    subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", ref_path, "-ar", "48000", "-ac", "1", "-c:a", "libopus",
                    "-b:a", bitrate, opus], check=True)
    subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", opus, "-ar", "48000", "-ac", "1", back], check=True)
    base, _ = read_wav(back)
    return score(ref_path, base)[0]


def pesq_wb(mode, workdir):
    ref_path = os.path.join(workdir, "speech.wav")
    make_speech(ref_path)
    ref, rate = read_wav(ref_path)
    seconds = int(len(ref) / rate) + 4
    rec, _, _, counters = run_pair(mode, ref_path, seconds, workdir)
    value, lag, gap = score(ref_path, rec)
    result = {"mode": mode, "profile": PROFILE, "pesq_wb": value, "alignment_ms": lag, "longest_gap_ms": gap, "counters": counters,
              "talkspurt_offsets_ms": talkspurt_offsets(ref_path, rec, 48000, lag)}
    # The listener's own account of the speech it received (played, concealed, FEC, late, time-stretched, delay).
    with open(os.path.join(workdir, f"bob-{mode}.log")) as f:
        lines = [line.strip() for line in f]
    received = [line for line in lines if line.startswith("received ssrc")]
    if received:
        result["listener"] = received[-1]
    # Where the listener's jitter buffers started: the spread of its pings' round trips at join (JitterPrior).
    path = [line for line in lines if line.startswith("path at join")]
    if path:
        result["listener_start"] = path[-1]
    # Baseline on the same file, measured in the same run: Opus at the client's default bit rate (56 kbit/s)
    # through ffmpeg (libopus, its defaults), no network.
    base = ffmpeg_baseline(ref_path, workdir, "56k")
    if base is not None:
        result["pesq_wb_ffmpeg_opus_56k"] = base
    return result


def main():
    global PROFILE, BIN
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="forward,mix,hybrid")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--profile", default="clean", choices=["clean", "mild", "moderate", "harsh"],
                    help="network between clients and relay (impair-proxy); FEC and NACK are on in the client")
    ap.add_argument("--runs", type=int, default=1,
                    help="runs per mode, run k with the proxy's seed k (each its own network, the same in every mode); "
                         "summarised as median and spread (min–max)")
    ap.add_argument("--bin", default=BIN, help="where parley-relay, parley and impair-proxy are (default: %(default)s)")
    ap.add_argument("--uplink-repair", choices=["on", "off"],
                    help="the relay's uplink_repair setting (default: the relay's own, on)")
    ap.add_argument("--tcp", action="store_true",
                    help="both clients over the relay's TCP port (parley --tcp); clean profile only")
    ap.add_argument("--min-delay", type=int, metavar="MS",
                    help="both clients hold their receive buffers at least MS behind the network (parley --min-delay)")
    ap.add_argument("--sender-stalls", metavar="GAP_S/MIN_MS/MAX_MS",
                    help="impair-proxy holds each client's media after capture stalls (a browser's or a phone's)")
    ap.add_argument("--sender-drift", metavar="D", help="impair-proxy skews each client's media by D (e.g. 0.005)")
    args = ap.parse_args()
    if args.sender_stalls:
        PROXY_ARGS.extend(["--sender-stalls", args.sender_stalls])
    if args.sender_drift:
        PROXY_ARGS.extend(["--sender-drift", args.sender_drift])
    if PROXY_ARGS and args.tcp:
        sys.exit("--sender-stalls and --sender-drift go through impair-proxy, which speaks UDP: not with --tcp")
    if args.min_delay is not None:
        CLIENT_ARGS.extend(["--min-delay", str(args.min_delay)])
    if args.tcp:
        if args.profile != "clean":
            sys.exit("--tcp goes straight to the relay's TCP port: only with --profile clean (impair-proxy speaks UDP)")
        CLIENT_ARGS.append("--tcp")
    PROFILE = args.profile
    BIN = os.path.abspath(args.bin)
    if args.uplink_repair:
        RELAY_ENV["PARLEY_UPLINK_REPAIR"] = "true" if args.uplink_repair == "on" else "false"
    for b in ("parley", "parley-relay", "impair-proxy"):
        if not os.access(os.path.join(BIN, b), os.X_OK):
            sys.exit(f"measure.py: {BIN}/{b} missing: run `make release` first")
    global SEED
    results = []
    with tempfile.TemporaryDirectory() as d:
        for mode in args.modes.split(","):
            runs = []
            for k in range(max(1, args.runs)):
                SEED = k + 1
                r = latency(mode, d)
                clicks = r.pop("counters")
                r.update(pesq_wb(mode, d))
                speech = r.pop("counters")
                r["repair"] = {k: clicks.get(k, 0) + speech.get(k, 0) for k in COUNTERS.values()}
                r["seed"] = SEED
                runs.append(r)
                results.append(r)
                if not args.json:
                    print(f"{PROFILE:8} {mode:8} seed {SEED}: mouth-to-ear median {r['mouth_to_ear_ms_median']} ms (p95 {r['mouth_to_ear_ms_p95']}, "
                          f"min {r['mouth_to_ear_ms_min']}; {r['clicks_heard']}/{r['clicks_sent']} clicks)   PESQ-WB {r['pesq_wb']}"
                          f" (ffmpeg Opus 56k on the same speech: {r.get('pesq_wb_ffmpeg_opus_56k')}); longest gap {r['longest_gap_ms']} ms",
                          flush=True)
                    if "listener" in r:
                        print(f"{'':8} {'':8} {r['listener']}", flush=True)
                    if "listener_start" in r:
                        print(f"{'':8} {'':8} {r['listener_start']}", flush=True)
                    print(f"{'':8} {'':8} talkspurts against the whole: "
                          f"{', '.join(f'{o:+.1f}' for o in r['talkspurt_offsets_ms'])} ms", flush=True)
                    c = r["repair"]
                    print(f"{'':8} {'':8} listener NACKs answered {c['nacks_answered']}, missed {c['nacks_missed']}; "
                          f"uplink lost {c['uplink_lost']}, asked {c['uplink_nacked']}, recovered {c['uplink_recovered']}, "
                          f"given up {c['uplink_given_up']}", flush=True)
            if len(runs) > 1:
                values = [r["pesq_wb"] for r in runs]
                delays = [r["mouth_to_ear_ms_median"] for r in runs if r["mouth_to_ear_ms_median"] is not None]
                summary = {"mode": mode, "profile": PROFILE, "runs": len(runs), "pesq_wb_median": float(np.median(values)),
                           "pesq_wb_min": min(values), "pesq_wb_max": max(values),
                           "mouth_to_ear_ms_median": float(np.median(delays)) if delays else None,
                           "longest_gap_ms_max": max(r["longest_gap_ms"] for r in runs),
                           "repair": {k: sum(r["repair"][k] for r in runs) for k in COUNTERS.values()}}
                if args.json:
                    print(json.dumps(summary))
                else:
                    print(f"{PROFILE:8} {mode:8} seeds 1–{len(runs)}: PESQ-WB median {summary['pesq_wb_median']:.3f} "
                          f"({summary['pesq_wb_min']}–{summary['pesq_wb_max']}), mouth-to-ear median {summary['mouth_to_ear_ms_median']} ms, "
                          f"longest gap {summary['longest_gap_ms_max']} ms", flush=True)
                    c = summary["repair"]
                    print(f"{'':8} {'':8} all runs: listener NACKs answered {c['nacks_answered']}, missed {c['nacks_missed']}; "
                          f"uplink lost {c['uplink_lost']}, asked {c['uplink_nacked']}, recovered {c['uplink_recovered']}, "
                          f"given up {c['uplink_given_up']}", flush=True)
    if args.json:
        for r in results:
            print(json.dumps(r))


if __name__ == "__main__":
    main()
