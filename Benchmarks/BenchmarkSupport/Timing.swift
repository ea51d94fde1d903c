import CAllocCounter
import Glibc
import ParleyRelayCore

/// Nanoseconds of CPU time consumed by the calling thread (`CLOCK_THREAD_CPUTIME_ID`): time other processes on the
/// shared machine take from us does not count; what our own code and the caches it misses cost does.
@inlinable
public func threadCPUNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Nanoseconds of `CLOCK_MONOTONIC` (wall time, only to report how long the program ran).
public func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Milliseconds since the Unix epoch from `CLOCK_REALTIME` (read once, so tokens and cookies verify).
public func unixMillisecondsNow() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// The time the relay core is told. It starts at the real time and moves only when the benchmark advances it
/// (as swift-nio's `EmbeddedEventLoop`), so the core sees 20 ms between a speaker's packets however fast the
/// loop runs, and mix deadlines fall due exactly when simulated time reaches them.
public struct ManualClock {
    /// A clock at the real wall time, monotonic time at an arbitrary origin.
    public init() {}
    private let originMonotonic: Int64 = 1_000_000_000_000
    private let originUnixMilliseconds = unixMillisecondsNow()
    /// Monotonic nanoseconds now.
    public private(set) var monotonic: Int64 = 1_000_000_000_000

    /// The moment to pass the core.
    public var now: Moment {
        Moment(monotonic: monotonic, unixMilliseconds: originUnixMilliseconds + (monotonic - originMonotonic) / 1_000_000)
    }

    /// Moves time forward to `instant` (never backwards).
    @inline(__always)
    public mutating func advance(to instant: Int64) { monotonic = max(monotonic, instant) }

    /// Moves time forward by `nanoseconds`.
    @inline(__always)
    public mutating func advance(by nanoseconds: Int64) { monotonic += nanoseconds }
}

/// The malloc-family call counter of `CAllocCounter` (counts every thread; the benchmark runs on one).
public enum Allocations {
    /// Calls counted so far (only while counting is on).
    @inline(__always)
    public static var count: UInt64 { parley_allocation_count() }

    /// Turns counting on or off.
    public static func counting(_ on: Bool) { parley_allocation_counting_enable(on ? 1 : 0) }
}

