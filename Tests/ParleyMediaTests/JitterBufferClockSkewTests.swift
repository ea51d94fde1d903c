// A sender whose clock is off ours (ffmpeg at -readrate 0.995, a phone's crystal): the skew is measured, a slow one is
// made up in the pauses rather than in speech, and capture stalls are not taken for a clock (issue 37).
import ParleyMedia
import ParleyWire
import Testing

@Suite("Jitter buffer: a sender's clock off ours")
struct JitterBufferClockSkewTests {
    /// `seconds` of 20 ms packets from a sender whose packet k leaves at k · 20 · (1 + drift) ms, over a path of
    /// 30 ms plus up to `jitter` ms (seeded); `steps` adds each (time s, ms) step to every later packet (a capture
    /// stall the sender never caught up).
    func sender(seconds: Int, drift: Double, jitter: Double = 10, steps: [(Double, Double)] = [],
                seed: UInt64 = 7) -> [ScheduledPacket] {
        var random = TestRandom(state: seed)
        return (0..<(seconds * 50)).map { i in
            let sent = Double(i) * 20 * (1 + drift)
            let stepped = steps.filter { sent >= $0.0 * 1000 }.reduce(0.0) { $0 + $1.1 }
            let arrival = 1_000 + sent + 30 + stepped + random.next() * jitter
            return ScheduledPacket(sequence: UInt16(truncatingIfNeeded: i),
                                   timestamp: UInt32(truncatingIfNeeded: i * 960), arrival: Int64(arrival * Double(ms)))
        }
    }

    @Test("the skew is measured within 0.1 % of the sender's once six seconds have shown it, and reads 0 for none",
          arguments: [0.005, 0.008, -0.005, 0])
    func skewIsMeasured(drift: Double) {
        let h = JitterHarness(start: 1_000 * ms)
        h.send(sender(seconds: 20, drift: drift))
        h.run(pulls: 300)
        let early = h.buffer.stats.senderClockSkew
        h.run(pulls: 600)
        let skew = h.buffer.stats.senderClockSkew
        #expect(abs(skew - drift) <= 0.001, "measured \(skew) for \(drift)")
        // Not before it is known: in the first 6 s (a quarter of the slopes over two seconds) it reads 0 or close.
        #expect(early == 0 || abs(early - drift) <= 0.0015, "after 6 s: \(early)")
    }

    @Test("capture stalls are not a clock: steps of 20–120 ms every 3–5 s on a steady sender read 0")
    func stallsAreNotASkew() {
        let steps: [(Double, Double)] = [(3, 40), (7, 120), (10, 20), (14, 60), (19, 30), (22, 90), (26, 50)]
        let h = JitterHarness(start: 1_000 * ms)
        h.send(sender(seconds: 30, drift: 0, jitter: 6, steps: steps))
        var worst = 0.0
        for _ in 0..<1_500 {
            h.run(pulls: 1)
            worst = max(worst, abs(h.buffer.stats.senderClockSkew))
        }
        #expect(worst == 0, "a skew of \(worst) was read from stalls")
    }

    @Test("a slow sender's target is its path's jitter: the floor follows the drift, not seconds behind it")
    func slowSenderTargetIsTheJitter() {
        let steady = JitterHarness(start: 1_000 * ms), slow = JitterHarness(start: 1_000 * ms)
        steady.send(sender(seconds: 30, drift: 0))
        slow.send(sender(seconds: 30, drift: 0.005))
        steady.run(pulls: 1_450)
        slow.run(pulls: 1_450)
        let a = steady.buffer.stats.targetDelayMilliseconds, b = slow.buffer.stats.targetDelayMilliseconds
        // A sliding minimum over 4 s lags a 0.5 % drift by up to 20 ms, which read as jitter (target about a + 15).
        #expect(b <= a + 5, "steady \(a) ms, slow \(b) ms")
    }

    /// Speech without DTX (as ffmpeg sends it): 2.6 s of words, then a 400 ms pause in which the listener's audio
    /// is quiet (`pull(now:quiet:)`), over and over.
    func playSpeech(_ h: JitterHarness, pulls: Int) -> (pauseExpansions: Int, speechExpansions: Int) {
        var inPause = 0, inSpeech = 0
        for pull in 0..<pulls {
            h.quiet = pull % 150 >= 130
            let before = h.buffer.stats.expanded
            h.run(pulls: 1)
            if h.buffer.stats.expanded > before, pull >= 500 {  // after the skew is known (10 s)
                if h.quiet { inPause += 1 } else { inSpeech += 1 }
            }
        }
        return (inPause, inSpeech)
    }

    @Test("a sender 0.5 % slow: its 5 ms a second are made up in the pauses, not in speech, and nothing is concealed")
    func slowSenderIsMadeUpInPauses() {
        let h = JitterHarness(start: 1_000 * ms)
        h.send(sender(seconds: 60, drift: 0.005, jitter: 6))
        let (pause, speech) = playSpeech(h, pulls: 2_980)
        #expect(h.concealments == 0, "\(h.buffer.stats)")
        // 50 s after the first 10: 250 ms to add, about 12 frames, all of them in the 16 pauses.
        #expect(pause >= 10, "expansions in pauses \(pause), in speech \(speech)")
        #expect(speech <= 1, "expansions in pauses \(pause), in speech \(speech)")
    }

    @Test("a steady sender's pauses are left alone: no surplus is built where no clock drains the buffer")
    func steadySenderPausesUntouched() {
        let h = JitterHarness(start: 1_000 * ms)
        h.send(sender(seconds: 60, drift: 0, jitter: 6))
        let (pause, speech) = playSpeech(h, pulls: 2_980)
        #expect(h.buffer.stats.senderClockSkew == 0)
        #expect(pause + speech <= 2, "expansions in pauses \(pause), in speech \(speech)")
        #expect(h.concealments == 0, "\(h.buffer.stats)")
    }
}
