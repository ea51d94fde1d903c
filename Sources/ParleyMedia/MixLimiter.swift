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

/// Mixes 20 ms frames of several sources into one sum, and gives each source its minus-one (the mix without
/// itself) through its own limiter. Buffers are allocated once; `frameSamples` per channel, mono.
public final class AudioMixBus {
    /// Samples per frame.
    public let frameSamples: Int
    private let sum: UnsafeMutablePointer<Int32>
    private let scratch: UnsafeMutablePointer<Int32>
    /// Sources added since the last `clear()`.
    public private(set) var sourceCount = 0

    /// A bus for frames of `frameSamples`.
    public init(frameSamples: Int = 960) {
        self.frameSamples = frameSamples
        sum = .allocate(capacity: frameSamples)
        sum.initialize(repeating: 0, count: frameSamples)
        scratch = .allocate(capacity: frameSamples)
        scratch.initialize(repeating: 0, count: frameSamples)
    }

    deinit {
        sum.deallocate()
        scratch.deallocate()
    }

    /// Starts a new frame.
    public func clear() {
        sum.update(repeating: 0, count: frameSamples)
        sourceCount = 0
    }

    /// Adds one source's frame.
    public func add(_ pcm: UnsafePointer<Int16>) {
        for i in 0..<frameSamples { sum[i] &+= Int32(pcm[i]) }
        sourceCount += 1
    }

    /// The whole mix through `limiter`.
    public func mix(into out: UnsafeMutablePointer<Int16>, limiter: inout MixLimiter) {
        limiter.process(sum, into: out, count: frameSamples)
    }

    /// The mix without `own` (a source previously added) through `limiter`: what that source hears.
    public func mix(excluding own: UnsafePointer<Int16>, into out: UnsafeMutablePointer<Int16>, limiter: inout MixLimiter) {
        for i in 0..<frameSamples { scratch[i] = sum[i] &- Int32(own[i]) }
        limiter.process(scratch, into: out, count: frameSamples)
    }
}
