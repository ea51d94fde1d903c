/// A peak limiter for 32-bit mix sums: the gain falls at once to keep a block's peak under the ceiling and
/// recovers slowly (about 6 dB per 100 ms), ramping linearly across each block so it never steps. Anything the
/// ramp still lets through is saturated, never wrapped.
public struct MixLimiter: Sendable {
    /// Output ceiling (−0.5 dBFS).
    public static let ceiling: Float = 30_934
    /// Gain applied at the end of the last block.
    public private(set) var gain: Float = 1
    /// Per-block recovery factor toward unity.
    public let release: Float

    /// A limiter at unity gain. `release` ≈ 1.122 per 20 ms block recovers 1 dB per block.
    public init(release: Float = 1.122) { self.release = release }

    /// Limits `count` summed samples from `sum` into `out`.
    public mutating func process(_ sum: UnsafePointer<Int32>, into out: UnsafeMutablePointer<Int16>, count: Int) {
        var peak: Int32 = 0
        for i in 0..<count {
            let v = sum[i]
            let a = v == .min ? .max : abs(v)
            if a > peak { peak = a }
        }
        let needed: Float = peak > 0 ? min(1, Self.ceiling / Float(peak)) : 1
        let target = min(needed, 1, gain * release)
        // Attack: the whole block at the lower gain at once; release: ramp up from the old gain across the block.
        let from = target < gain ? target : gain
        gain = target
        if from == 1, target == 1 {
            // Unity gain (the common case): saturate only; a loop the compiler vectorises.
            for i in 0..<count { out[i] = Int16(clamping: sum[i]) }
            return
        }
        let step = count > 1 ? (target - from) / Float(count - 1) : 0
        var g = from
        for i in 0..<count {
            let v = max(-32_768, min(32_767, Float(sum[i]) * g))
            out[i] = Int16(v + (v < 0 ? -0.5 : 0.5))  // round half away from zero; the clamp keeps it in range
            g += step
        }
    }
}
