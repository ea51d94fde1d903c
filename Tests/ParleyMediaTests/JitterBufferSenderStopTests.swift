// A sender that simply stops (no DTX frame, no BYE; or a BYE) is not a loss: the buffer conceals at most while it
// cannot yet tell (`JitterBuffer.senderSilence`), then plays silence, and counts none of it as concealed.
import ParleyMedia
import ParleyWire
import Testing

@Suite("A sender that stops is silence, not loss")
struct JitterBufferSenderStopTests {
    static let waitingFrames = Int(JitterBuffer.senderSilence.milliseconds / 20)

    @Test("a clean stream that stops: a few frames concealed while waiting, then silence; none counted as concealed")
    func senderStops() {
        let h = JitterHarness()
        h.send(stream(count: 100))
        h.run(pulls: 100 + 150)  // 3 s past the end
        #expect(h.playedSequences == (0..<100).map { UInt16($0) })
        let last = h.decisions.lastIndex { !$0.sequences.isEmpty }!
        let after = h.decisions[(last + 1)...]
        #expect(after.filter { $0 == .conceal }.count <= Self.waitingFrames)
        #expect(after.dropFirst(Self.waitingFrames + 10).allSatisfy { $0 == .silence })
        #expect(after.count > Self.waitingFrames + 100)
        let s = h.buffer.stats
        #expect(s.concealedFrames == 0 && s.concealmentEvents == 0)
        #expect(s.senderStops == 1)
    }

    @Test("a sender that pauses without DTX and resumes with the next sequence numbers is played whole")
    func pauseWithoutDTX() {
        let h = JitterHarness()
        h.send(stream(count: 50))
        // One second later, the next sequence numbers with the timeline moved on.
        h.send(stream(count: 50, sequence: 50, timestamp: 50 * 960 + 48_000, sendStart: 1_000 * ms + 50 * 20 * ms + 1_000 * ms))
        h.run(pulls: 200)
        #expect(h.playedSequences == (0..<100).map { UInt16($0) })
        #expect(h.buffer.stats.concealedFrames == 0 && h.buffer.stats.lateDropped == 0)
        #expect(h.buffer.stats.senderStops == 2)  // the pause, and the end
    }

    @Test("after an RTCP BYE the buffer plays what it holds and conceals nothing")
    func goodbye() {
        var config = JitterBufferConfig()
        config.minimumDelay = .milliseconds(40)   // so packets are still held when the goodbye comes
        let h = JitterHarness(config: config)
        h.send(stream(count: 60))
        h.run(pulls: 62)  // every packet has arrived (the last at 1.21 s); the last ones still wait to play
        #expect(h.inFlight == 0 && h.playedSequences.count < 60)
        h.buffer.senderStopped()
        h.run(pulls: 100)
        #expect(h.playedSequences == (0..<60).map { UInt16($0) })
        #expect(!h.decisions.contains(.conceal))
        #expect(h.buffer.stats.concealedFrames == 0 && h.buffer.stats.senderStops == 1)
    }

    @Test("skip(through:) forgets what was played elsewhere; what follows starts at the target, nothing concealed")
    func skipThrough() {
        var config = JitterBufferConfig()
        config.minimumDelay = .milliseconds(60)   // three packets held while playing
        let h = JitterHarness(config: config)
        h.send(stream(count: 60))
        h.run(pulls: 20)
        let played = h.playedSequences
        #expect(!played.isEmpty && played.count < 18)
        h.buffer.skip(through: 17)   // a mixer forwarded 0…17 as they came
        h.run(pulls: 100)            // past the stream's end and the sender-stop wait
        let after = Array(h.playedSequences.dropFirst(played.count))
        #expect(after == (18..<60).map { UInt16($0) })
        #expect(h.buffer.stats.concealedFrames == 0 && h.buffer.stats.lateDropped == 0)
        // A number far from what arrived is ignored.
        h.buffer.skip(through: 40_000)
        #expect(h.buffer.stats.concealedFrames == 0)
    }

    @Test("a burst loss shorter than the wait is still concealed and counted")
    func shortBurstIsLoss() {
        var config = JitterBufferConfig()
        config.inbandFEC = false
        let h = JitterHarness(config: config)
        var packets = stream(count: 100)
        packets.removeSubrange(40..<44)  // 80 ms lost in the middle
        h.send(packets)
        h.run(untilPlayed: 96, limit: 200)
        #expect(h.buffer.stats.concealedFrames == 4 && h.buffer.stats.concealmentEvents == 1)
        #expect(h.buffer.stats.senderStops == 0)
    }
}
