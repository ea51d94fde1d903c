import Glibc
import ParleyWire

/// One incoming Opus stream played out: its jitter buffer, its decoder, and what each jitter decision means in
/// PCM — decode, Opus PLC, FEC recovery from the next packet, and time-compression of two frames into one when the
/// buffer shrinks during speech. Used by the relay's mixer (one per publisher) and the client (one per SSRC).
/// Buffers are allocated once; owned by one thread.
public final class AudioReceiveStream {
    /// What a pull produced.
    public enum Outcome: Sendable, Equatable {
        /// Decoded audio (played, FEC-recovered, time-compressed or preemptively expanded).
        case speech
        /// Packet-loss concealment.
        case concealed
        /// Nothing to play: not in a talkspurt. The frame is zeros.
        case silence
    }

    /// Samples per 20 ms frame.
    public let frameSamples: Int
    /// The jitter buffer.
    public let jitter: JitterBuffer
    private let decoder: OpusDecoder
    private let pair: UnsafeMutablePointer<Int16>
    /// Decode errors (bad packets) so far; each is played as concealment.
    public private(set) var decodeErrors = 0
    /// The last outcome.
    public private(set) var lastOutcome: Outcome = .silence

    /// A stream decoding 48 kHz mono Opus.
    public init(jitterConfig: JitterBufferConfig = JitterBufferConfig()) throws(OpusError) {
        frameSamples = jitterConfig.frameSamples
        jitter = JitterBuffer(config: jitterConfig)
        decoder = try OpusDecoder(sampleRate: Int32(jitterConfig.clockRate), channels: 1)
        pair = .allocate(capacity: 2 * frameSamples)
        pair.initialize(repeating: 0, count: 2 * frameSamples)
    }

    deinit { pair.deallocate() }

    /// Queues one RTP packet's payload.
    public func insert(_ packet: RTPPacketView, arrival: Int64) {
        jitter.insert(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, ssrc: packet.ssrc,
                      marker: packet.marker, payload: packet.payload, arrival: arrival)
    }

    /// Produces the next 20 ms into `out` (`frameSamples` samples).
    public func pull(now: Int64, into out: UnsafeMutablePointer<Int16>) -> Outcome {
        let buffer = UnsafeMutableBufferPointer(start: out, count: frameSamples)
        let outcome: Outcome
        switch jitter.pull(now: now) {
        case .play(let frame):
            outcome = decode(frame.payload, into: buffer) ? (frame.payload.count <= 2 ? .silence : .speech) : conceal(into: buffer)
        case .accelerate(let first, let second):
            let a = UnsafeMutableBufferPointer(start: pair, count: frameSamples)
            let b = UnsafeMutableBufferPointer(start: pair + frameSamples, count: frameSamples)
            if decode(first.payload, into: a), decode(second.payload, into: b) {
                TimeCompression.merge(a.baseAddress!, b.baseAddress!, into: out, count: frameSamples)
                outcome = .speech
            } else {
                outcome = conceal(into: buffer)
            }
        case .fec(let next):
            if (try? decoder.decodeFEC(from: next.payload, frameSize: frameSamples, into: buffer)) == frameSamples {
                outcome = .speech
            } else {
                outcome = conceal(into: buffer)
            }
        case .conceal:
            outcome = conceal(into: buffer)
        case .expand:
            // Preemptive expansion during speech: Opus PLC continues the waveform naturally for one frame.
            outcome = conceal(into: buffer) == .concealed ? .speech : .silence
        case .silence:
            buffer.update(repeating: 0)
            outcome = .silence
        }
        lastOutcome = outcome
        return outcome
    }

    private func decode(_ payload: UnsafeRawBufferPointer, into buffer: UnsafeMutableBufferPointer<Int16>) -> Bool {
        guard let n = try? decoder.decode(payload, into: buffer), n == frameSamples else {
            decodeErrors += 1
            return false
        }
        return true
    }

    private func conceal(into buffer: UnsafeMutableBufferPointer<Int16>) -> Outcome {
        if (try? decoder.conceal(frameSize: frameSamples, into: buffer)) == frameSamples { return .concealed }
        buffer.update(repeating: 0)
        return .silence
    }
}

/// Time-compression of two consecutive frames into one (the jitter buffer's `accelerate`): the output starts as the
/// first frame and ends as the second, so it joins both neighbours without a seam, with a 5 ms raised-cosine
/// cross-fade placed where the two frames are most alike (highest normalised correlation).
public enum TimeCompression {
    /// Merges `a` and `b` (each `count` samples) into `out` (`count` samples).
    public static func merge(_ a: UnsafePointer<Int16>, _ b: UnsafePointer<Int16>, into out: UnsafeMutablePointer<Int16>, count: Int) {
        let fade = min(count / 4, 240)
        var bestStart = (count - fade) / 2
        var bestScore = -Double.infinity
        for start in stride(from: 0, through: count - fade, by: 16) {
            var ab = 0.0, aa = 0.0, bb = 0.0
            for k in stride(from: 0, to: fade, by: 2) {
                let x = Double(a[start + k]), y = Double(b[start + k])
                ab += x * y; aa += x * x; bb += y * y
            }
            let score = aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
            if score > bestScore { bestScore = score; bestStart = start }
        }
        for i in 0..<bestStart { out[i] = a[i] }
        for k in 0..<fade {
            let w = 0.5 - 0.5 * cos(Double.pi * Double(k) / Double(fade))
            let v = Double(a[bestStart + k]) * (1 - w) + Double(b[bestStart + k]) * w
            out[bestStart + k] = Int16(max(-32_768, min(32_767, v.rounded())))
        }
        for i in (bestStart + fade)..<count { out[i] = b[i] }
    }
}
