import Glibc
import ParleyNet
import Testing

@Suite("DatagramFailureLog: one line per kind per 10 s, with the count since the last line")
struct DatagramFailureLogTests {
    static let second: Int64 = 1_000_000_000
    static let start: Int64 = 5 * second   // a monotonic clock that does not start at 0

    @Test("nothing failed: no lines")
    func quiet() {
        var log = DatagramFailureLog()
        #expect(log.lines(for: DatagramCounters(), now: Self.start).isEmpty)
    }

    @Test("the first failure of a kind is logged at once; more within 10 s wait; the next line carries them all")
    func rateLimited() {
        var log = DatagramFailureLog()
        var counters = DatagramCounters()
        counters.countSendFailure(.noBuffers)
        #expect(log.lines(for: counters, now: Self.start) == ["send failures: 1 no_buffers"])
        for _ in 0..<41 { counters.countSendFailure(.noBuffers) }
        #expect(log.lines(for: counters, now: Self.start + 1 * Self.second).isEmpty)
        #expect(log.lines(for: counters, now: Self.start + 9 * Self.second).isEmpty)
        // Nothing new failed since, but the 41 are still owed a line once the 10 s have passed.
        #expect(log.lines(for: counters, now: Self.start + 10 * Self.second) == ["send failures: 41 no_buffers in the last 10 s"])
        #expect(log.lines(for: counters, now: Self.start + 30 * Self.second).isEmpty)
        counters.countSendFailure(.noBuffers)
        #expect(log.lines(for: counters, now: Self.start + 31 * Self.second) == ["send failures: 1 no_buffers in the last 21 s"])
    }

    @Test("kinds are limited apart: a new kind is logged at once while another waits")
    func perKind() {
        var log = DatagramFailureLog()
        var counters = DatagramCounters()
        counters.countSendFailure(.connectionRefused)
        #expect(log.lines(for: counters, now: Self.start).count == 1)
        counters.countSendFailure(.connectionRefused)
        counters.countSendFailure(.messageTooLarge)
        #expect(log.lines(for: counters, now: Self.start + Self.second) == ["send failures: 1 message_too_large"])
        #expect(log.lines(for: counters, now: Self.start + 10 * Self.second) == ["send failures: 1 connection_refused in the last 10 s"])
    }

    @Test("drops, receive failures and `other` with its errno each get their own line")
    func everyCounter() {
        var log = DatagramFailureLog()
        var counters = DatagramCounters()
        counters.countDrop(.queueFull)
        counters.countDrop(.queueFull)
        counters.countReceiveFailure(.connectionRefused)
        counters.countSendFailure(.other(EINVAL))
        #expect(log.lines(for: counters, now: Self.start) == [
            "send failures: 1 other (errno \(EINVAL): Invalid argument)",
            "send drops: 2 queue_full",
            "receive failures: 1 connection_refused",
        ])
        #expect(log.lines(for: counters, now: Self.start + 60 * Self.second).isEmpty)
    }
}
