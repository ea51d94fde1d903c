import BenchmarkSupport
import CAllocCounter
import Glibc
import ParleyRelayCore

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
