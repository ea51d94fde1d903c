// Adaptation: talkspurts after DTX, sender restarts, clock skew, and the target following a burst of jitter.
import Testing
import ParleyMedia

@Suite("Jitter buffer adaptation")
struct JitterBufferAdaptationTests {
    @Test func dtxGapThenNewTalkspurtResumesWithoutConcealment() {
        let h = JitterHarness()
        var packets = stream(count: 100)
        // Packet 100 is a 1-byte DTX frame; then 2 s of nothing; then a new talkspurt (marker) with contiguous
        // sequence numbers and timestamps 2 s later.
        var dtx = stream(count: 1, sequence: 100, timestamp: 100 * 960, sendStart: 1_000 * ms + 2_000 * ms)[0]
        dtx.payloadBytes = 1
        packets.append(dtx)
        var talk = stream(count: 100, sequence: 101, timestamp: 101 * 960 + 48_000 * 2,
                          sendStart: 1_000 * ms + 2_020 * ms + 2_000 * ms)
        talk[0].marker = true
        packets += talk
        h.send(packets)
        h.run(untilPlayed: 201, limit: 400)
        let s = h.buffer.stats
        #expect(s.concealedFrames == 0)
        #expect(s.concealmentEvents == 0)
        #expect(s.played == 201)                       // the DTX packet counts as played
        #expect(s.silenceFrames >= 95)
        #expect(h.playedSequences == (0..<100).map { UInt16($0) } + (101..<201).map { UInt16($0) })
    }

    @Test func pauseWithoutDTXThenTalkspurtIsNotLateDropped() {
        // The sender simply stops for 1 s (no DTX packet) and resumes with the next sequence number.
        let h = JitterHarness()
        h.send(stream(count: 50))
        var talk = stream(count: 50, sequence: 50, timestamp: 50 * 960 + 48_000, sendStart: 1_000 * ms + 2_000 * ms)
        talk[0].marker = true
        h.send(talk)
        h.run(pulls: 200)
        #expect(h.playedSequences == (0..<100).map { UInt16($0) })
        #expect(h.buffer.stats.lateDropped == 0)
    }

    static let restarts: [(UInt32, UInt16, UInt32)] = [
        // (new SSRC, new first sequence, new first timestamp)
        (2, 40_000, 123_456_789),       // new SSRC
        (1, 30_000, 987_654),           // same SSRC, sequence and timestamp jump
        (1, 200, 960 * 200 + 48_000 * 600), // same SSRC, timeline jumps 10 minutes ahead
    ]

    @Test(arguments: restarts)
    func senderRestartResetsAndKeepsPlaying(ssrc: UInt32, sequence: UInt16, timestamp: UInt32) {
        let h = JitterHarness()
        h.send(stream(count: 150))
        // The new stream starts 200 ms after the old one ends: a restart forgets what is still buffered, and the
        // old stream may be playing up to a start-up prior (60 ms) late, which waits for a silence to be taken back.
        h.send(stream(count: 150, sequence: sequence, timestamp: timestamp, sendStart: 1_000 * ms + 3_200 * ms, ssrc: ssrc))
        h.run(untilPlayed: ssrc == 2 ? 300 : 299, limit: 400)   // a jump costs its first packet (the probe)
        let s = h.buffer.stats
        #expect(s.resets == 1)
        let after = h.playedSequences.drop { $0 != sequence &+ 1 && $0 != sequence }
        #expect(after.count >= 148)
        #expect(Array(after) == (0..<after.count).map { after.first! &+ UInt16($0) })
        #expect(s.concealedFrames <= 2 + 10)   // + the 200 ms between the streams (no DTX told the buffer)
    }

    @Test(arguments: [0.001, -0.001])
    func clockSkewKeepsDelayBoundedWithoutConcealment(skew: Double) {
        // Ten minutes: the receiver's clock runs `skew` fast; arrivals and pulls are both on the receiver's clock.
        var random = TestRandom(state: 11)
        let h = JitterHarness(start: 0)
        let count = 30_000
        h.send((0..<count).map { i in
            let sent = Double(Int64(i) * 20 * ms)
            let jitter = random.next() * 10 * Double(ms)
            return ScheduledPacket(sequence: UInt16(truncatingIfNeeded: i), timestamp: UInt32(i * 960),
                                   arrival: Int64((sent + Double(40 * ms) + jitter) * (1 + skew)))
        })
        h.run(pulls: count + 100)
        let s = h.buffer.stats
        // A frame or so of lateness each time the drift reaches the target, before the expansion catches it up.
        #expect(h.concealments <= 10)
        #expect(s.concealmentEvents <= 10 + 1)  // + the run after the stream ends
        #expect(h.delays[1_000...].max()! <= s.targetDelayMilliseconds + 45)
        #expect(h.delays[1_000...].min()! >= 0)
        // 0.1 % of 10 minutes is 600 ms: about 30 one-frame adjustments, far below 2 % of 30 000 frames.
        #expect(s.accelerated + s.expanded <= 60)
        #expect(s.played >= count - 60)
    }

    /// One packet in 25 lost on the way and resent 120 ms late (a NACK round trip): flagged as a retransmission, it
    /// leaves the target where the path's own jitter puts it; taken as an ordinary arrival, it raises the target to
    /// cover the repair's round trip — the uplink-repair regression measured on the `moderate` profile.
    @Test(arguments: [true, false])
    func retransmissionsStayOutOfTheDelayEstimate(flagged: Bool) {
        var random = TestRandom(state: 5)
        let h = JitterHarness()
        var packets = stream(count: 3_000) { _ in 30 * ms + Int64(random.next() * 10 * Double(ms)) }
        for i in stride(from: 10, to: packets.count, by: 25) {
            packets[i].arrival += 120 * ms
            packets[i].retransmission = flagged
        }
        h.send(packets)
        h.run(pulls: 3_000)
        let target = h.buffer.stats.targetDelayMilliseconds
        if flagged {
            #expect(target <= 40, "target \(target) ms")
        } else {
            #expect(target >= 80, "target \(target) ms")
        }
    }

    @Test func targetRisesWithAJitterBurstAndRelaxesAfterwards() {
        var random = TestRandom(state: 3)
        let h = JitterHarness()
        // 30 s calm (0–5 ms), 20 s of heavy jitter (0–150 ms), then 90 s calm again.
        h.send(stream(count: 7_000) { i in
            let spread = (1_500..<2_500).contains(i) ? 150.0 : 5.0
            return 30 * ms + Int64(random.next() * spread * Double(ms))
        })
        h.run(pulls: 1_500)
        let calm = h.buffer.stats.targetDelayMilliseconds
        h.run(pulls: 1_000)
        let burst = h.buffer.stats.targetDelayMilliseconds
        h.run(pulls: 4_500)
        let relaxed = h.buffer.stats.targetDelayMilliseconds
        #expect(burst >= calm + 80)
        #expect(relaxed <= calm + 10)
        // Without a silence the delay follows the relaxing target within a frame plus the hysteresis it may keep
        // for two seconds (small excesses wait for a silence: stretching during speech costs quality).
        #expect(h.delays.last! <= relaxed + 20 + 25)
        let s = h.buffer.stats
        #expect(s.expanded > 0 && s.accelerated > 0)
        #expect(Double(s.expanded + s.accelerated) / 7_000 < 0.02)
    }

    @Test func resetForgetsEverything() {
        let h = JitterHarness()
        h.send(stream(count: 100))
        h.run(pulls: 50)
        h.buffer.reset()
        #expect(h.buffer.stats == JitterStats())
    }
}
