import CAllocCounter
import Glibc
import ParleyRelayCore

/// Nanoseconds of CPU time consumed by the calling thread (`CLOCK_THREAD_CPUTIME_ID`): time other processes on the
/// shared machine take from us does not count; what our own code and the caches it misses cost does.
@inline(__always)
func threadCPUNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Nanoseconds of `CLOCK_MONOTONIC` (wall time, only to report how long the program ran).
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

/// The time the relay core is told. It starts at the real time and moves only when the benchmark advances it
/// (as swift-nio's `EmbeddedEventLoop`), so the core sees 20 ms between a speaker's packets however fast the
/// loop runs, and mix deadlines fall due exactly when simulated time reaches them.
struct ManualClock {
    private let originMonotonic: Int64 = 1_000_000_000_000
    private let originUnixMilliseconds = unixMillisecondsNow()
    /// Monotonic nanoseconds now.
    private(set) var monotonic: Int64 = 1_000_000_000_000

    /// The moment to pass the core.
    var now: Moment {
        Moment(monotonic: monotonic, unixMilliseconds: originUnixMilliseconds + (monotonic - originMonotonic) / 1_000_000)
    }

    /// Moves time forward to `instant` (never backwards).
    @inline(__always)
    mutating func advance(to instant: Int64) { monotonic = max(monotonic, instant) }

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

/// CPU time and allocations of one kind of core call, summed over the measured window.
struct CallCost {
    /// Calls timed.
    var calls = 0
    /// Thread CPU nanoseconds inside them.
    var nanoseconds: Int64 = 0
    /// malloc-family calls inside them.
    var allocations: UInt64 = 0

    /// Adds another window's cost.
    mutating func add(_ other: CallCost) {
        calls += other.calls
        nanoseconds += other.nanoseconds
        allocations += other.allocations
    }
}

/// Runs `body` and, when `into` is non-nil, adds its thread CPU time and allocations there. Only core calls go
/// through here: the simulated clients' work between them is never on the clock.
@inline(__always)
func measure(_ cost: inout CallCost, if measuring: Bool, _ body: () -> Void) {
    guard measuring else { return body() }
    let allocationsBefore = Allocations.count
    let start = threadCPUNanoseconds()
    body()
    cost.nanoseconds += threadCPUNanoseconds() - start
    cost.allocations += Allocations.count - allocationsBefore
    cost.calls += 1
}

/// The cost of one empty measured span (two `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` calls and two counter
/// reads): the median of many, in ns. Reported, not subtracted.
func emptySpanNanoseconds() -> Double {
    var samples: [Int64] = []
    samples.reserveCapacity(2001)
    for _ in 0..<2001 {
        var cost = CallCost()
        measure(&cost, if: true) {}
        samples.append(cost.nanoseconds)
    }
    samples.sort()
    return Double(samples[samples.count / 2])
}
