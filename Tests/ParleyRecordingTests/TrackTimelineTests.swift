import ParleyRecording
import ParleyWire
import Testing

/// A track's packets placed by RTP timestamp from where the first arrived, reordered within the window, gaps filled.
struct TrackTimelineTests {
    let origin = Instant(nanoseconds: 1_000_000_000)
    /// A 20 ms SILK WB packet whose second byte names it.
    func packet(_ tag: UInt8) -> [UInt8] { [0x48, tag] }
    func at(_ ms: Int64) -> Instant { origin + .milliseconds(ms) }

    func packets(_ items: [TrackTimeline.Item]) -> [UInt8] {
        items.compactMap { if case .packet(let b, _) = $0 { b[1] } else { nil } }
    }

    @Test func aTrackStartsAtTheRecordingStartAndPausesKeepTheirLength() {
        var t = TrackTimeline(origin: origin, reorderWindow: .milliseconds(100))
        // First packet 60 ms after the start: 60 ms of lead-in.
        t.insert(timestamp: 1_000, payload: packet(1), arrival: at(60))
        t.insert(timestamp: 1_960, payload: packet(2), arrival: at(80))
        // A 200 ms pause (DTX): the timestamp jumps 11 frames.
        t.insert(timestamp: 1_960 + 960 * 11, payload: packet(3), arrival: at(300))
        let items = t.take(now: at(1_000))
        // Before any packet, the lead-in is CELT FB 20 ms concealment: three empty frames in one code-3 packet.
        #expect(items.first == .gap([0xFB, 3], samples: 2_880))
        // The pause after SILK WB 20 ms packets: the same configuration, 10 empty frames (120 ms + 80 ms).
        #expect(items.contains(.gap([0x4B, 6], samples: 5_760)) && items.contains(.gap([0x4B, 4], samples: 3_840)))
        #expect(packets(items) == [1, 2, 3])
        // 60 ms lead-in + 2 frames + 10 frames of gap + 1 frame: every sample counted.
        #expect(t.cursor == 2_880 + 960 * 2 + 960 * 10 + 960)
        #expect(t.counts.written == 3 && t.counts.gapSamples == 2_880 + 9_600)
    }

    @Test func latePacketsWithinTheWindowTakeTheirPlace() {
        var t = TrackTimeline(origin: origin, reorderWindow: .milliseconds(100))
        t.insert(timestamp: 0, payload: packet(1), arrival: at(0))
        t.insert(timestamp: 1_920, payload: packet(3), arrival: at(40))
        #expect(packets(t.take(now: at(50))) == [])  // nothing waited 100 ms yet
        t.insert(timestamp: 960, payload: packet(2), arrival: at(90))  // a repair, 70 ms late
        #expect(packets(t.take(now: at(100))) == [1])  // 1 waited long enough; 2 and 3 not yet
        #expect(packets(t.take(now: at(200))) == [2, 3])
        #expect(t.counts.gapPackets == 0 && t.counts.late == 0)
    }

    @Test func aPacketAfterItsPlaceWasWrittenIsDropped() {
        var t = TrackTimeline(origin: origin, reorderWindow: .milliseconds(50))
        t.insert(timestamp: 0, payload: packet(1), arrival: at(0))
        t.insert(timestamp: 1_920, payload: packet(3), arrival: at(40))
        #expect(packets(t.take(now: at(100))) == [1, 3])  // 2 never came: a gap packet stands for it
        t.insert(timestamp: 960, payload: packet(2), arrival: at(120))
        t.insert(timestamp: 1_920, payload: packet(3), arrival: at(130))  // and a duplicate of a written one
        #expect(t.take(now: at(500)).isEmpty)
        #expect(t.counts.late == 2 && t.counts.gapPackets == 1 && t.cursor == 960 * 3)
    }

    @Test func theTrackIsPlacedByThePacketThatWaitedLeast() {
        var t = TrackTimeline(origin: origin, reorderWindow: .milliseconds(100))
        // The first two packets waited on their way (a sender's start-up), the third came as it was sent.
        t.insert(timestamp: 0, payload: packet(1), arrival: at(90))
        t.insert(timestamp: 960, payload: packet(2), arrival: at(95))
        t.insert(timestamp: 1_920, payload: packet(3), arrival: at(80))
        let items = t.take(now: at(300))
        #expect(packets(items) == [1, 2, 3])
        // Packet 3 says packet 1 was sent at 40 ms: 40 ms of lead-in, not 90.
        #expect(t.counts.gapSamples == 1_920 && t.cursor == 1_920 + 960 * 3)
        // Once written, the offset stays: a packet that came faster still is placed by it.
        t.insert(timestamp: 2_880, payload: packet(4), arrival: at(101))
        #expect(packets(t.take(now: at(500))) == [4] && t.cursor == 1_920 + 960 * 4)
    }

    @Test func duplicatesWhilePendingAreDropped() {
        var t = TrackTimeline(origin: origin)
        t.insert(timestamp: 0, payload: packet(1), arrival: at(0))
        t.insert(timestamp: 0, payload: packet(1), arrival: at(5))
        #expect(packets(t.take(now: at(0), flush: true)) == [1])
        #expect(t.counts.duplicate == 1)
    }

    @Test(arguments: [UInt32.max - 959, UInt32.max - 1_919, 0x7FFF_FC40])
    func timestampsCrossTheirWrapAndHalfRange(start: UInt32) {
        var t = TrackTimeline(origin: origin, reorderWindow: .zero)
        for k in 0..<4 { t.insert(timestamp: start &+ UInt32(k * 960), payload: packet(UInt8(k)), arrival: at(Int64(k * 20))) }
        #expect(packets(t.take(now: at(100))) == [0, 1, 2, 3])
        #expect(t.cursor == 960 * 4 && t.counts.gapPackets == 0)
    }

    @Test func aSenderThatRestartsItsClockIsPlacedByArrival() {
        var t = TrackTimeline(origin: origin, reorderWindow: .zero, resyncThreshold: .seconds(2))
        t.insert(timestamp: 5_000, payload: packet(1), arrival: at(0))
        // 1 s later by the clock, but the timestamp went back by an hour.
        t.insert(timestamp: 5_000 &- 48_000 * 3_600, payload: packet(2), arrival: at(1_000))
        let items = t.take(now: at(1_000))
        #expect(packets(items) == [1, 2])
        #expect(t.counts.resyncs == 1)
        #expect(t.cursor == 48_000 + 960)  // placed where it arrived
    }

    @Test func malformedPacketsAreCountedNotPlaced() {
        var t = TrackTimeline(origin: origin)
        t.insert(timestamp: 0, payload: [UInt8](), arrival: at(0))
        t.insert(timestamp: 0, payload: [0xFB], arrival: at(0))
        #expect(t.take(now: at(0), flush: true).isEmpty)
        #expect(t.counts.malformed == 2 && t.pendingCount == 0)
    }
}
