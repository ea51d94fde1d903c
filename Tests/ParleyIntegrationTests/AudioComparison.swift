import Foundation
import ParleyAudioIO

/// How well a recording holds a reference signal, after finding the delay between them.
struct AudioComparison {
    /// Delay of the recording behind the reference, in samples at 48 kHz.
    var lag: Int
    /// Correlation of the 10 ms energy envelopes at that delay (−1…1).
    var envelopeCorrelation: Double
    /// Normalised sample correlation over the loudest second at that delay (refined ±5 ms).
    var sampleCorrelation: Double
    /// Energy of the recording over the reference's span, relative to the reference, in dB.
    var energyRatioDB: Double
    /// Longest run of silence (10 ms frames under −50 dBFS) in the recording where the reference is loud, in ms.
    var longestGapMilliseconds: Int

    static func envelope(_ x: [Int16]) -> [Double] {
        stride(from: 0, to: x.count - 479, by: 480).map { start in
            var e = 0.0
            for i in start..<(start + 480) { e += Double(x[i]) * Double(x[i]) }
            return (e / 480).squareRoot()
        }
    }

    static func correlation(_ a: ArraySlice<Double>, _ b: ArraySlice<Double>) -> Double {
        let n = min(a.count, b.count)
        guard n > 1 else { return 0 }
        let a = Array(a.prefix(n)), b = Array(b.prefix(n))
        let ma = a.reduce(0, +) / Double(n), mb = b.reduce(0, +) / Double(n)
        var ab = 0.0, aa = 0.0, bb = 0.0
        for i in 0..<n { ab += (a[i] - ma) * (b[i] - mb); aa += (a[i] - ma) * (a[i] - ma); bb += (b[i] - mb) * (b[i] - mb) }
        return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
    }

    init(reference: [Int16], recording: [Int16], maxLagSeconds: Double = 3) {
        let re = Self.envelope(reference), ce = Self.envelope(recording)
        var best = (lag: 0, score: -2.0)
        for lag in 0...min(Int(maxLagSeconds * 100), max(0, ce.count - 10)) {
            let score = Self.correlation(re[...], ce[lag...])
            if score > best.score { best = (lag, score) }
        }
        envelopeCorrelation = best.score
        // Refine at sample level over the loudest second of the reference.
        var loudest = 0, loudestEnergy = 0.0
        for f in 0..<max(1, re.count - 100) {
            let e = re[f..<min(re.count, f + 100)].reduce(0) { $0 + $1 * $1 }
            if e > loudestEnergy { loudestEnergy = e; loudest = f }
        }
        let start = loudest * 480, length = min(48_000, reference.count - start)
        var bestSample = (lag: best.lag * 480, score: -2.0)
        for lag in stride(from: max(0, best.lag * 480 - 480), through: best.lag * 480 + 480, by: 1) {
            guard start + lag + length <= recording.count, length > 0 else { continue }
            var ab = 0.0, aa = 0.0, bb = 0.0
            for i in stride(from: 0, to: length, by: 2) {
                let x = Double(reference[start + i]), y = Double(recording[start + lag + i])
                ab += x * y; aa += x * x; bb += y * y
            }
            let score = aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
            if score > bestSample.score { bestSample = (lag, score) }
        }
        lag = bestSample.lag
        sampleCorrelation = bestSample.score
        let offset = best.lag
        var er = 0.0, ec = 0.0, gap = 0, longest = 0
        for f in 0..<re.count where f + offset < ce.count {
            er += re[f] * re[f]
            ec += ce[f + offset] * ce[f + offset]
            if re[f] > 1_000 && ce[f + offset] < 100 { gap += 1; longest = max(longest, gap) } else { gap = 0 }
        }
        energyRatioDB = er > 0 && ec > 0 ? 10 * log10(ec / er) : -120
        longestGapMilliseconds = longest * 10
    }
}

/// Speech for tests, made now with espeak-ng (installed by `make test`).
func makeSpeech(_ text: String, path: String) throws -> [Int16] {
    let p = Process()
    p.executableURL = try ExternalProgram.espeakNG.url()
    p.arguments = ["-w", path, text]
    try p.run()
    p.waitUntilExit()
    return try WAVReader(path: path).readAllMono48k()
}
