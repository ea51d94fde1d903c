import Foundation
import ParleyMedia

/// Deterministic test audio and the measurements the Opus tests make on it.
enum OpusTestSignal {
    /// A speech-like signal: 12 harmonics of a pitch gliding slowly (0.3 Hz) through 120–220 Hz with a spectral tilt, a syllable-rate
    /// amplitude envelope (about 4 Hz), and a little white noise (about −45 dB) from a fixed-seed generator.
    /// Peaks stay below about −6 dBFS. `seconds` at `sampleRate`, `channels` interleaved (the right channel,
    /// if any, is the same voice a fifth higher so the channels differ).
    static func speech(seconds: Double, sampleRate: Int = 48_000, channels: Int = 1, seed: UInt64 = 0x5EED) -> [Int16] {
        let count = Int(seconds * Double(sampleRate))
        var out = [Int16](repeating: 0, count: count * channels)
        var rng = seed
        for c in 0..<channels {
            var phase = 0.0
            let pitchScale = c == 0 ? 1.0 : 1.5
            for i in 0..<count {
                let t = Double(i) / Double(sampleRate)
                let pitch = pitchScale * (170 + 50 * sin(2 * .pi * 0.3 * t))
                phase += 2 * .pi * pitch / Double(sampleRate)
                if phase > 2 * .pi { phase -= 2 * .pi }
                var voiced = 0.0
                for k in 1...12 where Double(k) * pitch < Double(sampleRate) / 2 - 500 {
                    // A crude formant at ~700 Hz over a 1/k tilt.
                    let f = Double(k) * pitch
                    let formant = 1 + 2 * exp(-((f - 700) * (f - 700)) / (2 * 250 * 250))
                    voiced += formant / Double(k) * sin(Double(k) * phase)
                }
                let envelope = 0.25 + 0.75 * pow(sin(.pi * 4 * t + Double(c)), 2)
                rng = rng &* 6364136223846793005 &+ 1442695040888963407
                let noise = Double(Int64(bitPattern: rng) >> 11) / Double(1 << 52)  // −1…1
                let v = 3_000 * envelope * voiced + 150 * noise
                out[i * channels + c] = Int16(max(-32_767, min(32_767, v.rounded())))
            }
        }
        return out
    }

    /// Σx² over `a[range]` as Double.
    static func energy(_ a: ArraySlice<Int16>) -> Double {
        a.reduce(0) { $0 + Double($1) * Double($1) }
    }

    /// Normalised correlation of two equally long sequences: Σab / √(Σa² Σb²).
    static func correlation(_ a: ArraySlice<Int16>, _ b: ArraySlice<Int16>) -> Double {
        precondition(a.count == b.count)
        var ab = 0.0, aa = 0.0, bb = 0.0
        for (x, y) in zip(a, b) {
            let x = Double(x), y = Double(y)
            ab += x * y; aa += x * x; bb += y * y
        }
        return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
    }

    /// The lag in `lags` at which `decoded[window + lag]` best matches `original[window]` (the codec delay).
    static func bestLag(original: [Int16], decoded: [Int16], window: Range<Int>, lags: Range<Int>) -> (lag: Int, correlation: Double) {
        // Raw pointers keep this affordable in debug builds (960 lags × the window).
        var best = (lag: lags.lowerBound, correlation: -2.0)
        original.withUnsafeBufferPointer { a in
            decoded.withUnsafeBufferPointer { b in
                var aa = 0.0
                for i in window { aa += Double(a[i]) * Double(a[i]) }
                for lag in lags {
                    var ab = 0.0, bb = 0.0
                    for i in window {
                        let x = Double(a[i]), y = Double(b[i + lag])
                        ab += x * y; bb += y * y
                    }
                    let r = aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
                    if r > best.correlation { best = (lag, r) }
                }
            }
        }
        return best
    }

    /// Every `channels`-th sample starting at `channel`.
    static func channel(_ c: Int, of interleaved: [Int16], channels: Int) -> [Int16] {
        stride(from: c, to: interleaved.count, by: channels).map { interleaved[$0] }
    }
}

/// Encodes `pcm` frame by frame with `encoder` and decodes each packet with `decoder`; returns the packets and the decoded audio.
func opusRoundTrip(_ pcm: [Int16], encoder: OpusEncoder, decoder: OpusDecoder, frameSize: Int) throws -> (packets: [[UInt8]], decoded: [Int16]) {
    let channels = encoder.channels
    let frames = pcm.count / (frameSize * channels)
    var packets: [[UInt8]] = []
    var decoded = [Int16](repeating: 0, count: frames * frameSize * channels)
    var packet = [UInt8](repeating: 0, count: 4_000)
    for f in 0..<frames {
        let n = try pcm.withUnsafeBufferPointer { p in
            try packet.withUnsafeMutableBytes { out in
                try encoder.encode(UnsafeBufferPointer(rebasing: p[(f * frameSize * channels)...]), frameSize: frameSize, into: out)
            }
        }
        let bytes = Array(packet[0..<n])
        packets.append(bytes)
        let got = try bytes.withUnsafeBytes { b in
            try decoded.withUnsafeMutableBufferPointer { d in
                try decoder.decode(b, into: UnsafeMutableBufferPointer(rebasing: d[(f * frameSize * channels)...]))
            }
        }
        precondition(got == frameSize, "decoded \(got) samples, expected \(frameSize)")
    }
    return (packets, decoded)
}
