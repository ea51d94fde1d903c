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
    /// 10 s at a steady 30 ms; then packets come in bursts of five, each burst when its last packet is sent (the
    /// first of a burst 80 ms late, the last on time), so the target rises while most due frames have their
    /// successors already held.
    static func bursts() -> [ScheduledPacket] {
        stream(count: 1_500) { i in i < 500 ? 30 * ms : 30 * ms + Int64(4 - i % 5) * 20 * ms }
    }

    @Test(arguments: [false, true])
    func belowTheTargetInSpeechExpandsOnlyWhereTheNextFrameIsMissing(quiet: Bool) {
        let h = JitterHarness()
        h.send(Self.bursts())
        h.run(pulls: 500)
        h.quiet = quiet
        let from = h.decisions.count
        h.run(pulls: 200)
        let window = Array(h.decisions[from...])
        // For each expansion, the frame it held back: the next one played.
        let heldBack = window.indices.filter { window[$0] == .expand }.compactMap { k in
            window[k...].lazy.compactMap { $0.sequences.first }.first
        }
        // The delay reaches the target either way (a 20 ms frame per expansion).
        #expect(heldBack.count >= 3)
        #expect(h.buffer.stats.currentDelayMilliseconds >= h.buffer.stats.targetDelayMilliseconds - 20)
        let atBurstEnds = heldBack.allSatisfy { $0 % 5 == 4 }
        if quiet {
            // In a pause, at once, wherever the frame is.
            #expect(!atBurstEnds, "held back \(heldBack)")
        } else {
            // In speech only before the last frame of a burst, whose successor has not been sent yet.
            #expect(atBurstEnds, "held back \(heldBack)")
        }
    }
}
