import Glibc

/// The benchmark's input: the same speech-like signal the ParleyMedia tests use — 12 harmonics of a pitch gliding
/// through 120–220 Hz at 0.3 Hz with a formant near 700 Hz, a 4 Hz syllable envelope and −45 dB of seeded noise.
enum SpeechSignal {
    /// `seconds` of 48 kHz mono S16.
    static func make(seconds: Double) -> [Int16] {
        let sampleRate = 48_000.0
        let count = Int(seconds * sampleRate)
        var out = [Int16](repeating: 0, count: count)
        var rng: UInt64 = 0x5EED
        var phase = 0.0
        for i in 0..<count {
            let t = Double(i) / sampleRate
            let pitch = 170 + 50 * sin(2 * .pi * 0.3 * t)
            phase += 2 * .pi * pitch / sampleRate
            if phase > 2 * .pi { phase -= 2 * .pi }
            var voiced = 0.0
            for k in 1...12 {
                let f = Double(k) * pitch
                let formant = 1 + 2 * exp(-((f - 700) * (f - 700)) / (2 * 250 * 250))
                voiced += formant / Double(k) * sin(Double(k) * phase)
            }
            let envelope = 0.25 + 0.75 * pow(sin(.pi * 4 * t), 2)
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            let noise = Double(Int64(bitPattern: rng) >> 11) / Double(1 << 52)
            out[i] = Int16(max(-32_767, min(32_767, (3_000 * envelope * voiced + 150 * noise).rounded())))
        }
        return out
    }
}

/// Nanoseconds of CPU time consumed by the calling thread (`CLOCK_THREAD_CPUTIME_ID`): time other processes on a
/// shared machine take from us does not count, only what our own code and the caches it misses cost.
@inline(__always)
func threadCPUNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// The median of `values` (the mean of the middle two for an even count).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
