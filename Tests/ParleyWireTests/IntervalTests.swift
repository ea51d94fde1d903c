import ParleyWire
import Testing

@Suite struct IntervalTests {
    @Test(arguments: [
        (Interval.seconds(15), 15_000_000_000),
        (.milliseconds(600), 600_000_000),
        (.microseconds(750), 750_000),
        (.nanoseconds(12), 12),
        (Interval(seconds: 1.5), 1_500_000_000),
        (Interval(seconds: 0.0000000004), 0),  // rounds to the nearest nanosecond
    ])
    func constructors(interval: Interval, nanoseconds: Int) {
        #expect(interval.nanoseconds == Int64(nanoseconds))
    }

    @Test func conversionsTruncateTowardZero() {
        #expect(Interval.nanoseconds(1_999_999).milliseconds == 1)
        #expect(Interval.nanoseconds(-1_999_999).milliseconds == -1)
        #expect(Interval.milliseconds(2_999).wholeSeconds == 2)
        #expect(Interval.milliseconds(250).seconds == 0.25)
    }

    @Test func arithmetic() {
        #expect(Interval.seconds(15) / 3 == .seconds(5))
        #expect(Interval.milliseconds(20) * 50 == .seconds(1))
        #expect(Interval.seconds(1) / Interval.milliseconds(20) == 50)
        #expect(-Interval.milliseconds(5) + .milliseconds(5) == .zero)
        #expect(min(Interval.seconds(5), .seconds(15) / 3) == .seconds(5))
    }

    @Test func instantsSubtractToIntervals() {
        let t = Instant(nanoseconds: 1_000)
        #expect((t + .milliseconds(20)) - t == .milliseconds(20))
        #expect(t - (t + .milliseconds(20)) == .milliseconds(-20))
        #expect(t + .milliseconds(1) > t)
        // "Never" timers: the distant past is overdue against any setting, and neither end wraps when moved.
        #expect(Instant.origin - Instant.distantPast > .seconds(1_000_000_000))
        #expect(Instant.distantPast - .seconds(1_000_000) < Instant.distantPast)
        #expect(Instant.distantFuture + .seconds(1_000_000) > Instant.distantFuture)
    }

    @Test(arguments: [
        (Interval.seconds(15), "15 s"), (.milliseconds(1_500), "1.5 s"), (.milliseconds(20), "20 ms"),
        (.microseconds(750), "750 µs"), (.nanoseconds(12), "12 ns"), (.milliseconds(-250), "-250 ms"),
        (.microseconds(1_005), "1.005 ms"), (.zero, "0 ns"),
    ])
    func description(interval: Interval, text: String) {
        #expect(interval.description == text)
    }
}
