import ParleyRelay
import Testing

/// `DurationHistogram`: the worker's mix times as Prometheus buckets (`WorkerSnapshot`).
@Suite("Duration histogram: Prometheus buckets of the worker's mix times")
struct DurationHistogramTests {
    @Test("histogram buckets: a duration lands in the first bound at or above it")
    func histogram() {
        var h = DurationHistogram()
        h.observe(nanoseconds: 40_000)     // 40 µs ≤ 50 µs
        h.observe(nanoseconds: 300_000)    // 300 µs ≤ 500 µs
        h.observe(nanoseconds: 1_000_000_000)  // past every bound: only in +Inf
        #expect(h.buckets[0] == 1 && h.buckets[3] == 1)
        #expect(h.buckets.reduce(0, +) == 2 && h.count == 3)
    }
}
