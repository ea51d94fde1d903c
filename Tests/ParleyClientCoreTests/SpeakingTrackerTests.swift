// Who is speaking, from the levels of received streams: the relay's rules (level ≤ 60 is speech, 600 ms hold).
import Testing
import ParleyClientCore
import ParleyWire

@Suite("Speaking tracker")
struct SpeakingTrackerTests {
    let ms = Interval.milliseconds(1)

    @Test func speechStartsAtOnceAndEndsAfterTheHold() {
        var t = SpeakingTracker()
        #expect(t.update(now: t0) == nil)                                   // nobody, and nobody before
        t.observe(ssrc: 7, level: 30, payloadBytes: 80, now: t0)
        #expect(t.update(now: t0) == [.init(ssrc: 7, level: 30)])
        t.observe(ssrc: 7, level: 127, payloadBytes: 3, now: t0 + 20 * ms)       // silence does not refresh
        #expect(t.update(now: t0 + 600 * ms) == nil)                            // still within the hold
        #expect(t.update(now: t0 + 601 * ms) == [])                             // the hold ran out
        #expect(t.current.isEmpty)
    }

    @Test func levelsAloneDoNotReportAChangeAndTheLoudestComesFirst() {
        var t = SpeakingTracker()
        t.observe(ssrc: 1, level: 50, payloadBytes: 80, now: t0)
        t.observe(ssrc: 2, level: 20, payloadBytes: 80, now: t0)
        #expect(t.update(now: t0)?.map(\.ssrc) == [2, 1])
        t.observe(ssrc: 1, level: 10, payloadBytes: 80, now: t0 + 300 * ms)
        #expect(t.update(now: t0 + 300 * ms) == nil)                            // same set
        #expect(t.current.map(\.ssrc) == [1, 2])                           // 1 is louder now
    }

    @Test func quietStreamsAndForgottenOnesAreNotSpeaking() {
        var t = SpeakingTracker()
        t.observe(ssrc: 1, level: 61, payloadBytes: 80, now: t0)            // under speech level
        t.observe(ssrc: 2, level: nil, payloadBytes: 3, now: t0)            // no level, DTX-sized
        #expect(t.update(now: t0) == nil)
        t.observe(ssrc: 3, level: nil, payloadBytes: 80, now: t0)           // no level, full-sized: speech
        #expect(t.update(now: t0)?.map(\.ssrc) == [3])
        t.forget(ssrc: 3)
        #expect(t.update(now: t0 + 20 * ms) == [])
    }
}
