import Testing
import ParleyWire

@Suite("RTP receive statistics")
struct RTPReceiveStatisticsTests {
    /// 20 ms Opus frames: 960 ticks at 48 kHz.
    static let frameTicks: UInt32 = 960
    static let frameNanoseconds: Int64 = 20_000_000

    /// Records `sequences` as consecutive 20 ms frames arriving on time, optionally jittered per packet.
    func feed(
        _ stats: inout RTPReceiveStatistics, _ sequences: some Sequence<UInt16>, firstTimestamp: UInt32 = 0,
        baseArrival: Int64 = 0, jitterNanoseconds: (Int) -> Int64 = { _ in 0 }
    ) {
        for (i, sequence) in sequences.enumerated() {
            let step = Int64(sequence &- 0) // timestamps follow sequence, so losses keep spacing
            stats.record(
                sequenceNumber: sequence,
                timestamp: firstTimestamp &+ UInt32(truncatingIfNeeded: step) &* Self.frameTicks,
                arrivalTimeNanoseconds: baseArrival + step * Self.frameNanoseconds + jitterNanoseconds(i))
        }
    }

    @Test func nothingReceived() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        #expect(stats.packetsReceived == 0 && stats.expected == 0 && stats.cumulativeLost == 0)
        let block = stats.makeReportBlock(ssrc: 5, lastSR: 0, delaySinceLastSR: 0)
        #expect(block == ReportBlock(ssrc: 5, fractionLost: 0, cumulativeLost: 0, highestSequence: 0, jitter: 0,
                                     lastSR: 0, delaySinceLastSR: 0))
    }

    @Test func lossWithAGapAndFractionPerInterval() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        feed(&stats, Array(0..<40) + Array(50..<100)) // 40...49 lost
        #expect(stats.packetsReceived == 90)
        #expect(stats.expected == 100)
        #expect(stats.cumulativeLost == 10)
        #expect(stats.highestExtendedSequence == 99)
        let first = stats.makeReportBlock(ssrc: 9, lastSR: 0x1234_5678, delaySinceLastSR: 42)
        #expect(first.fractionLost == 25) // (10 << 8) / 100
        #expect(first.cumulativeLost == 10 && first.highestSequence == 99)
        #expect(first.ssrc == 9 && first.lastSR == 0x1234_5678 && first.delaySinceLastSR == 42)

        feed(&stats, 100..<200) // a clean interval
        let second = stats.makeReportBlock(ssrc: 9, lastSR: 0, delaySinceLastSR: 0)
        #expect(second.fractionLost == 0 && second.cumulativeLost == 10 && second.highestSequence == 199)

        feed(&stats, Array(200..<250) + Array(300..<350)) // half of 150 lost
        let third = stats.makeReportBlock(ssrc: 9, lastSR: 0, delaySinceLastSR: 0)
        #expect(third.fractionLost == 85) // (50 << 8) / 150
        #expect(third.cumulativeLost == 60)

        let idle = stats.makeReportBlock(ssrc: 9, lastSR: 0, delaySinceLastSR: 0)
        #expect(idle.fractionLost == 0) // nothing expected since the last report
    }

    @Test(arguments: [UInt16(65500), 65535, 65450])
    func sequenceWraparound(start: UInt16) {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        feed(&stats, (0..<100).map { start &+ UInt16($0) })
        #expect(stats.packetsReceived == 100 && stats.expected == 100 && stats.cumulativeLost == 0)
        #expect(stats.highestExtendedSequence == UInt32(start) + 99) // cycle count in the high bits
        #expect(stats.highestExtendedSequence >> 16 == 1)
    }

    @Test func reorderAcrossTheWrapIsNotLoss() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        for sequence: UInt16 in [65534, 0, 65535, 1] {
            stats.record(sequenceNumber: sequence, timestamp: 0, arrivalTimeNanoseconds: 0)
        }
        #expect(stats.expected == 4 && stats.cumulativeLost == 0)
        #expect(stats.highestExtendedSequence == 65537)
    }

    @Test func duplicatesCanMakeLossNegative() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        feed(&stats, [0, 1, 2, 2, 3])
        #expect(stats.packetsReceived == 5 && stats.expected == 4 && stats.cumulativeLost == -1)
        let block = stats.makeReportBlock(ssrc: 1, lastSR: 0, delaySinceLastSR: 0)
        #expect(block.cumulativeLost == -1 && block.fractionLost == 0)
    }

    @Test func largeJumpIsDroppedUnlessConfirmed() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        feed(&stats, 0..<10)
        let stray = stats.record(sequenceNumber: 20000, timestamp: 0, arrivalTimeNanoseconds: 0)
        #expect(!stray)
        #expect(stats.packetsReceived == 10 && stats.highestExtendedSequence == 9)
        // Still in order after the stray packet.
        let next = stats.record(sequenceNumber: 10, timestamp: 0, arrivalTimeNanoseconds: 0)
        #expect(next)
        // A jump followed by its successor: the source restarted there.
        let jump = stats.record(sequenceNumber: 40000, timestamp: 0, arrivalTimeNanoseconds: 0)
        let confirm = stats.record(sequenceNumber: 40001, timestamp: 0, arrivalTimeNanoseconds: 0)
        #expect(!jump && confirm)
        #expect(stats.packetsReceived == 1 && stats.expected == 1 && stats.highestExtendedSequence == 40001)
    }

    @Test func jitterIsZeroForConstantTransit() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        // Timestamps cross 2^32−1 → 0 and arrival times are far from zero.
        feed(&stats, 0..<500, firstTimestamp: UInt32.max - 100 * Self.frameTicks, baseArrival: 1_700_000_000_000_000_000)
        #expect(stats.jitter == 0)
    }

    @Test func jitterGrowsAndConvergesForVariableTransit() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        // Every other packet 5 ms late: |D| = 240 ticks each step, so J converges to 240.
        let late: (Int) -> Int64 = { $0 % 2 == 1 ? 5_000_000 : 0 }
        feed(&stats, 0..<10, jitterNanoseconds: late)
        let early = stats.jitter
        #expect(early > 0 && early < 240)
        feed(&stats, 10..<400, jitterNanoseconds: { late($0 + 10) })
        #expect(stats.jitter > early)
        #expect((230...240).contains(stats.jitter))
        let block = stats.makeReportBlock(ssrc: 1, lastSR: 0, delaySinceLastSR: 0)
        #expect(block.jitter == stats.jitter)
    }

    @Test func jitterDecaysWhenTransitSettles() {
        var stats = RTPReceiveStatistics(clockRate: 48000)
        feed(&stats, 0..<100, jitterNanoseconds: { $0 % 2 == 1 ? 5_000_000 : 0 })
        let noisy = stats.jitter
        feed(&stats, 100..<400)
        #expect(stats.jitter < noisy / 10)
    }
}
