// The send path's in-band FEC follows the loss the relay reports, and the NACK tracker's ask-while-useful rule.
import Testing
import ParleyClientCore
import ParleyMedia
import ParleyWire

@Suite("Send pipeline FEC adaptation")
struct SendPipelineFECTests {
    /// RTCP fraction lost (/256) for a loss in percent.
    static func fraction(_ percent: Double) -> UInt8 { UInt8((percent * 256 / 100).rounded()) }

    @Test func cleanPathGetsNoProtection() throws {
        let pipeline = try SendPipeline(ssrc: 1)
        for _ in 0..<10 { pipeline.reportedLoss(fraction: 0) }
        #expect(pipeline.expectedLossPercent == 0)
        pipeline.reportedLoss(fraction: Self.fraction(0.4))   // under 0.5 %: still none
        #expect(pipeline.expectedLossPercent == 0)
    }

    @Test(arguments: [(1.0, Int32(1)), (2.3, 1), (5.0, 3), (10.0, 6), (50.0, 20)])
    func lossyPathGetsProtectionBelowItsLoss(loss: Double, expected: Int32) throws {
        let pipeline = try SendPipeline(ssrc: 1)
        pipeline.reportedLoss(fraction: Self.fraction(loss))   // a rise is taken at once
        #expect(pipeline.expectedLossPercent == expected)
    }

    /// Interarrival jitter (48 kHz units) for milliseconds.
    static func jitter(_ ms: Double) -> UInt32 { UInt32(ms * 48) }

    @Test(arguments: [(0.5, Int32(0)), (2.9, 0), (3.0, 1), (7.9, 1), (8.0, 2), (40.0, 2)])
    func jitterWithoutLossGetsSomeProtection(ms: Double, expected: Int32) throws {
        // Late packets are lost to the listener too; only the next packet's FEC rebuilds them.
        let pipeline = try SendPipeline(ssrc: 1)
        pipeline.reportedLoss(fraction: 0, jitter: Self.jitter(ms))
        #expect(pipeline.expectedLossPercent == expected)
    }

    @Test func lossAndJitterTakeTheLargerProtection() throws {
        let pipeline = try SendPipeline(ssrc: 1)
        pipeline.reportedLoss(fraction: Self.fraction(10), jitter: Self.jitter(20))
        #expect(pipeline.expectedLossPercent == 6)
        #expect(LossAdaptiveFEC.protection(forLoss: 1, jitterMilliseconds: 20) == 2)
        #expect(LossAdaptiveFEC.protection(forLoss: 0, jitterMilliseconds: 0) == 0)
    }

    @Test func protectionFallsSlowlyAfterTheLossStops() throws {
        let pipeline = try SendPipeline(ssrc: 1)
        pipeline.reportedLoss(fraction: Self.fraction(10))
        #expect(pipeline.expectedLossPercent == 6)
        pipeline.reportedLoss(fraction: 0)
        #expect(pipeline.expectedLossPercent == 5)             // 8 % smoothed
        for _ in 0..<30 { pipeline.reportedLoss(fraction: 0) }
        #expect(pipeline.expectedLossPercent == 0)
    }
}

@Suite("NACK tracker")
struct NackTrackerTests {
    let ms = Interval.milliseconds(1)

    @Test func gapIsAskedOnceAndAgainAfterARoundTripWhileItCanStillArrive() {
        var t = NackTracker()
        t.received(10, now: t0)
        t.received(13, now: t0 + 20 * ms)                 // 11 and 12 missing
        #expect(t.due(now: t0 + 20 * ms, roundTrip: 30 * ms, playoutDelay: 200 * ms) == [11, 12])
        #expect(t.due(now: t0 + 30 * ms, roundTrip: 30 * ms, playoutDelay: 200 * ms).isEmpty)   // within a round trip
        #expect(t.due(now: t0 + 50 * ms, roundTrip: 30 * ms, playoutDelay: 200 * ms) == [11, 12])
        #expect(t.due(now: t0 + 90 * ms, roundTrip: 30 * ms, playoutDelay: 200 * ms).isEmpty)   // asked twice already
        #expect(t.requested == 4)
    }

    @Test func retransmissionCountsAsRecoveredAndStopsTheAsking() {
        var t = NackTracker()
        t.received(1, now: t0)
        t.received(3, now: t0 + 20 * ms)
        #expect(t.due(now: t0 + 20 * ms, roundTrip: 30 * ms, playoutDelay: 200 * ms) == [2])
        t.received(2, now: t0 + 50 * ms)
        #expect(t.recovered == 1)
        #expect(t.due(now: t0 + 100 * ms, roundTrip: 30 * ms, playoutDelay: 200 * ms).isEmpty)
    }

