#!/usr/bin/env python3
"""Parley's listener against Chromium's on the same flows: PESQ-WB and delay of what each hears of one speaker.

  .build/interop-venv/bin/python3 Benchmarks/scripts/webrtc/browser-listener.py [--profiles clean,moderate]
      [--seeds 3] [--bin DIR] [--json]

One relay (serving the sample page), a forward room, one speaker: `parley join --input speech.wav` (measure.py's
espeak-ng Harvard sentences). Two listeners in the room at once: `parley join --listen-only --output` and headless
Chromium on the sample page through WHEP (`&listen=1&record=1`: an AudioWorklet records every remote track, the page
logs the PCM and getStats). Through impair-proxy unless the profile is clean, as measure.py runs it: the relay
announces the proxy's address (`--announce 127.0.0.2`), so the browser's ICE, DTLS and SRTP cross the proxy like the
clients' datagrams. The speaker's uplink is one flow both listeners share; each listener's downlink is a flow of its
own, and impair-proxy draws a flow's impairment from the seed and the order flows appear in. So every seed is run
twice: Parley's listener first (flow 0) then Chromium (flow 1), and the other way round; over the pair each listener
met both downlinks of that seed, and the speaker's uplink (flow 2) is the same in both.

Scored for each listener: PESQ-WB (measure.py's `score`: 16 kHz, aligned to the reference by cross-correlation) and
the delay on the machine's clock, from the mouth: the speaker prints the monotonic time of its first captured frame
(PARLEY_TIMELINE=1; the reference's first sample was spoken 20 ms before it). Each recording's aligned sample is
placed on the same clock:
- Parley: `--output` is written as the listener plays, in real time from the first played frame (whose monotonic time
  it prints): mouth-to-ear is to where it plays, without a sound card's buffer.
- Chromium: the page's AudioWorklet records each frame as its AudioContext renders it; getOutputTimestamp, taken each
  second, gives when a context frame comes out of its output in the page's clock, which the page sets against this
  script's monotonic clock by five requests to a small server here (`&sync=PORT`, the shortest round trip, ±half of
  it: well under 1 ms). Not through the wall clock: CLOCK_REALTIME ran away from CLOCK_MONOTONIC on this machine
  (5 ms a second, and steps). The stamps taken during the speech are used, their spread printed: a context that
  stalled there (its render thread starved) would show. `mouth_to_ear_ms` is to that output;
  `mouth_to_recorder_ms` is to the worklet, less the context's render-to-output latency (~40 ms headless). The
  comparable figure to Parley's is the second, and it is an upper bound of Chromium's own path: between NetEq and the
  worklet are the audio element's 10 ms pulls and WebAudio's FIFO from the track (a recording path, not a listener's).
Besides, each one's own account of its jitter buffer: Parley's `--verbose` summary (delay and target at the end;
missing when the stream ended with its speaker), Chromium's inbound-rtp (mean jitterBufferDelay over the samples it
emitted, audible concealment, time-stretching, losses). Everything started is stopped at exit (and on an error or
Ctrl-C); each process is bounded by a timeout.
"""
import argparse, base64, json, os, random, re, shutil, signal, subprocess, sys, tempfile, time
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "Benchmarks", "scripts", "quality"))
import measure  # noqa: E402  (read_wav, write_wav, make_speech, score, talkspurt_offsets)

CHROMIUM = "/usr/bin/chromium"
# Every process a run started, stopped at its end (and at exit, whatever happened).
STARTED = []


def start(args, **kw):
    p = subprocess.Popen(args, **kw)
    STARTED.append(p)
    return p


def stop_all():
    for p in STARTED:
        if p.poll() is None:
            p.terminate()
    for p in STARTED:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill(); p.wait()
    STARTED.clear()


def free_ports():
    """A port P with P and P + 1 free for UDP and P + 2 for TCP on 127.0.0.1 (the relay's workers and its HTTP)."""
    import socket
    while True:
        port = random.randint(20000, 40000)
        sockets = []
        try:
            for kind, p in ((socket.SOCK_DGRAM, port), (socket.SOCK_DGRAM, port + 1), (socket.SOCK_STREAM, port + 2)):
                s = socket.socket(socket.AF_INET, kind)
                sockets.append(s)
                s.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()


