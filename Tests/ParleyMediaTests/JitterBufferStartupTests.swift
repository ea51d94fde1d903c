// Start-up: the first talkspurt plays at the delay later ones do, and a path slower than the first packets showed
// grows the delay instead of losing audio.
import Testing
import ParleyMedia

@Suite("Jitter buffer start-up")
struct JitterBufferStartupTests {
    /// Talkspurts of `length` packets with `pause` of silence between them (a DTX packet ends each), each packet
    /// `delay(i)` in flight.
    static func talkspurts(_ count: Int, length: Int = 50, pause: Int64 = 1_000 * ms,
                           delay: @escaping (Int) -> Int64 = { _ in 30 * ms }) -> [ScheduledPacket] {
        var packets: [ScheduledPacket] = []
        var sequence: UInt16 = 0, timestamp: UInt32 = 0, send: Int64 = 1_000 * ms
        for _ in 0..<count {
            var spurt = stream(count: length + 1, sequence: sequence, timestamp: timestamp, sendStart: send) { i in delay(Int(sequence) + i) }
            spurt[spurt.count - 1].payloadBytes = 1
            packets += spurt
            sequence &+= UInt16(length + 1)
            let spurtTime = Int64(length + 1) * 20 * ms + pause
            timestamp &+= UInt32(spurtTime / (20 * ms)) * 960
            send += spurtTime
        }
        return packets
    }

    /// The playout delay at the first pull of each talkspurt.
    static func startDelays(_ h: JitterHarness) -> [Double] {
        var starts: [Double] = []
        var wasSilent = true
        for (i, d) in h.decisions.enumerated() {
            if case .play = d, wasSilent { starts.append(h.delays[i]) }
            wasSilent = d == .silence
        }
        return starts
    }

    @Test("a clean path: the first talkspurt plays at the same delay as every later one (within 10 ms)", arguments: [0, 7, 13, 19])
    func firstTalkspurtOnTime(phase: Int64) {
        let h = JitterHarness(start: 1_000 * ms + phase * ms)
        h.send(Self.talkspurts(5))
        h.run(pulls: 5 * 101 + 50)
        let starts = Self.startDelays(h)
        #expect(starts.count == 5)
        #expect(starts.allSatisfy { abs($0 - starts[4]) <= 10 }, "talkspurt start delays \(starts) ms")
        #expect(starts.allSatisfy { $0 < 20 }, "talkspurt start delays \(starts) ms")
        #expect(h.concealments == 0 && h.buffer.stats.fecRecovered == 0)
        #expect(h.buffer.stats.played == 5 * 51)
    }

    @Test("a path slower than its first packets showed: the delay grows by waiting; nothing is concealed or lost")
    func slowerPathAtStartGrowsTheDelay() {
        // The first packet arrives after 30 ms, the next ones 10 ms slower each, up to 70 ms from the sixth on.
        let h = JitterHarness()
        h.send(stream(count: 300) { i in 30 * ms + min(Int64(i), 4) * 10 * ms })
        h.run(pulls: 340)
        #expect(h.playedSequences == (0..<300).map { UInt16($0) })
        #expect(h.concealments == 0 && h.buffer.stats.fecRecovered == 0 && h.buffer.stats.lateDropped == 0)
        #expect(h.buffer.stats.expanded >= 1)
    }

    @Test("after the first second a missing frame is concealed (or rebuilt), not waited for")
    func noWaitingAfterStartup() {
        var config = JitterBufferConfig()
        config.inbandFEC = false
        let h = JitterHarness(config: config)
        var packets = stream(count: 200)
        packets.remove(at: 120)
        h.send(packets)
        h.run(pulls: 230)
        #expect(h.concealments == 1)
        #expect(h.buffer.stats.expanded == 0)
        #expect(h.playedSequences == (0..<200).filter { $0 != 120 }.map { UInt16($0) })
    }

    @Test("a prior from the path: talkspurts start at it while the estimate is young, then at what the path needs")
    func priorHoldsThenFades() {
        // A steady path (every packet 30 ms in flight) and a 100 ms prior: 20 talkspurts of 50 packets, 20 s.
        let h = JitterHarness()
        h.buffer.startupPrior = .milliseconds(100)
        h.send(Self.talkspurts(20))
        h.run(pulls: 20 * 101 + 50)
        let starts = Self.startDelays(h)
        #expect(starts.count == 20)
        // Held for the estimate's first 250 packets (five talkspurts), faded over the next 250, gone after.
        #expect(starts.prefix(5).allSatisfy { $0 >= 100 && $0 < 120 }, "talkspurt start delays \(starts) ms")
        #expect(starts.suffix(9).allSatisfy { $0 < 20 }, "talkspurt start delays \(starts) ms")
        #expect(zip(starts, starts.dropFirst()).allSatisfy { $1 <= $0 + 1 }, "the prior only fades: \(starts) ms")
        #expect(h.concealments == 0 && h.buffer.stats.played == 20 * 51)
    }

    @Test("a prior of 0 (a clean path's pings) changes nothing")
    func zeroPriorChangesNothing() {
        let plain = JitterHarness(), primed = JitterHarness()
        primed.buffer.startupPrior = .zero
        for h in [plain, primed] {
            h.send(Self.talkspurts(5))
            h.run(pulls: 5 * 101 + 50)
        }
        #expect(plain.decisions == primed.decisions)
    }
}
