// jitter-bench: replays network traces through Parley's JitterBuffer and libspeexdsp's JitterBuffer side by side.
//
//   jitter-bench --trace FILE [--trace FILE ...] [--synth PROFILE[:SEED[:SKEW[:SENDER]]] ...]
//                [--impl parley|speex|both] [--json]
//                [--quantile Q] [--on-time-quantile Q] [--forget F] [--no-fec]
//                [--speex-update-delay] [--wrap]
//   jitter-bench --trace FILE --speech WAV --out WAV [--bitrate BPS] [--expected-loss PERCENT] [--phase MS] [--no-dtx]
//                [--log-pulls CSV]
//
// With --speech, the speech is sent through the trace by the client's real send and receive paths (Opus, FEC, DTX;
// the engine's ReceiveMixer: NACK tracking, jitter buffer, PLC, time-stretching, mix — NACKs go unanswered) on a
// virtual clock and the played audio written to --out (48 kHz mono), for PESQ scoring
// (Benchmarks/scripts/quality/playout.py); the first trace is used. --no-dtx sends every frame, silence included, as
// ffmpeg and browsers do; --log-pulls writes each pull's decision, delay, target and the measured sender skew as CSV
// (`pullLine`).
//
// Profiles for --synth: mild, moderate, harsh (the shared traces' models), wifi, cellular, calm, and stalls (a clean
// path — base 20 ms, exponential jitter of 3 ms mean, no loss — from a sender whose capture stalls, `stalls=4/10/120`).
// SENDER adds a real sender's timing to any profile (Benchmarks/SenderModel), a comma-separated list of:
//   stalls                        capture stalls as Chromium's fake capture on a loaded machine: stalls=4/10/120
//   stalls=GAP_S/MIN_MS/MAX_MS    a stall every GAP_S seconds on average, MIN_MS–MAX_MS long (log-uniform); after a
//                                 stall the sender goes on at its pace, so every later packet is late by it
//   drift=D                       the sender's clock: packet k leaves at k · 20 · (1 + D) ms (±0.005 is common)
// e.g. --synth moderate:3:0:stalls,drift=0.005. Each trace's line reports its stalls (JSON "stalls", "stall_ms",
// "stall_frames" = ⌈stall_ms / 20⌉, and "concealed" frames next to them): the goal is concealed ≤ stall_frames.
import Foundation
import ParleyAudioIO
import ParleyMedia
import SenderModel

var traces: [Trace] = []
var impl = "both"
var json = false
var speexUpdateDelay = false
var wrap = false
var config = JitterBufferConfig()
var speechPath: String?, outPath: String?, pullLogPath: String?
var bitrate: Int32 = 56_000, expectedLoss: Int32 = 0, phase = 0.0, dtx = true
var args = CommandLine.arguments.dropFirst()
func usage() -> Never {
    FileHandle.standardError.write(("usage: jitter-bench --trace FILE [--synth PROFILE[:SEED[:SKEW[:SENDER]]]]"
        + " [--impl parley|speex|both] [--json] [--quantile Q] [--forget F] [--no-fec]\n"
        + "       PROFILE: mild moderate harsh wifi cellular calm stalls;"
        + " SENDER, comma-separated: stalls, stalls=GAP_S/MIN_MS/MAX_MS, drift=D\n"
        + "       jitter-bench --trace FILE --speech WAV --out WAV [--bitrate BPS] [--expected-loss PERCENT]"
        + " [--phase MS] [--no-dtx] [--log-pulls CSV]\n").data(using: .utf8)!)
    exit(2)
}
while let a = args.popFirst() {
    switch a {
    case "--trace":
        guard let path = args.popFirst() else { usage() }
        do { traces.append(try Trace.load(path: path)) } catch { print("cannot read \(path): \(error)"); exit(1) }
    case "--synth":
        guard let spec = args.popFirst() else { usage() }
        let parts = spec.split(separator: ":").map(String.init)
        guard var model = NetworkModel.named(parts[0]) else { usage() }
        if parts.count > 2 { model.skew = Double(parts[2]) ?? 0 }
        for modifier in parts.count > 3 ? parts[3].split(separator: ",") : [] {
            if modifier == "stalls" {
                model.stalls = .typical
            } else if modifier.hasPrefix("stalls="), let stalls = SenderStalls(parsing: modifier.dropFirst(7)) {
                model.stalls = stalls
            } else if modifier.hasPrefix("drift="), let drift = Double(modifier.dropFirst(6)) {
                model.senderDrift = drift
            } else {
                usage()
            }
        }
        traces.append(model.generate(seed: parts.count > 1 ? UInt64(parts[1]) ?? 1 : 1))
    case "--impl": impl = args.popFirst() ?? "both"
    case "--json": json = true
    case "--quantile": config.delayQuantile = Double(args.popFirst() ?? "") ?? config.delayQuantile
    case "--on-time-quantile": config.onTimeQuantile = Double(args.popFirst() ?? "") ?? config.onTimeQuantile
    case "--forget": config.forgetFactor = Double(args.popFirst() ?? "") ?? config.forgetFactor
    case "--no-fec": config.inbandFEC = false
    case "--speex-update-delay": speexUpdateDelay = true
    case "--wrap": wrap = true
    case "--speech": speechPath = args.popFirst()
    case "--out": outPath = args.popFirst()
    case "--bitrate": bitrate = Int32(args.popFirst() ?? "") ?? bitrate
    case "--expected-loss": expectedLoss = Int32(args.popFirst() ?? "") ?? expectedLoss
    case "--phase": phase = Double(args.popFirst() ?? "") ?? phase
    case "--no-dtx": dtx = false
    case "--log-pulls": pullLogPath = args.popFirst()
    default: usage()
    }
}
if traces.isEmpty { usage() }
for trace in traces where !trace.packets.contains(where: { $0.arrivalMs != nil }) {
    print("trace \(trace.name): no packet arrived")
    exit(1)
}

