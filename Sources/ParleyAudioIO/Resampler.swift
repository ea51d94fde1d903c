import CSpeexDSP

/// libspeexdsp resampler (Int16, mono), for devices/files not at 48 kHz.
///
/// With `channels > 1` the samples are interleaved. Keeps filter state between calls, so feed a stream in pieces.
/// `process` does not allocate.
///
/// `@unchecked Sendable`: may be handed to another thread, but used by one thread at a time.
public final class Resampler: @unchecked Sendable {
    private let state: OpaquePointer
    private let channels: Int

    /// Creates a resampler from `inputRate` to `outputRate` Hz; `quality` runs from 0 (fast) to 10 (best).
    ///
    /// - Throws: `cannot create resampler from X Hz to Y Hz: <speex error>` for invalid rates or quality.
    public init(from inputRate: Int, to outputRate: Int, channels: Int = 1, quality: Int32 = 5) throws(AudioIOError) {
        var error: Int32 = 0
        guard inputRate > 0, outputRate > 0, channels > 0, inputRate <= Int(UInt32.max), outputRate <= Int(UInt32.max),
              let state = speex_resampler_init(UInt32(channels), UInt32(inputRate), UInt32(outputRate), quality, &error),
              error == 0 else {
            let reason = error != 0 ? String(cString: speex_resampler_strerror(error)) : "invalid arguments"
            throw AudioIOError("cannot create resampler from \(inputRate) Hz to \(outputRate) Hz (\(channels) channel(s), quality \(quality)): \(reason)")
        }
        self.state = state
        self.channels = channels
    }

    deinit {
        speex_resampler_destroy(state)
    }

    /// Resamples as much of `input` as fits into `output`; returns how many samples (Int16 values, i.e. frames × channels)
    /// were consumed and produced. Unconsumed input must be passed again.
    public func process(_ input: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>) -> (consumed: Int, produced: Int) {
        guard !input.isEmpty, !output.isEmpty else { return (0, 0) }
        var inFrames = UInt32(clamping: input.count / channels)
        var outFrames = UInt32(clamping: output.count / channels)
        if channels == 1 {
            speex_resampler_process_int(state, 0, input.baseAddress, &inFrames, output.baseAddress, &outFrames)
        } else {
            speex_resampler_process_interleaved_int(state, input.baseAddress, &inFrames, output.baseAddress, &outFrames)
        }
        return (Int(inFrames) * channels, Int(outFrames) * channels)
    }

    /// Input frames the filter delays by; feed this many zeros at the end of a stream to flush it.
    var inputLatency: Int { Int(speex_resampler_get_input_latency(state)) }

    /// Drops the filter's initial delay so output sample 0 lines up with input sample 0.
    func skipZeros() {
        speex_resampler_skip_zeros(state)
    }
}
