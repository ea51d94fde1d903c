import COpus
import Foundation

/// A test audio source: a sine tone encoded with libopus (48 kHz mono, 20 ms, complexity 5), with the
/// RFC 6464 level of each frame. The full audio pipeline (capture, WAV, DSP) belongs to the client issue.
final class ToneSource {
    static let frameSamples = 960
    private let encoder: OpaquePointer
    private let frequency: Double
    private let amplitude: Double
    private var phase = 0.0
    private var pcm = [Int16](repeating: 0, count: frameSamples)

    init(frequency: Double, amplitude: Double) {
        var error: Int32 = 0
        guard let e = opus_encoder_create(48_000, 1, OPUS_APPLICATION_VOIP, &error), error == OPUS_OK else {
            fail("cannot create the Opus encoder: \(String(cString: opus_strerror(error)))", code: 1)
        }
        encoder = e
        _ = parley_opus_set_complexity(e, 5)
        _ = parley_opus_set_bitrate(e, 32_000)
        _ = parley_opus_set_inband_fec(e, 1)
        _ = parley_opus_set_packet_loss_perc(e, 5)
        self.frequency = frequency
        self.amplitude = amplitude
    }

    deinit { opus_encoder_destroy(encoder) }

    /// Encodes the next 20 ms into `out`; returns the byte count and the frame's level (0 loud … 127 silent).
    func next(into out: UnsafeMutableRawBufferPointer) -> (count: Int, level: UInt8) {
        var sumSquares = 0.0
        let step = 2 * Double.pi * frequency / 48_000
        for i in 0..<Self.frameSamples {
            let v = amplitude * sin(phase)
            phase += step
            if phase > 2 * Double.pi { phase -= 2 * Double.pi }
            pcm[i] = Int16(max(-32767, min(32767, v * 32767)))
            sumSquares += v * v
        }
        let rms = (sumSquares / Double(Self.frameSamples)).squareRoot()
        let dbov = rms > 0 ? 20 * log10(rms) : -127
        let level = UInt8(max(0, min(127, -dbov.rounded())))
        let n = pcm.withUnsafeBufferPointer { p in
            opus_encode(encoder, p.baseAddress!, Int32(Self.frameSamples), out.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(out.count))
        }
        return (max(0, Int(n)), level)
    }
}
