import CAllocCounter
import Glibc
import ParleyRelayCore

/// Nanoseconds of `CLOCK_MONOTONIC`: what the benchmark times itself with.
@inline(__always)
func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Milliseconds since the Unix epoch from `CLOCK_REALTIME` (read once, so tokens and cookies verify).
func unixMillisecondsNow() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// The time the relay core is told. It starts at the real time and moves only when the benchmark advances
/// it (as swift-nio's `EmbeddedEventLoop`), so the core sees 20 ms between a speaker's packets however fast
/// the loop runs.
struct ManualClock {
    private let originMonotonic: Int64 = 1_000_000_000_000
    private let originUnixMilliseconds = unixMillisecondsNow()
    /// Monotonic nanoseconds now.
    private(set) var monotonic: Int64 = 1_000_000_000_000

    /// The moment to pass the core.
    var now: Moment {
        Moment(monotonic: monotonic, unixMilliseconds: originUnixMilliseconds + (monotonic - originMonotonic) / 1_000_000)
    }

    /// Moves time forward by `nanoseconds`.
    @inline(__always)
    mutating func advance(by nanoseconds: Int64) { monotonic += nanoseconds }
}

/// The malloc-family call counter of `CAllocCounter` (counts every thread; the benchmark runs on one).
enum Allocations {
    /// Calls counted so far (only while counting is on).
    @inline(__always)
    static var count: UInt64 { parley_allocation_count() }

    /// Turns counting on or off.
    static func counting(_ on: Bool) { parley_allocation_counting_enable(on ? 1 : 0) }
}
