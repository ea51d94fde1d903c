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
