import ParleyMedia

/// Speech-like audio encoded once at start: talkspurts of voiced syllables (harmonics of a gliding pitch, 4–5 Hz
/// syllable envelope) separated by silent pauses, through Opus VOIP 56 kbit/s (the client default) with FEC and DTX
/// as real clients send it. Each frame keeps its RFC 6464 level and whether it is sent (DTX frames after the first
/// are not).
final class SpeechClip {
    struct Frame {
        var offset: Int
        var count: Int
        var level: UInt8
        var voice: Bool
        var marker: Bool
        var sent: Bool
    }
    /// 20 ms frames, in order; the clip loops.
    private(set) var frames: [Frame] = []
    /// Concatenated Opus payloads.
    private(set) var payloads: [UInt8] = []
    /// Indices of frames that start a talkspurt (speakers start at one, so their first packet is speech).
    private(set) var talkspurtStarts: [Int] = []

    init(seconds: Int = 12) throws {
        let encoder = try OpusEncoder(sampleRate: 48_000, channels: 1, application: .voip)
        try encoder.setBitrate(56_000)
        try encoder.setComplexity(5)
        try encoder.setInbandFEC(true)
        try encoder.setExpectedPacketLoss(percent: 0)
        try encoder.setDTX(true)
        var seed: UInt32 = 0x2545_F491
        func random() -> Double { seed = seed &* 1_664_525 &+ 1_013_904_223; return Double(seed >> 8) / Double(1 << 24) }
        // Talk/pause pattern in frames.
        var talking: [Bool] = []
        while talking.count < seconds * 50 {
            talking += Array(repeating: true, count: 50 + Int(random() * 100))   // 1–3 s of talk
            talking += Array(repeating: false, count: 20 + Int(random() * 40))   // 0.4–1.2 s of silence
        }
        talking = Array(talking.prefix(seconds * 50))
        var pcm = [Int16](repeating: 0, count: 960)
        var packet = [UInt8](repeating: 0, count: 1500)
        var phase = 0.0, t = 0.0, sentTalking = false
        for (i, talk) in talking.enumerated() {
            var energy = 0.0
            for s in 0..<960 {
                t += 1.0 / 48_000
                var x = 0.0
                if talk {
                    let pitch = 140 + 40 * sin(2 * .pi * 0.7 * t)
                    phase += 2 * .pi * pitch / 48_000
                    let envelope = max(0, sin(2 * .pi * 4.5 * t))
                    for h in 1...8 { x += sin(Double(h) * phase) / Double(h) }
                    x = x * 0.18 * envelope + (random() - 0.5) * 0.01
                }
                let v = Int16(max(-32767, min(32767, x * 32767)))
                pcm[s] = v
                energy += Double(v) * Double(v)
            }
            let rms = (energy / 960).squareRoot() / 32767
            let level = rms <= 0 ? UInt8(127) : UInt8(max(0, min(127, -20 * log10(rms))))
            let n = try pcm.withUnsafeBufferPointer { p in
                try packet.withUnsafeMutableBytes { try encoder.encode(p, frameSize: 960, into: $0) }
            }
            var frame = Frame(offset: payloads.count, count: n, level: level, voice: talk, marker: false, sent: true)
            if n <= 2 {
                frame.level = 127
                frame.voice = false
                frame.sent = sentTalking      // the first DTX frame after audio is sent, the rest are not
                sentTalking = false
            } else {
                frame.marker = !sentTalking
                sentTalking = true
            }
            payloads += packet[0..<n]
            frames.append(frame)
        }
        // A speaker starts where its first packet is loud speech (level ≤ 50), so it takes a forwarding slot at once.
        for (i, f) in frames.enumerated() where f.sent && f.level <= 50 && (i == 0 || !frames[i - 1].voice) {
            talkspurtStarts.append(i)
        }
        if talkspurtStarts.isEmpty { talkspurtStarts = [frames.firstIndex { $0.sent && $0.level <= 50 } ?? 0] }
    }

    /// Fraction of frames sent.
    var sentFraction: Double { Double(frames.filter(\.sent).count) / Double(frames.count) }
}

import Glibc
