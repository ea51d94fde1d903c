import ParleyRelay
import ParleyWire
import Testing

@Suite("Allocator trim schedule (worker loop): after sessions went, rarely, never under steady churn")
struct AllocatorTrimScheduleTests {
    /// The schedule's answers to a series of (sessions, time in s) readings; drop 100, interval 10 s.
    func decisions(_ readings: [(sessions: Int, second: Int64)]) -> [Bool] {
        var schedule = AllocatorTrimSchedule(drop: 100, interval: .seconds(10))
        return readings.map { schedule.shouldTrim(sessions: $0.sessions, now: .origin + .seconds($0.second)) }
    }

    @Test("a fall of `drop` sessions from the peak trims once; the next needs another fall and the interval")
    func afterAFall() {
        #expect(decisions([
            (0, 0),      // nothing ever held
            (500, 1),
            (401, 2),    // fell by 99
            (400, 3),    // by 100: trim
            (400, 4),    // the peak is now 400
            (250, 5),    // fell by 150, within the interval
            (250, 13),   // interval passed
        ]) == [false, false, false, true, false, false, true])
    }

    @Test("the last session going trims, whatever the drop; an empty worker does not trim again")
    func whenEmpty() {
        #expect(decisions([(3, 0), (0, 1), (0, 30), (2, 31), (0, 32), (1, 33), (0, 34)])
                == [false, true, false, false, true, false, false])
    }

    @Test("steady churn at a constant population never trims")
    func steadyChurn() {
        let readings = (0..<3_600).map { (sessions: 1_000 + ($0 % 2 == 0 ? 5 : -5), second: Int64($0)) }
        #expect(!decisions(readings).contains(true))
    }
}
