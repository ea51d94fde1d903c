// The jitter buffer and RFC 2198 redundancy: a copy in a later packet fills a lost frame in time, and never does
// anything else (no second play, no overwrite, no delay sample, no restart).
import ParleyMedia
import ParleyWire
import Testing

@Suite struct JitterBufferRedundancyTests {
    /// A steady stream (30 ms transit) whose every packet carries copies of the `distance` frames before it, with
    /// the packets at `lost` never arriving.
    static func redundantStream(count: Int, distance: Int, lost: Set<Int>) -> [ScheduledPacket] {
        var packets = stream(count: count)
        for i in packets.indices {
            packets[i].copies = (1...distance).reversed().compactMap { k in
                i - k >= 0 ? (packets[i - k].sequence, packets[i - k].timestamp) : nil
            }
        }
        return packets.enumerated().filter { !lost.contains($0.offset) }.map(\.element)
    }

    @Test(arguments: [1, 2])
    func copiesFillLossesWithoutConcealment(distance: Int) {
        // Isolated losses (distance 1) or bursts of two (distance 2), every 25th packet from the 60th on.
        var lost: Set<Int> = []
        for i in stride(from: 60, to: 480, by: 25) {
            lost.insert(i)
            if distance == 2 { lost.insert(i + 1) }
        }
        let h = JitterHarness()
        h.send(Self.redundantStream(count: 500, distance: distance, lost: lost))
        h.run(untilPlayed: 500, limit: 700)
        let s = h.buffer.stats
        // The target learns from the first copies that they come 20–40 ms after their frame (frequent losses: 4–8 %
        // here): the first burst may be concealed, none after it.
        #expect(h.concealments <= distance, "concealed \(h.concealments); target \(s.targetDelayMilliseconds) ms")
        #expect(s.redundantRecovered + h.concealments + s.fecRecovered >= lost.count)
        #expect(s.redundantRecovered >= lost.count - distance)
        #expect(Set(h.playedSequences).isSuperset(of: (100..<500).map { UInt16($0) }))
        #expect(s.duplicates == 0)
        // Each copy of a frame already held is counted as unused, not as a duplicate.
        #expect(s.redundantUnused > 0)
    }

    @Test func aCopyNeverReplacesNorRepeats() {
        let h = JitterHarness()
        var packets = stream(count: 100)
        // Packet 50 carries a copy of 49 (held already) and, far too late, of 10 (played long ago).
        packets[50].copies = [
            (packets[10].sequence, packets[10].timestamp), (packets[49].sequence, packets[49].timestamp),
        ]
        h.send(packets)
        h.run(untilPlayed: 100, limit: 200)
        #expect(h.buffer.stats.redundantRecovered == 0)
        #expect(h.buffer.stats.redundantUnused == 2)
        #expect(h.playedSequences.filter { $0 == 10 || $0 == 49 }.count == 2)
    }

    @Test func aCopyAfterItsTurnIsNotPlayed() {
        // Packet 40 lost; its copy arrives 200 ms late, after the buffer concealed (or rebuilt) frame 40.
        let h = JitterHarness()
        var packets = stream(count: 100)
        packets.remove(at: 40)
        packets[60].copies = [(40, 40 * 960)]
        h.send(packets)
        h.run(untilPlayed: 99, limit: 200)
        #expect(!h.playedSequences.contains(40))
        #expect(h.buffer.stats.redundantUnused == 1)
        #expect(h.buffer.stats.redundantRecovered == 0)
    }

    @Test func copiesBeforeTheStreamOrFromAnotherAreRefused() {
        let h = JitterHarness()
        var packets = stream(count: 50)
        packets[0].copies = [(65535, UInt32.max - 959)]  // before anything was received
        h.send(packets)
        h.run(pulls: 10)
        #expect(h.buffer.stats.redundantUnused == 1)
        // A copy far off the timeline neither plays nor arms a restart, even with a packet right after it.
        let payload = [UInt8](repeating: 1, count: 40)
        payload.withUnsafeBytes { bytes in
            h.buffer.insertRedundant(
                sequenceNumber: 30_000, timestamp: 1_000_000_000, ssrc: 1, payload: bytes,
                arrival: Instant(nanoseconds: h.now))
            h.buffer.insertRedundant(
                sequenceNumber: 20, timestamp: 20 * 960, ssrc: 7, payload: bytes,
                arrival: Instant(nanoseconds: h.now))
            h.buffer.insert(
                sequenceNumber: 30_001, timestamp: 1_000_000_960, ssrc: 1, marker: false, payload: bytes,
                arrival: Instant(nanoseconds: h.now))
        }
        #expect(h.buffer.stats.resets == 0)
        #expect(h.buffer.stats.redundantUnused == 3)
    }
}
