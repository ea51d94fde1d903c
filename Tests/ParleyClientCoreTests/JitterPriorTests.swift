// Where a stream's jitter buffer starts, from the pings' round trips at join.
import ParleyClientCore
import ParleyWire
import Testing

@Suite("Jitter prior from the pings at join")
struct JitterPriorTests {
    static func rtts(_ ms: [Int64]) -> [Interval] { ms.map { .milliseconds($0) } }

    @Test("too few round trips give no prior")
    func tooFew() {
        #expect(JitterPrior.delay(roundTrips: Self.rtts([40, 90, 60])) == nil)
    }

    @Test("a path varying by less than a frame starts at its spread (0 on a clean path); the largest is left out")
    func steady() {
        #expect(JitterPrior.delay(roundTrips: Self.rtts([1, 1, 1, 1])) == .zero)
        #expect(JitterPrior.delay(roundTrips: Self.rtts([40, 52, 44, 47, 41])) == .milliseconds(7))
        // One delayed ping (a radio's scan, a busy relay) does not decide.
        #expect(JitterPrior.delay(roundTrips: Self.rtts([40, 42, 41, 43, 140, 40])) == .milliseconds(3))
    }

    @Test("a path varying by a frame or more starts with room for a repair: spread, fastest round trip and a frame")
    func jittery() {
        #expect(JitterPrior.delay(roundTrips: Self.rtts([60, 75, 90, 62, 95])) == .milliseconds(30 + 60 + 20))
    }

    @Test("with RED (two frames back) a jittery path's repair is those frames, with no round trip")
    func jitteryWithRedundancy() {
        #expect(JitterPrior.delay(roundTrips: Self.rtts([60, 75, 90, 62, 95]), redundancy: 2) == .milliseconds(30 + 40))
        #expect(JitterPrior.delay(roundTrips: Self.rtts([40, 52, 44, 47, 41]), redundancy: 2) == .milliseconds(7))
    }

    @Test("the prior is capped; round trips that cannot be (negative, over 10 s) are ignored")
    func bounded() {
        #expect(JitterPrior.delay(roundTrips: Self.rtts([60, 900, 70, 65, 800])) == JitterPrior.maximum)
        #expect(JitterPrior.delay(roundTrips: Self.rtts([-5_000, 40, 41, 42])) == nil)
        #expect(JitterPrior.delay(roundTrips: Self.rtts([20_000, 40, 41, 42, 43])) == .milliseconds(2))
    }
}
