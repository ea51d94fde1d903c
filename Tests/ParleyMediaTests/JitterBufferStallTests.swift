// A sender's capture stalls (issue 37): the packets after a pause arrive later than their slot, either on a new,
// later timeline (a delay step) or in a burst that catches up. Either way they are played, not thrown away, and the
// concealment lasts no longer than the stall.
import ParleyMedia
import ParleyWire
import Testing

@Suite struct JitterBufferStallTests {
    /// A 20 ms stream whose sender pauses at each `(index, milliseconds)`: packet `index` and all after it leave that
    /// much later (the RTP timestamps have no gap); `catchUp` sends the held packets at once after the pause and the
    /// rest on time again instead. Small jitter (0–3 ms) on a 30 ms path.
    static func stalled(count: Int, stalls: [(Int, Int64)], catchUp: Bool = false,
                        seed: UInt64 = 7) -> [ScheduledPacket] {
        var random = TestRandom(state: seed)
        return stream(count: count) { i in
            var shift: Int64 = 0
            for (index, length) in stalls where i >= index {
                shift += catchUp ? max(0, length - Int64(i - index) * 20 * ms) : length
            }
            return 30 * ms + shift + Int64(random.next() * 3 * Double(ms))
        }
    }

    /// Longest run of pulls that played nothing of the sender's own (conceal, FEC, expand or silence) between the first
    /// and the last frame played.
    static func longestHole(_ decisions: [Played]) -> Int {
        guard let first = decisions.firstIndex(where: { !$0.sequences.isEmpty }),
              let last = decisions.lastIndex(where: { !$0.sequences.isEmpty }) else { return 0 }
        var longest = 0, run = 0
        for d in decisions[first...last] {
            run = d.sequences.isEmpty ? run + 1 : 0
            longest = max(longest, run)
        }
        return longest
    }

    @Test(arguments: [Int64(60), 120, 300])
    func aDelayStepIsANewDelayNotALoss(stall: Int64) {
        let h = JitterHarness()
        let count = 1_000
        h.send(Self.stalled(count: count, stalls: [(400, stall * ms)]))
        h.run(untilPlayed: count, limit: count + 100)
        let s = h.buffer.stats
        #expect(s.played == count, "every packet plays: \(s)")
        #expect(s.lateDropped == 0)
        // Concealment no longer than the stall (its frames, plus the one in progress when it began).
        #expect(h.concealments <= Int(stall / 20) + 1, "\(h.concealments) concealed for a \(stall) ms stall")
        #expect(Self.longestHole(h.decisions) <= Int(stall / 20) + 2)
        #expect(h.playedSequences == (0..<count).map { UInt16($0) })
        // The path stayed slower: the floor follows within the probe, so the delay is back near the target well
        // before the floor's own window would have moved (4 s).
        #expect(s.floorSteps == 1)
        let after = h.delays[(400 + Int(stall / 20) + 60)...].filter { $0 > 0 }
        #expect(after.max()! <= s.targetDelayMilliseconds + 25, "delays after the step: \(after.max()!)")
    }

    @Test func aStallThatCatchesUpPlaysEveryPacketAndTakesTheSurplusBack() {
        let h = JitterHarness()
        let count = 1_000
        h.send(Self.stalled(count: count, stalls: [(400, 100 * ms)], catchUp: true))
        h.quiet = true  // the listener hears pauses now and then: the surplus may go at once
        h.run(untilPlayed: count, limit: count + 100)
        let s = h.buffer.stats
        #expect(s.played == count)
        #expect(s.lateDropped == 0)
        #expect(h.concealments <= 6)
        #expect(s.floorSteps == 0, "a burst that caught up is no step")
        #expect(s.accelerated >= 3)
        #expect(h.delays[(400 + 60)...].filter { $0 > 0 }.max()! <= s.targetDelayMilliseconds + 25)
    }

    @Test func aLongStallResumesAtOnceOnItsNewTimeline() {
        // 800 ms without a packet reads as a sender stop (nothing concealed); when it resumes on a timeline 800 ms
        // later, its packets must not all look late against the old floor (they were dropped for seconds).
        let h = JitterHarness()
        let count = 1_000
        h.send(Self.stalled(count: count, stalls: [(300, 800 * ms)]))
        h.run(untilPlayed: count, limit: count + 100)
        let s = h.buffer.stats
        #expect(s.played == count, "\(s)")
        #expect(s.lateDropped == 0)
        #expect(h.playedSequences == (0..<count).map { UInt16($0) })
        #expect(Self.longestHole(h.decisions) <= 40 + 3, "the stall itself, then the target")
    }

    @Test func chromiumLikeStepsConcealNoMoreThanTheirLength() {
        // The steps measured from Chromium's fake capture on a loaded machine (0 → 10 → 20 → 31 → 60 → 131 ms over
        // 21 s), then more of the same: steps of 10–71 ms every 3–5 s.
        let steps: [(Int, Int64)] = [(150, 10), (350, 10), (600, 11), (800, 29), (1_050, 71), (1_300, 40), (1_500, 25)]
        let h = JitterHarness()
        let count = 1_750
        h.send(Self.stalled(count: count, stalls: steps.map { ($0.0, $0.1 * ms) }))
        h.run(untilPlayed: count, limit: count + 100)
        let s = h.buffer.stats
        let total = steps.map(\.1).reduce(0, +)
        #expect(s.played == count, "\(s)")
        #expect(s.lateDropped == 0)
        #expect(h.concealments * 20 <= Int(total), "\(h.concealments) frames concealed for \(total) ms of steps")
        #expect(Self.longestHole(h.decisions) <= 5)
    }

    @Test func aLostFrameIsStillSkippedWhenItsSuccessorComes() {
        // Holding is for frames that come late: a frame lost on the way costs one concealed (or rebuilt) frame and
        // does not move the timeline.
        let h = JitterHarness()
        let packets = stream(count: 500).filter { $0.sequence < 100 || $0.sequence % 100 != 50 }  // 1 %
        h.send(packets)
        h.run(untilPlayed: packets.count, limit: 600)
        let s = h.buffer.stats
        #expect(s.played == packets.count)
        #expect(s.delaySteps == 0)
        #expect(s.concealedFrames + s.fecRecovered == 4)
        let delays = h.delays[100...].filter { $0 > 0 }
        #expect(delays.max()! - delays.min()! <= 1, "the timeline stays put")

    }
}
