// The jitter buffer and repairs: a target that makes room for NACK answers where losses are frequent
// (`repairRoundTrip`) and stays put where they are rare.
import ParleyMedia
import ParleyWire
import Testing

@Suite struct JitterBufferRepairTests {
    /// A 20 ms stream whose every `lossEvery`-th packet is lost on the way and arrives again `repairAfter` after
    /// its successor did (the receiver saw the gap then and asked for it). Returns the packets and the lost ones.
    static func lossyStream(count: Int, lossEvery: Int, repairAfter: Int64) -> ([ScheduledPacket], Set<UInt16>) {
        var packets = stream(count: count)
        var lost: Set<UInt16> = []
        for i in stride(from: 100, to: count - 1, by: lossEvery) {
            packets[i].arrival = packets[i + 1].arrival + repairAfter
            packets[i].retransmission = true
            lost.insert(packets[i].sequence)
        }
        return (packets, lost)
    }

    @Test(arguments: [false, true])
    func frequentLossesMakeRoomForRepairs(repairing: Bool) {
        // 5 % of packets lost, each answered 80 ms after its gap was seen; the buffer counts 100 ms.
        let (packets, lost) = Self.lossyStream(count: 3_000, lossEvery: 20, repairAfter: 80 * ms)
        let h = JitterHarness()
        if repairing { h.buffer.repairRoundTrip = .milliseconds(100) }
        h.send(packets)
        h.run(pulls: 1_000)
        let early = h.buffer.stats
        h.run(untilPlayed: 3_000, limit: 3_000)
        let s = h.buffer.stats
        let target = s.targetDelayMilliseconds
        // The repairs of frames from the 1,000th on (the target has had 20 s to learn).
        let steady = lost.filter { $0 >= 1_000 }
        let repairsPlayed = Set(h.playedSequences).intersection(steady).count
        if repairing {
            // A gap counts as arriving 100 + 20 ms after its frame's successor: above the on-time quantile's tail.
            #expect(target >= 100, "target \(target) ms")
            // Once the target holds them, the repairs play: nothing rebuilt from FEC or concealed after that.
            #expect(s.fecRecovered - early.fecRecovered == 0 && s.concealedFrames - early.concealedFrames == 0)
            #expect(repairsPlayed == steady.count, "\(repairsPlayed) of \(steady.count) repairs played")
        } else {
            // Repairs stay out of the estimate: the target covers the path's own jitter (none) and the repairs
            // come after their frames' turn; the successors' FEC rebuilds those frames instead.
            #expect(target <= 25, "target \(target) ms")
            #expect(repairsPlayed == 0)
            #expect(s.fecRecovered - early.fecRecovered >= steady.count)
        }
    }

    @Test func rareLossesLeaveTheTargetAlone() {
        // 0.5 % of packets lost and repaired: the repair samples stay inside the quantiles' tail.
        let (packets, _) = Self.lossyStream(count: 3_000, lossEvery: 200, repairAfter: 80 * ms)
        let h = JitterHarness()
        h.buffer.repairRoundTrip = .milliseconds(100)
        h.send(packets)
        h.run(untilPlayed: 3_000, limit: 3_200)
        #expect(h.buffer.stats.targetDelayMilliseconds <= 25, "target \(h.buffer.stats.targetDelayMilliseconds) ms")
    }
}

@Suite struct JitterBufferExpandTests {
    /// 10 s at 30–40 ms; then one packet in eight is lost, and each gap counts as repaired a round trip (100 ms)
    /// later, so the target rises above the delay the path needs without any frame arriving late: the buffer has to
    /// grow its delay by expanding. The network's own pace decides where a successor is already held.
    static func losses() -> [ScheduledPacket] {
        var random = TestRandom(state: 3)
        return stream(count: 1_500) { _ in 30 * ms + Int64(random.next() * 10 * Double(ms)) }
            .enumerated().filter { $0.offset < 500 || $0.offset % 8 != 7 }.map(\.element)
    }

    @Test(arguments: [false, true])
    func belowTheTargetInSpeechExpandsOnlyWhereTheNextFrameIsMissing(quiet: Bool) {
        let h = JitterHarness()
        h.buffer.repairRoundTrip = .milliseconds(100)
        let packets = Self.losses()
        let arrival = Dictionary(uniqueKeysWithValues: packets.map { ($0.sequence, $0.arrival) })
        h.send(packets)
        h.run(pulls: 500)
        h.quiet = quiet
        let from = h.decisions.count
        let pullTime = { (k: Int) in 1_000 * ms + Int64(k) * 20 * ms }
        h.run(pulls: 400)
        let window = Array(h.decisions[from...])
        // For each expansion: the frame it held back (the next one played), and whether that frame's successor had
        // arrived by then (a lost successor never arrives).
        let expansions = window.indices.filter { window[$0] == .expand }.compactMap { k -> (UInt16, Bool)? in
            guard let held = window[k...].lazy.compactMap({ $0.sequences.first }).first else { return nil }
            return (held, arrival[held &+ 1].map { $0 <= pullTime(from + k) } ?? false)
        }
        #expect(expansions.count >= 3, "\(h.buffer.stats)")
        #expect(h.buffer.stats.currentDelayMilliseconds >= h.buffer.stats.targetDelayMilliseconds - 20)
        #expect(h.concealments <= 100, "only the lost packets: \(h.concealments)")
        let successorHeld = expansions.filter(\.1).map(\.0)
        if quiet {
            // In a pause, at once, wherever the frame is.
            #expect(!successorHeld.isEmpty, "expansions \(expansions)")
        } else {
            // In speech only where the next frame has not arrived yet.
            #expect(successorHeld.isEmpty, "expanded with the successor held: \(successorHeld)")
        }
    }
}
