import COpus

/// The argument rules of RFC 6716 / `opus.h` that the wrappers check in Swift before calling libopus,
/// so a bad argument becomes an `OPUS_BAD_ARG` error with a clear message instead of a crash or a silent clamp.
enum OpusLimits {
    /// The sample rates an Opus encoder or decoder can run at.
    static let sampleRates: [Int32] = [8_000, 12_000, 16_000, 24_000, 48_000]

    /// The longest packet the encoder is asked to write (RFC 6716 §3.4: 1275 bytes per frame × 3 frames of 20 ms + headers).
    static let maxPacketBytes = 3 * 1_275 + 7

    /// Throws unless `sampleRate` is one Opus supports and `channels` is 1 or 2.
    static func checkFormat(sampleRate: Int32, channels: Int) throws(OpusError) {
        guard sampleRates.contains(sampleRate) else {
            throw .badArgument("sample rate \(sampleRate) Hz is not one of 8000, 12000, 16000, 24000, 48000")
        }
        guard channels == 1 || channels == 2 else {
            throw .badArgument("channels \(channels) is not 1 or 2")
        }
    }

    /// Throws unless `frameSize` samples per channel is 2.5, 5, 10, 20, 40 or 60 ms at `sampleRate` (what `opus_encode` takes).
    static func checkEncodeFrameSize(_ frameSize: Int, sampleRate: Int32) throws(OpusError) {
        let quantum = Int(sampleRate) / 400  // 2.5 ms
        switch frameSize {
        case quantum, 2 * quantum, 4 * quantum, 8 * quantum, 16 * quantum, 24 * quantum: return
        default:
            throw .badArgument("frameSize \(frameSize) is not 2.5/5/10/20/40/60 ms at \(sampleRate) Hz (\(quantum), \(2 * quantum), \(4 * quantum), \(8 * quantum), \(16 * quantum) or \(24 * quantum) samples)")
        }
    }

    /// Throws unless `frameSize` is a positive multiple of 2.5 ms of at most 120 ms at `sampleRate`
    /// (what `opus_decode` takes for concealment and FEC, where it must be the exact duration that is missing).
    static func checkConcealFrameSize(_ frameSize: Int, sampleRate: Int32) throws(OpusError) {
        let quantum = Int(sampleRate) / 400
        guard frameSize > 0, frameSize % quantum == 0, frameSize <= 48 * quantum else {
            throw .badArgument("frameSize \(frameSize) is not a multiple of 2.5 ms (\(quantum) samples) between 2.5 and 120 ms at \(sampleRate) Hz")
        }
    }

    /// Throws unless `count` samples hold `frameSize` samples for each of `channels`.
    static func checkPCM(count: Int, frameSize: Int, channels: Int, what: String) throws(OpusError) {
        guard count >= frameSize * channels else {
            throw .badArgument("\(what) holds \(count) samples, fewer than frameSize \(frameSize) × \(channels) channel(s)")
        }
    }
}
