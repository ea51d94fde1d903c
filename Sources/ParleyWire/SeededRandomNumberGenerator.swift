// The one seeded generator of the project: cores take randomness as a parameter, and tests, benchmarks and the
// impairment proxy pass this one so a seed decides a run.

/// A deterministic generator for tests and benchmarks: SplitMix64 (Steele, Lea and Flood, 2014), 64 bits of
/// state, every seed a full-period sequence. Not for production: a relay passes `SystemRandomNumberGenerator`
/// (getrandom on Linux), because session secrets and connection ids come from it.
public struct SeededRandomNumberGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform double in [0, 1): the top 53 bits of `next()`.
    public mutating func unitInterval() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