    @Test func packetThatCannotArriveInTimeIsNotAsked() {
        var t = NackTracker()
        t.received(1, now: t0)
        t.received(3, now: t0 + 20 * ms)
        // Play-out 40 ms after the gap was seen; a round trip of 60 ms would bring it too late.
        #expect(t.due(now: t0 + 20 * ms, roundTrip: 60 * ms, playoutDelay: 40 * ms).isEmpty)
        #expect(t.requested == 0)
    }

    @Test func gapsAcrossTheSequenceWrapAreAsked() {
        var t = NackTracker()
        t.received(65_534, now: t0)
        t.received(1, now: t0 + 20 * ms)                   // 65535 and 0 missing
        #expect(t.due(now: t0 + 20 * ms, roundTrip: 30 * ms, playoutDelay: 200 * ms) == [65_535, 0])
    }

    @Test func jumpOfMoreThan64IsNotARecoverableGap() {
        var t = NackTracker()
        t.received(100, now: t0)
        t.received(300, now: t0 + 20 * ms)
        #expect(t.due(now: t0 + 20 * ms, roundTrip: 30 * ms, playoutDelay: 200 * ms).isEmpty)
    }
}

@Suite("Receiver reports")
struct ReceiverReportTests {
    /// A minimal RTP packet (no extension, 3-byte payload).
    static func rtp(sequence: UInt16, ssrc: UInt32) -> [UInt8] {
        var bytes: [UInt8] = [0x80, 111, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
        bytes += withUnsafeBytes(of: (UInt32(sequence) * 960).bigEndian, Array.init)
        bytes += withUnsafeBytes(of: ssrc.bigEndian, Array.init)
        bytes += [0xF8, 0xFF, 0xFE]
        return bytes
    }

    @Test func reportCountsLossSinceTheLastReportPerStream() throws {
        let mixer = ReceiveMixer()
        #expect(mixer.receiverReport(reporter: 9, now: t0) == nil)
        for s: UInt16 in 0..<10 where s != 4 && s != 7 {      // 2 of 10 lost
            try Self.rtp(sequence: s, ssrc: 0xAB).withUnsafeBytes { mixer.receive(try RTPPacketView(parsing: $0), now: t0 + Int64(s) * 20 * .milliseconds(1)) }
        }
        let first = try #require(mixer.receiverReport(reporter: 9, now: t0))
        #expect(first.ssrc == 9)
        #expect(first.reports.map(\.ssrc) == [0xAB])
        #expect(first.reports[0].fractionLost == 51)            // 2/10 × 256
        for s: UInt16 in 10..<20 {
            try Self.rtp(sequence: s, ssrc: 0xAB).withUnsafeBytes { mixer.receive(try RTPPacketView(parsing: $0), now: t0 + Int64(s) * 20 * .milliseconds(1)) }
        }
        let second = try #require(mixer.receiverReport(reporter: 9, now: t0))
        #expect(second.reports[0].fractionLost == 0)
    }
}

@Suite("NACKs and room for repairs")
struct RepairRoomTests {
    static func deliver(_ mixer: ReceiveMixer, _ sequence: UInt16, ssrc: UInt32, at now: Instant) throws {
        try ReceiverReportTests.rtp(sequence: sequence, ssrc: ssrc).withUnsafeBytes {
            mixer.receive(try RTPPacketView(parsing: $0), now: now)
        }
    }

    @Test(arguments: [true, false])
    func aStreamMakesRoomForRepairsOnceOneCame(answered: Bool) throws {
        let mixer = ReceiveMixer()
        let ms = Interval.milliseconds(1)
        for s: UInt16 in 0..<7 where s != 5 { try Self.deliver(mixer, s, ssrc: 0xAB, at: t0 + Int64(s) * 20 * ms) }
        // The gap was seen at 120 ms, the next tick asks. A 200 ms round trip is far beyond this stream's target (a
        // clean path): only a stream whose sender answers NACKs asks anyway, to learn whether repairs come.
        let now = t0 + 130 * ms
        let nacks = mixer.nacksDue(now: now, roundTrip: .milliseconds(200), reporter: 9) { _ in answered }
        #expect(nacks.flatMap(\.lost) == (answered ? [5] : []))
        #expect(mixer.streams[0xAB]?.audio.jitter.repairRoundTrip == nil)
        // The repair comes: from now on the buffer counts gaps as repairs a round trip and a tick away.
        try Self.deliver(mixer, 5, ssrc: 0xAB, at: now + 200 * ms)
        _ = mixer.nacksDue(now: now + 220 * ms, roundTrip: .milliseconds(200), reporter: 9) { _ in answered }
        #expect(mixer.streams[0xAB]?.audio.jitter.repairRoundTrip == (answered ? .milliseconds(220) : nil))
    }
}
