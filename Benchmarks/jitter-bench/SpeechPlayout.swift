// Speech through a trace: the client's real send path (SendPipeline: Opus VOIP, in-band FEC, DTX) on one side, the
// receive path `ClientEngine` uses on the other (ReceiveMixer: reception statistics, NACK tracking, jitter buffer,
// decoder, FEC, PLC, time-stretching, the local mix), the trace's arrival times in between, on a virtual clock. The
// engine's NACKs are asked for at their times but a trace is a fixed record: nothing answers them, so the figures
// mean what they meant before (a NACK only helps when the relay still has the packet, which a trace cannot show). Deterministic, and fast enough to score many settings
// with PESQ (Benchmarks/scripts/quality/playout.py).
import ParleyAudioIO
import ParleyClientCore
import ParleyMedia
import ParleyWire

/// What `playSpeech` produced: the played PCM (48 kHz mono, one 20 ms frame per pull from the first arrival), the
/// jitter buffer's counters, and the sequence numbers the receive path NACKed (none answered).
struct SpeechPlayout {
    var pcm: [Int16]
    var stats: JitterStats
    var nacked: Int
}

/// Encodes `speech` (48 kHz mono) frame by frame, sends frame k as trace packet k (lost when the trace lost it),
/// and pulls 20 ms every 20 ms from `phaseMs` after the first arrival until the speech has been played out.
func playSpeech(_ speech: [Int16], trace: Trace, config: JitterBufferConfig, bitrate: Int32,
                expectedLossPercent: Int32, phaseMs: Double = 0, dtx: Bool = true,
                pullLog: ((String) -> Void)? = nil) throws -> SpeechPlayout {
    let frame = SendPipeline.frameSamples
    let frames = speech.count / frame
    guard frames > 0, trace.packets.count >= frames else {
        throw PlayoutError.traceTooShort(frames: frames, packets: trace.packets.count)
    }
    let sender = try SendPipeline(ssrc: 0x5EED, bitrate: bitrate, expectedLossPercent: expectedLossPercent, dtx: dtx)
    // Encode everything up front: (arrival ms, packet bytes) for each packet that was sent and not lost.
    var arrivals: [(ms: Double, bytes: [UInt8])] = []
    speech.withUnsafeBufferPointer { pcm in
        for k in 0..<frames {
            let slice = UnsafeBufferPointer(rebasing: pcm[(k * frame)..<((k + 1) * frame)])
            guard let packet = sender.packetize(slice, level: audioLevel(slice), voice: true) else { continue }
            if let a = trace.packets[k].arrivalMs { arrivals.append((a, Array(packet))) }
        }
    }
    arrivals.sort { $0.ms < $1.ms }
    let receiver = ReceiveMixer(jitterConfig: config)
    var out = [Int16](repeating: 0, count: frames * frame + 2 * 48_000)
    var next = 0, nacked = 0
    let start = (arrivals.first?.ms ?? 0) + phaseMs
    out.withUnsafeMutableBufferPointer { out in
        for pull in 0..<(out.count / frame) {
            let t = start + Double(pull) * 20
            while next < arrivals.count, arrivals[next].ms <= t {
                arrivals[next].bytes.withUnsafeBytes { bytes in
                    if let view = try? RTPPacketView(parsing: bytes) {
                        receiver.receive(view, now: instant(milliseconds: arrivals[next].ms))
                    }
                }
                next += 1
            }
            let now = instant(milliseconds: t)
            let before = receiver.streams[sender.ssrc]?.audio.jitter.stats
            receiver.pull(now: now, into: out.baseAddress! + pull * frame)
            if let pullLog, let before, let after = receiver.streams[sender.ssrc]?.audio.jitter.stats {
                pullLog(pullLine(t: t, before: before, after: after,
                                 quiet: TimeStretch.isQuiet(out.baseAddress! + pull * frame, count: frame)))
            }
            for nack in receiver.nacksDue(now: now, roundTrip: ClientEngine.initialRoundTrip, reporter: 0) { nacked += nack.lost.count }
        }
    }
    let stats = receiver.streams[sender.ssrc]?.audio.jitter.stats ?? JitterStats()
    return SpeechPlayout(pcm: out, stats: stats, nacked: nacked)
}

/// One line of `--log-pulls`: the pull's time (ms from the first arrival), what the buffer did (E expand, A
/// accelerate, C conceal, F FEC, S silence, P play), its delay and target, whether the output was quiet (q), the skew.
func pullLine(t: Double, before: JitterStats, after: JitterStats, quiet: Bool) -> String {
    var what = ""
    if after.expanded > before.expanded { what += "E" }
    if after.accelerated > before.accelerated { what += "A" }
    if after.concealedFrames > before.concealedFrames { what += "C" }
    if after.fecRecovered > before.fecRecovered { what += "F" }
    if after.silenceFrames > before.silenceFrames { what += "S" }
    if what.isEmpty { what = "P" }
    let delay = (after.currentDelayMilliseconds * 10).rounded() / 10
    return "\(Int(t)),\(what),\(delay),\(after.targetDelayMilliseconds),\(quiet ? "q" : ""),"
        + "\((after.senderClockSkew * 10_000).rounded() / 100)"
}

enum PlayoutError: Error, CustomStringConvertible {
    case traceTooShort(frames: Int, packets: Int)
    var description: String {
        switch self {
        case .traceTooShort(let f, let p): return "the speech has \(f) frames but the trace only \(p) packets"
        }
    }
}
