// Playout order and bookkeeping: steady streams, reordering, duplicates, wraparound, FEC, late packets.
import Testing
import ParleyMedia

@Suite("Jitter buffer playout")
struct JitterBufferPlayoutTests {
    @Test func steadyStreamPlaysEveryPacketNearTheTarget() {
        var random = TestRandom(state: 7)
        let h = JitterHarness()
        h.send(stream(count: 1_000) { _ in 30 * ms + Int64(random.next() * 10 * Double(ms)) })
        h.run(pulls: 1_100)
        #expect(h.playedSequences == (0..<1_000).map { UInt16($0) })
        #expect(h.concealments == 0)
        #expect(h.buffer.stats.played == 1_000)
        #expect(h.buffer.stats.lateDropped == 0)
        // Once settled the playout delay sits within a frame (plus hysteresis) above the target.
        let s = h.buffer.stats
        let settled = h.delays[500..<900]
        #expect(settled.allSatisfy { $0 >= s.targetDelayMilliseconds - 5 && $0 <= s.targetDelayMilliseconds + 25 })
        #expect(s.targetDelayMilliseconds <= 20)
        #expect(h.inFlight == 0)
    }

    @Test func reorderingWithinTheWindowPlaysInOrder() {
        // Every pair of packets swapped: odd ones arrive 15 ms early, even ones 15 ms late.
        let h = JitterHarness()
        h.send(stream(count: 400) { i in i % 2 == 0 ? 45 * ms : 15 * ms })
        h.run(pulls: 450)
        // The buffer starts at the delay the first arrivals show (no start-up delay): in the first second a packet
        // that arrives after its successor may be rebuilt from the successor's FEC instead, never concealed. Once
        // the estimate covers the reordering (after the first second), every packet plays in order.
        let played = h.playedSequences
        #expect(played == played.sorted())
        #expect(h.concealments == 0)
        #expect(Array(played.drop { $0 < 50 }) == (50..<400).map { UInt16($0) })
        // Late: the frames FEC rebuilt, and packet 0, sent before the first arrival (packet 1) and arriving after it.
        #expect(h.buffer.stats.lateDropped <= h.buffer.stats.fecRecovered + 1)
        #expect(h.buffer.stats.fecRecovered <= 5)
    }

    @Test func duplicatesAreDroppedAndCounted() {
        let h = JitterHarness()
        let once = stream(count: 200)
        // Each packet arrives twice: 5 ms apart (held) and 200 ms later (already played).
        h.send(once)
        h.send(once.map { var p = $0; p.arrival += 5 * ms; return p })
        h.send(once.map { var p = $0; p.arrival += 200 * ms; return p })
        h.run(pulls: 260)
        #expect(h.playedSequences == (0..<200).map { UInt16($0) })
        #expect(h.buffer.stats.duplicates == 400)
        #expect(h.buffer.stats.inserted == 200)
        #expect(h.buffer.stats.lateDropped == 0)
    }

    static let wraps: [(UInt16, UInt32)] = [
        (65_500, 0), (65_535, 1_000), (0, UInt32.max - 960 * 50), (65_520, UInt32.max - 960 * 20),
        (65_535, UInt32.max), (32_767, 0x7FFF_FF00), (100, UInt32.max - 10),
    ]

    @Test(arguments: wraps)
    func sequenceAndTimestampWraparound(sequence: UInt16, timestamp: UInt32) {
        var random = TestRandom(state: UInt64(sequence) &+ UInt64(timestamp))
        let h = JitterHarness()
        h.send(stream(count: 300, sequence: sequence, timestamp: timestamp) { _ in
            20 * ms + Int64(random.next() * 30 * Double(ms))
        })
        h.run(pulls: 360)
        #expect(h.playedSequences == (0..<300).map { sequence &+ UInt16($0) })
        #expect(h.concealments == 0)
        #expect(h.buffer.stats.resets == 0)
    }

    @Test func lostPacketIsRebuiltFromTheNextPacketsFEC() {
        // One packet in 20 lost: more than the 2 % the target may leave uncovered, so the target grows to hold
        // each lost frame's successor in time, and every loss after the first second is rebuilt from its FEC.
        let h = JitterHarness()
        let lost = Set(stride(from: 10, to: 400, by: 20))
        h.send(stream(count: 400) { i in 30 * ms + (i % 3 == 0 ? 8 : 0) * ms }.filter { !lost.contains(Int($0.sequence)) })
        h.run(untilPlayed: 400 - lost.count, limit: 600)
        for k in lost where k >= 50 {
            let i = h.decisions.firstIndex(of: .fec(UInt16(k + 1)))
            #expect(i != nil, "packet \(k) was not rebuilt from FEC")
            if let i { #expect(h.decisions[i + 1] == .play(UInt16(k + 1))) }
        }
        #expect(h.buffer.stats.fecRecovered >= lost.filter { $0 >= 50 }.count)
        #expect(h.buffer.stats.concealedFrames <= 2)
        #expect(h.playedSequences == (0..<400).filter { !lost.contains($0) }.map { UInt16($0) })
    }

    @Test func withoutFECALostPacketIsConcealed() {
        var config = JitterBufferConfig()
        config.inbandFEC = false
        let h = JitterHarness(config: config)
        var packets = stream(count: 100)
        packets.remove(at: 50)
        h.send(packets)
        h.run(untilPlayed: 99, limit: 200)
        #expect(!h.decisions.contains { if case .fec = $0 { true } else { false } })
        #expect(h.concealments == 1)
        #expect(h.buffer.stats.concealmentEvents == 1)
        #expect(h.buffer.stats.jitterInducedConcealedFrames == 0)
    }

    @Test func latePacketIsDroppedAndCountedAsJitterInduced() {
        var config = JitterBufferConfig()
        config.inbandFEC = false
        let h = JitterHarness(config: config)
        // Packet 60 is held up 400 ms: far beyond the target; the buffer conceals it and drops it on arrival.
        h.send(stream(count: 120) { i in i == 60 ? 400 * ms : 30 * ms })
        h.run(untilPlayed: 119, limit: 300)
        #expect(h.buffer.stats.lateDropped == 1)
        #expect(h.buffer.stats.concealedFrames == 1)
        #expect(h.buffer.stats.jitterInducedConcealedFrames == 1)
        #expect(!h.playedSequences.contains(60))
        #expect(h.playedSequences.count == 119)
    }

    @Test func stalledPlayoutCatchesUpToTheTarget() {
        // The playout side stops pulling for 3 s while 150 packets arrive (more than the 64 slots hold).
        let h = JitterHarness()
        h.send(stream(count: 600))
        h.run(pulls: 100)
        h.stall(3_000 * ms)
        h.run(pulls: 10)
        let s = h.buffer.stats
        #expect(s.overflowDropped + s.lateDropped >= 150 - 64)
        #expect(h.delays.last! <= s.targetDelayMilliseconds + 25)
        h.run(untilPlayed: 600 - s.overflowDropped - s.lateDropped, limit: 1_000)
        let played = h.playedSequences
        #expect(played == played.sorted())
        #expect(played.last == 599)
        #expect(h.concealments <= 2)
    }
}
