import BenchmarkSupport

/// One timed loop: thread CPU time, packets, allocations.
struct Timing {
    var nanoseconds: Int64 = 0
    var packets = 0
    var allocations: UInt64 = 0

    /// µs of CPU per packet.
    var microsecondsPerPacket: Double { Double(nanoseconds) / 1000 / Double(max(1, packets)) }

    /// Adds another timed stretch.
    static func += (lhs: inout Timing, rhs: Timing) {
        lhs.nanoseconds += rhs.nanoseconds
        lhs.packets += rhs.packets
        lhs.allocations += rhs.allocations
    }
}

/// Times `body` over `packets` iterations (it is handed the iteration number), counting allocations.
@inline(__always)
func timed(_ packets: Int, _ body: (Int) -> Void) -> Timing {
    let allocationsBefore = Allocations.count
    let start = threadCPUNanoseconds()
    for i in 0..<packets { body(i) }
    let nanoseconds = threadCPUNanoseconds() - start
    return Timing(nanoseconds: nanoseconds, packets: packets, allocations: Allocations.count - allocationsBefore)
}

/// The run with the median µs per packet (the lower middle one for an even count).
func median(_ runs: [Timing]) -> Timing {
    runs.sorted { $0.microsecondsPerPacket < $1.microsecondsPerPacket }[(runs.count - 1) / 2]
}

/// Allocations per packet over all runs together.
func allocationsPerPacket(_ runs: [Timing]) -> Double {
    Double(runs.reduce(0) { $0 + $1.allocations }) / Double(max(1, runs.reduce(0) { $0 + $1.packets }))
}