if let speechPath {
    guard let outPath else { usage() }
    do {
        let speech = try WAVReader(path: speechPath).readAllMono48k()
        var pullLog = "time_ms,decision,delay_ms,target_ms,quiet,sender_skew_percent\n"
        let logPull: ((String) -> Void)? = pullLogPath.map { _ in { pullLog += $0 + "\n" } }
        let result = try playSpeech(speech, trace: traces[0], config: config, bitrate: bitrate,
                                    expectedLossPercent: expectedLoss, phaseMs: phase, dtx: dtx, pullLog: logPull)
        if let pullLogPath { try pullLog.write(toFile: pullLogPath, atomically: true, encoding: .utf8) }
        let writer = try WAVWriter(path: outPath)
        try result.pcm.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        let s = result.stats
        print("{\"trace\":\"\(traces[0].name)\",\"played\":\(s.played),\"concealed\":\(s.concealedFrames),"
            + "\"fec\":\(s.fecRecovered),\"late\":\(s.lateDropped),\"accelerated\":\(s.accelerated),"
            + "\"expanded\":\(s.expanded),\"target_ms\":\(s.targetDelayMilliseconds),"
            + "\"sender_skew_percent\":\((s.senderClockSkew * 10_000).rounded() / 100),\"nacked\":\(result.nacked)}")
    } catch {
        FileHandle.standardError.write("jitter-bench: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
    exit(0)
}

for trace in traces {
    var concealed: [String] = []
    if impl == "parley" || impl == "both" {
        let clock = ContinuousClock()
        var result: (Scorer, JitterStats)?
        let elapsed = clock.measure { result = runParley(trace, config: config, wrap: wrap) }
        let (score, stats) = result!
        print(score.json())
        concealed.append("\(score.impl) \(score.concealedFrames)")
        if !json {
            print("  parley stats: inserted \(stats.inserted) late \(stats.lateDropped) played \(stats.played) accel \(stats.accelerated) expand \(stats.expanded) concealed \(stats.concealedFrames) events \(stats.concealmentEvents) fec \(stats.fecRecovered) jitter-induced \(stats.jitterInducedConcealedFrames) target \(stats.targetDelayMilliseconds) ms; whole replay \(elapsed)")
        }
    }
    if impl == "speex" || impl == "both" {
        let score = runSpeex(trace, speexUpdateDelay: speexUpdateDelay)
        print(score.json())
        concealed.append("speex \(score.concealedFrames)")
    }
    if !json {
        let stalls = trace.stallMs.map { ms in
            "\(trace.stallCount.map { "\($0) sender stalls" } ?? "sender stalls") of \(Int(ms.rounded())) ms in all"
                + " (\(trace.stallFrames!) frames)"
        } ?? "sender stalls unknown"
        print("  \(trace.name): \(stalls); concealed frames: \(concealed.joined(separator: ", "))")
    }
}