class ClockServer:
    """The machine's monotonic clock for the page (`&sync=PORT`): notes when each GET /sync?k=K arrives."""
    def __init__(self):
        import http.server, threading
        arrivals = self.arrivals = {}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                arrived = time.monotonic_ns()
                m = re.search(r"k=(\d+)", self.path)
                if m:
                    arrivals[int(m.group(1))] = arrived
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def offset_ms(self, pings):
        """Monotonic ms minus the page's clock, by the ping with the shortest round trip (± half of it)."""
        best = min((after - sent, k, sent, after) for k, sent, after in pings if k in self.arrivals)
        rtt, k, sent, after = best
        return self.arrivals[k] / 1e6 - (sent + after) / 2, rtt

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def wait_for(path, pattern, seconds):
    """Whether `pattern` appears in the file at `path` within `seconds` (polled)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(path, errors="replace") as f:
            if re.search(pattern, f.read()):
                return True
        time.sleep(0.05)
    return False


def wait_http(port, seconds):
    """Whether the relay's HTTP port serves the sample page within `seconds`."""
    import urllib.request
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def chromium_recording(log_path):
    """The page's recording (48 kHz samples) and its result from Chromium's stderr."""
    chunks, result = {}, None
    with open(log_path, errors="replace") as f:
        for line in f:
            m = re.search(r'PARLEY PCM (\{[^}]*\}) ([A-Za-z0-9+/=]+)', line)
            if m:
                chunks[json.loads(m.group(1))["index"]] = m.group(2)
            elif "PARLEY RESULT" in line:
                result = json.loads(line[line.index("{"): line.rindex("}") + 1])
    pcm = b"".join(base64.b64decode(chunks[k]) for k in sorted(chunks))
    return np.frombuffer(pcm, dtype="<i2").astype(np.float64), result


