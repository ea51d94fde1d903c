// jitter-bench: replays network traces through Parley's JitterBuffer and libspeexdsp's JitterBuffer side by side.
//
//   jitter-bench --trace FILE [--trace FILE ...] [--synth PROFILE[:SEED[:SKEW]] ...] [--impl parley|speex|both] [--json]
//                [--quantile Q] [--on-time-quantile Q] [--forget F] [--no-fec]
//                [--speex-update-delay] [--wrap]
//   jitter-bench --trace FILE --speech WAV --out WAV [--bitrate BPS] [--expected-loss PERCENT] [--phase MS]
//
// With --speech, the speech is sent through the trace by the client's real send and receive paths (Opus, FEC, DTX;
// the engine's ReceiveMixer: NACK tracking, jitter buffer, PLC, time-stretching, mix — NACKs go unanswered) on a
// virtual clock and the played audio written to --out (48 kHz mono), for PESQ scoring
// (Benchmarks/scripts/quality/playout.py); the first trace is used.
//
// Profiles for --synth: mild, moderate, harsh (the shared traces' models), wifi, cellular, calm.
import Foundation
import ParleyAudioIO
import ParleyMedia

var traces: [Trace] = []
var impl = "both"
var json = false
var speexUpdateDelay = false
var wrap = false
var config = JitterBufferConfig()
var speechPath: String?, outPath: String?
var bitrate: Int32 = 56_000, expectedLoss: Int32 = 0, phase = 0.0
var args = CommandLine.arguments.dropFirst()
func usage() -> Never {
    FileHandle.standardError.write(("usage: jitter-bench --trace FILE [--synth PROFILE[:SEED[:SKEW]]] [--impl parley|speex|both] [--json] [--quantile Q] [--forget F] [--no-fec]\n"
        + "       jitter-bench --trace FILE --speech WAV --out WAV [--bitrate BPS] [--expected-loss PERCENT] [--phase MS]\n").data(using: .utf8)!)
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
    default: usage()
    }
}
if traces.isEmpty { usage() }

if let speechPath {
    guard let outPath else { usage() }
    do {
        let speech = try WAVReader(path: speechPath).readAllMono48k()
        let result = try playSpeech(speech, trace: traces[0], config: config, bitrate: bitrate, expectedLossPercent: expectedLoss, phaseMs: phase)
        let writer = try WAVWriter(path: outPath)
        try result.pcm.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        let s = result.stats
        print("{\"trace\":\"\(traces[0].name)\",\"played\":\(s.played),\"concealed\":\(s.concealedFrames),\"fec\":\(s.fecRecovered),\"late\":\(s.lateDropped),\"accelerated\":\(s.accelerated),\"expanded\":\(s.expanded),\"target_ms\":\(s.targetDelayMilliseconds),\"nacked\":\(result.nacked)}")
    } catch {
        FileHandle.standardError.write("jitter-bench: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
    exit(0)
}

for trace in traces {
    if impl == "parley" || impl == "both" {
        let clock = ContinuousClock()
        var result: (Scorer, JitterStats)?
        let elapsed = clock.measure { result = runParley(trace, config: config, wrap: wrap) }
        let (score, stats) = result!
        print(score.json())
        if !json {
            print("  parley stats: inserted \(stats.inserted) late \(stats.lateDropped) played \(stats.played) accel \(stats.accelerated) expand \(stats.expanded) concealed \(stats.concealedFrames) events \(stats.concealmentEvents) fec \(stats.fecRecovered) jitter-induced \(stats.jitterInducedConcealedFrames) target \(stats.targetDelayMilliseconds) ms; whole replay \(elapsed)")
        }
    }
    if impl == "speex" || impl == "both" {
        print(runSpeex(trace, speexUpdateDelay: speexUpdateDelay).json())
    }
}
