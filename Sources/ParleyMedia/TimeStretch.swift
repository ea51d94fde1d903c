// Pitch-synchronous time-stretching (WSOLA): remove or insert one pitch period with a cross-fade, so the delay
// moves by 2.5–15 ms at a time without an audible seam; near-silent audio is shortened a whole frame at a time.
import Glibc

/// Time-stretching of 48 kHz mono audio in place. Pure functions over caller-owned samples; no allocation.
public enum TimeStretch {
    /// Shortest pitch period searched (2.5 ms at 48 kHz).
    public static let minimumPeriod = 120
    /// Longest pitch period searched (15 ms at 48 kHz).
    public static let maximumPeriod = 720
    /// Length of the compared windows (10 ms).
    static let window = 480
    /// Normalised correlation a period must reach before it is cut or repeated.
    public static let minimumCorrelation = 0.9
    /// Mean square below which audio counts as near-silent (about −40 dBFS): it can be shortened anywhere.
    static let quietMeanSquare = 330.0 * 330.0

    /// The period `T` in `minimumPeriod…maximumPeriod` for which `x[start..<start+window]` best matches
    /// `x[start+T..<start+T+window]`, with that normalised correlation. Searched on a 4:1 decimation (every
    /// fourth sample) and refined at full rate. Needs `start + maximumPeriod + window` samples.
    static func bestPeriod(_ x: UnsafePointer<Int16>, start: Int) -> (period: Int, correlation: Double) {
        func correlation(_ t: Int, step: Int) -> Double {
            var ab = 0.0, aa = 0.0, bb = 0.0
            var k = 0
            while k < window {
                let a = Double(x[start + k]), b = Double(x[start + t + k])
                ab += a * b; aa += a * a; bb += b * b
                k += step
            }
            return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
        }
        var best = minimumPeriod, bestScore = -2.0
        var t = minimumPeriod
        while t <= maximumPeriod {
            let c = correlation(t, step: 4)
            if c > bestScore { bestScore = c; best = t }
            t += 4
        }
        let coarse = best
        for t in max(minimumPeriod, coarse - 3)...min(maximumPeriod, coarse + 3) {
            let c = correlation(t, step: 1)
            if t == coarse - 3 || c > bestScore { bestScore = c; best = t }
        }
        return (best, bestScore)
    }

    /// Whether `count` samples are near-silent (below about −40 dBFS).
    public static func isQuiet(_ x: UnsafePointer<Int16>, count: Int) -> Bool {
        meanSquare(x, count: count) < quietMeanSquare
    }

    /// Mean square of `count` samples.
    static func meanSquare(_ x: UnsafePointer<Int16>, count: Int) -> Double {
        var sum = 0.0
        for i in 0..<count { let v = Double(x[i]); sum += v * v }
        return count > 0 ? sum / Double(count) : 0
    }

    /// Shortens `x` (`count` samples, at least `maximumPeriod·2 + window + 240`) in place by one pitch period:
    /// `x[s..<s+T]` is cross-faded into `x[s+T..<s+2T]` and the rest moved up. Near-silent audio loses
    /// `count/2` samples instead (two frames merged into one). Returns the new length; `count` when the audio is
    /// neither periodic nor quiet enough to cut without a seam, or is not quiet and `pitchCut` is false.
    public static func shorten(_ x: UnsafeMutablePointer<Int16>, count: Int, pitchCut: Bool = true) -> Int {
        if meanSquare(x, count: count) < quietMeanSquare {
            let half = count / 2
            TimeCompression.merge(x, x + half, into: x, count: half)
            return half
        }
        guard pitchCut else { return count }
        let start = 240
        let (t, c) = bestPeriod(x, start: start)
        guard c >= minimumCorrelation else { return count }
        crossFade(from: x + start, to: x + start + t, into: x + start, count: t)
        memmove(x + start + t, x + start + 2 * t, (count - start - 2 * t) * MemoryLayout<Int16>.stride)
        return count - t
    }

    /// Lengthens the audio ending at `end` (with at least `maximumPeriod + window` samples before it) by one
    /// pitch period: appends `x[end−2T..<end−T]` cross-faded into `x[end−T..<end]`, which continues the last
    /// period and joins whatever follows. Returns the samples appended (0 when the audio is neither periodic
    /// nor quiet). `x` must have room for `maximumPeriod` more samples at `end`.
    public static func lengthen(_ x: UnsafeMutablePointer<Int16>, end: Int) -> Int {
        let start = end - window - maximumPeriod
        guard start >= 0 else { return 0 }
        let quiet = meanSquare(x + end - window, count: window) < quietMeanSquare
        var (t, c) = bestPeriod(x, start: start)
        if quiet { t = window; c = 1 }
        guard c >= minimumCorrelation, end >= 2 * t else { return 0 }
        crossFade(from: x + end - 2 * t, to: x + end - t, into: x + end, count: t)
        return t
    }

    /// `out[i] = a[i]·(1 − w) + b[i]·w` with a raised-cosine `w` rising from 0 to 1 over `count` samples.
    /// `out` may be `a`.
    static func crossFade(from a: UnsafePointer<Int16>, to b: UnsafePointer<Int16>, into out: UnsafeMutablePointer<Int16>, count: Int) {
        for i in 0..<count {
            let w = 0.5 - 0.5 * cos(Double.pi * (Double(i) + 0.5) / Double(count))
            let v = Double(a[i]) * (1 - w) + Double(b[i]) * w
            out[i] = Int16(max(-32_768, min(32_767, v.rounded())))
        }
    }
}

/// Time-compression of two consecutive frames into one: the output starts as the first frame and ends as the
/// second, so it joins both neighbours without a seam, with a 5 ms raised-cosine cross-fade placed where the two
/// frames are most alike (highest normalised correlation). Used on near-silent audio, where the seam is inaudible.
public enum TimeCompression {
    /// Merges `a` and `b` (each `count` samples) into `out` (`count` samples). `out` may be `a`.
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