def run(binary, profile, seed, parley_first, speech, speech_seconds, workdir, clock):
    """One run: relay, proxy, both listeners (in the given order), the speaker; the two scores and delays."""
    port = free_ports()
    http = port + 2  # the two workers take port and port + 1
    tag = f"{profile}-{seed}-{'p' if parley_first else 'c'}"
    logs = {name: os.path.join(workdir, f"{name}-{tag}.log") for name in ("relay", "ear", "mouth", "chromium")}
    relay_args = [os.path.join(binary, "parley-relay"), "--udp", f"127.0.0.1:{port}", "--http", f"127.0.0.1:{http}",
                  "--workers", "2", "--log-level", "warning", "--state-dir", os.path.join(workdir, "state"),
                  "--web-root", os.path.join(ROOT, "Samples", "web")]
    server = f"127.0.0.1:{port}"
    if profile != "clean":
        relay_args += ["--announce", "127.0.0.2"]
        server = f"127.0.0.2:{port}"
    start(relay_args, stdout=open(logs["relay"], "w"), stderr=subprocess.STDOUT)
    if profile != "clean":
        start([os.path.join(binary, "impair-proxy"), "--listen", "127.0.0.2", "--upstream", "127.0.0.1",
               "--ports", f"{port},{port + 1}", "--profile", profile, "--seed", str(seed)],
              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_http(http, 10):
        raise RuntimeError(f"the relay did not start: {open(logs['relay']).read()}")
    env = dict(os.environ, PARLEY_TIMELINE="1")
    room = f"bl{random.randint(0, 1 << 30)}"
    common = ["--server", server, "--mode", "forward", "--no-tui"]
    # Both listen from before the speaker starts until after it ended.
    listen_seconds = speech_seconds + 12
    ear_wav = os.path.join(workdir, f"ear-{tag}.wav")
    listeners = []

    def parley_listener():
        listeners.append(start([os.path.join(binary, "parley"), "join", room, "--identity", "ear", "--listen-only",
                                "--output", ear_wav, "--duration", str(listen_seconds), "--verbose"] + common,
                               env=env, stdout=open(logs["ear"], "w"), stderr=subprocess.STDOUT))
        if not wait_for(logs["ear"], rf"joined {room}", 10):
            raise RuntimeError(f"parley listener did not join: {open(logs['ear']).read()}")

    def chromium_listener():
        token = subprocess.run([os.path.join(binary, "parley"), "token", "--identity", "web", "--room", room,
                                "--mode", "forward"], capture_output=True, text=True, check=True).stdout.strip()
        url = (f"http://127.0.0.1:{http}/?room={room}&token={token}&join=1&listen=1&record=1"
               f"&report={listen_seconds - 3}&sync={clock.port}")
        chromium = ["timeout", str(listen_seconds + 30), CHROMIUM, "--headless=new", "--no-sandbox",
                    "--allow-loopback-in-peer-connection", "--autoplay-policy=no-user-gesture-required",
                    "--no-first-run", f"--user-data-dir={os.path.join(workdir, 'profile-' + tag)}",
                    "--enable-logging=stderr", "--v=0", url]
        listeners.append(start(chromium, stdout=subprocess.DEVNULL, stderr=open(logs["chromium"], "w")))
        # Connected, and its recorder running (recorder.js logs it when its first frame comes).
        if not wait_for(logs["chromium"], r"PARLEY recording", 20):
            raise RuntimeError("Chromium did not connect: " + "".join(
                line for line in open(logs["chromium"], errors="replace") if "PARLEY" in line)[-2000:])

    for listener in ((parley_listener, chromium_listener) if parley_first else (chromium_listener, parley_listener)):
        listener()
    time.sleep(1)
    mouth = start([os.path.join(binary, "parley"), "join", room, "--identity", "mouth", "--input", speech,
                   "--no-playback"] + common, env=env, stdout=open(logs["mouth"], "w"), stderr=subprocess.STDOUT)
    mouth.wait(timeout=speech_seconds + 15)
    for p in listeners:  # each ends by itself: the parley join after --duration, the page after its report
        p.wait(timeout=listen_seconds + 40)
    with open(logs["mouth"]) as f:
        cap = int(re.search(r"timeline capture_start_ns (\d+)", f.read()).group(1))
    with open(logs["ear"]) as f:
        ear_log = f.read()
    play = int(re.search(r"timeline playback_start_ns (\d+)", ear_log).group(1))
    mouth_ms = (cap - 20_000_000) / 1e6  # the reference's first sample, on the monotonic clock

    ear, rate = measure.read_wav(ear_wav)
    pesq_p, lag_p, gap_p = measure.score(speech, ear, rate)
    parley = {"pesq_wb": pesq_p, "mouth_to_ear_ms": round(play / 1e6 + lag_p - mouth_ms, 1), "longest_gap_ms": gap_p,
              "talkspurt_offsets_ms": measure.talkspurt_offsets(speech, ear, rate, lag_p)}
    received = [line.strip() for line in ear_log.splitlines() if line.startswith("received ssrc")]
    if received:
        parley["account"] = received[-1]
        m = re.search(r"delay (\d+) ms \(target (\d+)\)", received[-1])
        if m:
            parley["buffer_delay_end_ms"], parley["buffer_target_end_ms"] = int(m.group(1)), int(m.group(2))

    heard, result = chromium_recording(logs["chromium"])
    if result is None or len(heard) == 0:
        page = [line for line in open(logs["chromium"], errors="replace") if "PARLEY" in line and "PCM" not in line]
        raise RuntimeError("no recording from Chromium: " + "".join(page)[-2000:])
    rec = result["recording"]
    pesq_c, lag_c, gap_c = measure.score(speech, heard, rec["sampleRate"])
    # The first frame's ear time by the output timestamps taken while the speech played (a context that stalled
    # before or after it moves the others); their spread says whether the context kept pace during the speech.
    start_s = lag_c / 1000
    during = [ear for at, ear in rec["clock"] if start_s <= at <= start_s + speech_seconds] or [rec["earMs"]]
    page_to_monotonic, sync_rtt = clock.offset_ms(rec["sync"])
    ear_c_ms = float(np.median(during)) + page_to_monotonic
    mouth_to_ear = ear_c_ms + lag_c - mouth_ms
    chromium = {"pesq_wb": pesq_c, "mouth_to_ear_ms": round(mouth_to_ear, 1), "longest_gap_ms": gap_c,
                # When the recorder saw it: the page's output less its AudioContext's render-to-output latency.
                "mouth_to_recorder_ms": round(mouth_to_ear - rec["renderToOutputMs"], 1),
                "talkspurt_offsets_ms": measure.talkspurt_offsets(speech, heard, rec["sampleRate"], lag_c)}
    for key in ("meanJitterBufferMs", "jitterBufferTargetMs", "concealedSamples", "silentConcealedSamples",
                "concealmentEvents", "totalSamplesReceived", "packetsReceived", "packetsLost",
                "insertedSamplesForDeceleration", "removedSamplesForAcceleration", "fecPacketsReceived",
                "packetsDiscarded", "nackCount"):
        chromium[key] = round(result[key], 1) if isinstance(result.get(key), float) else result.get(key)
    chromium["clock_sync_rtt_ms"] = round(sync_rtt, 2)
    # Frames the page's AudioContext rendered without running the recorder (recorded as silence): a recording
    # artifact, not what Chromium's listener played.
    chromium["recorder_skipped_ms"] = round(sum(n for _, n in rec.get("skipped", [])) / 48, 1)
    chromium["context_clock_spread_ms"] = round(max(during) - min(during), 1)
    chromium["output_latency_ms"] = round(1000 * (rec.get("outputLatency") or 0), 1)
    stop_all()
    return {"profile": profile, "seed": seed, "first": "parley" if parley_first else "chromium",
            "parley": parley, "chromium": chromium}


def line_for(r):
    p, c = r["parley"], r["chromium"]
    audible = (c["concealedSamples"] or 0) - (c["silentConcealedSamples"] or 0)
    return (f"{r['profile']:8} seed {r['seed']} ({r['first']:8} first): "
            f"Parley PESQ-WB {p['pesq_wb']:.3f}, mouth-to-ear {p['mouth_to_ear_ms']:.1f} ms "
            f"(gap {p['longest_gap_ms']} ms, buffer {p.get('buffer_delay_end_ms')}/{p.get('buffer_target_end_ms')} ms "
            f"at the end) | Chromium PESQ-WB {c['pesq_wb']:.3f}, mouth-to-recorder {c['mouth_to_recorder_ms']:.1f} ms, "
            f"to its output {c['mouth_to_ear_ms']:.1f} ms (gap {c['longest_gap_ms']} ms, NetEq mean "
            f"{c['meanJitterBufferMs']} ms, concealed {audible} audible samples, lost {c['packetsLost']}, "
            f"+{c['insertedSamplesForDeceleration']}/-{c['removedSamplesForAcceleration']} stretched, "
            f"recorder skipped {c['recorder_skipped_ms']} ms, "
            f"its clock's spread in speech {c['context_clock_spread_ms']} ms)")


def summarise(profile, runs):
    """Median and spread (min–max) of each listener's PESQ-WB and delays over `runs`."""
    def spread(who, key):
        values = [r[who][key] for r in runs if r[who].get(key) is not None]
        return {"median": round(float(np.median(values)), 3), "min": min(values), "max": max(values)}
    return [{"profile": profile, "listener": "parley", "runs": len(runs), "pesq_wb": spread("parley", "pesq_wb"),
             "mouth_to_ear_ms": spread("parley", "mouth_to_ear_ms")},
            {"profile": profile, "listener": "chromium", "runs": len(runs), "pesq_wb": spread("chromium", "pesq_wb"),
             "mouth_to_recorder_ms": spread("chromium", "mouth_to_recorder_ms"),
             "mouth_to_ear_ms": spread("chromium", "mouth_to_ear_ms"),
             "neteq_mean_ms": spread("chromium", "meanJitterBufferMs")}]


def summary_line(s):
    def fmt(v):
        return f"{v['median']} ({v['min']}–{v['max']})"
    text = f"{s['profile']:8} {s['listener']:8} {s['runs']} runs: PESQ-WB {fmt(s['pesq_wb'])}"
    if s["listener"] == "parley":
        return text + f", mouth-to-ear {fmt(s['mouth_to_ear_ms'])} ms"
    return (text + f", mouth-to-recorder {fmt(s['mouth_to_recorder_ms'])} ms, to its output "
            f"{fmt(s['mouth_to_ear_ms'])} ms, NetEq mean {fmt(s['neteq_mean_ms'])} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiles", default="clean,moderate")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..N per profile, each run in both listener orders")
    ap.add_argument("--orders", default="parley,chromium",
                    help="which listener joins first (its downlink is flow 0); both by default")
    ap.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    for b in ("parley", "parley-relay", "impair-proxy"):
        if not os.access(os.path.join(binary, b), os.X_OK):
            sys.exit(f"browser-listener.py: {binary}/{b} missing: build it in release first")
    if not os.access(CHROMIUM, os.X_OK):
        sys.exit("browser-listener.py: chromium missing (Debian's chromium: make test installs it)")
    # SIGTERM (a `timeout` around the script) unwinds like Ctrl-C, through the `finally` that stops every process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = tempfile.mkdtemp(prefix="parley-browser-listener-")
    clock = ClockServer()
    results = []
    try:
        speech = os.path.join(workdir, "speech.wav")
        measure.make_speech(speech)
        ref, rate = measure.read_wav(speech)
        speech_seconds = int(len(ref) / rate) + 1
        for profile in args.profiles.split(","):
            runs = []
            for seed in range(1, args.seeds + 1):
                for first in args.orders.split(","):
                    try:
                        r = run(binary, profile, seed, first == "parley", speech, speech_seconds, workdir, clock)
                    finally:
                        stop_all()
                    runs.append(r)
                    results.append(r)
                    print(json.dumps(r) if args.json else line_for(r), flush=True)
            for summary in summarise(profile, runs):
                print(json.dumps(summary) if args.json else summary_line(summary), flush=True)
    finally:
        stop_all()
        clock.close()
        if os.environ.get("KEEP_WORKDIR"):
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
