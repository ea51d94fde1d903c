// Per-source reception statistics for RTCP report blocks (RFC 3550 appendix A.1, A.3, A.8).

/// Counts what arrived from one RTP source and turns it into `ReportBlock`s.
///
/// Source validation follows A.1 without probation: the first packet is accepted as is. Afterwards a packet
/// up to `maxDropout` (3000) ahead is in order (a smaller sequence number means the 16-bit counter wrapped);
/// one up to `maxMisorder` (100) behind is a duplicate or reordered packet and still counts as received (so
/// cumulative lost may go negative, as the RFC allows). Any other jump is dropped, unless the very next packet
/// follows it in sequence, in which case the source is taken to have restarted and the counters reset there.
/// Jitter (A.8) is updated for every accepted packet, with the 1/16 gain, in timestamp units.
public struct RTPReceiveStatistics: Sendable {
    /// Largest forward jump still taken as in order.
    static let maxDropout: UInt16 = 3000
    /// Largest backward step still taken as reordering.
    static let maxMisorder: UInt16 = 100
    /// Size of the sequence number space.
    static let sequenceModulus: Int64 = 1 << 16
    /// Jitter is kept scaled by 16 (A.8's integer form); this shift undoes the scale.
    static let jitterScaleShift: Int64 = 4
    /// Nanoseconds per second, for converting arrival times to timestamp units.
    static let nanosecondsPerSecond: Int64 = 1_000_000_000

    /// RTP clock rate of the source's payload, in Hz.
    public let clockRate: Int

    private var started = false
    private var baseSequence: Int64 = 0
    private var maxSequence: UInt16 = 0
    private var cycles: Int64 = 0
    /// Sequence number that would confirm a large jump as a restart (A.1 `bad_seq`); nil when none is pending.
    private var restartCandidate: UInt16?
    private var received: UInt64 = 0
    private var expectedPrior: Int64 = 0
    private var receivedPrior: UInt64 = 0
    private var lastTransit: UInt32?
    private var scaledJitter: Int64 = 0

    /// Statistics for a source whose timestamps tick at `clockRate` Hz (48000 for Opus).
    public init(clockRate: Int) {
        precondition(clockRate > 0, "clock rate must be positive")
        self.clockRate = clockRate
    }

    /// Packets accepted since the start (or the last restart), duplicates included.
    public var packetsReceived: UInt64 { received }

    /// Extended highest sequence number: wrap count in the high 16 bits, highest sequence number in the low 16.
    public var highestExtendedSequence: UInt32 { UInt32(truncatingIfNeeded: cycles + Int64(maxSequence)) }

    /// Packets expected: extended highest minus the first sequence number, plus one (0 before any packet).
    public var expected: Int64 { started ? cycles + Int64(maxSequence) - baseSequence + 1 : 0 }

    /// Expected minus received; negative when duplicates outnumber losses.
    public var cumulativeLost: Int64 { expected - Int64(received) }

    /// Interarrival jitter estimate, in timestamp units.
    public var jitter: UInt32 { UInt32(clamping: scaledJitter >> Self.jitterScaleShift) }

    /// Records one packet; returns false if it was dropped as an unconfirmed large jump.
    @discardableResult
    public mutating func record(sequenceNumber: UInt16, timestamp: UInt32, arrivalTimeNanoseconds: Int64) -> Bool {
        guard updateSequence(sequenceNumber) else { return false }
        updateJitter(timestamp: timestamp, arrivalTimeNanoseconds: arrivalTimeNanoseconds)
        return true
    }

    /// A.1 `update_seq` without probation.
    private mutating func updateSequence(_ sequence: UInt16) -> Bool {
        guard started else {
            restart(at: sequence)
            received = 1
            return true
        }
        let forward = sequence &- maxSequence
        if forward < Self.maxDropout {
            if sequence < maxSequence { cycles += Self.sequenceModulus }
            maxSequence = sequence
        } else if forward <= UInt16(Self.sequenceModulus - Int64(Self.maxMisorder)) {
            guard sequence == restartCandidate else {
                restartCandidate = sequence &+ 1
                return false
            }
            restart(at: sequence)
            lastTransit = nil
        } else {
            // Duplicate or reordered packet: counted, does not move the highest sequence.
        }
        received += 1
        return true
    }

    /// A.1 `init_seq`: the source (re)starts at `sequence`.
    private mutating func restart(at sequence: UInt16) {
        started = true
        baseSequence = Int64(sequence)
        maxSequence = sequence
        cycles = 0
        restartCandidate = nil
        received = 0
        receivedPrior = 0
        expectedPrior = 0
    }

    /// A.8: `J += (|D| - J) / 16`, in timestamp units, kept scaled by 16.
    private mutating func updateJitter(timestamp: UInt32, arrivalTimeNanoseconds: Int64) {
        let rate = Int64(clockRate)
        let seconds = arrivalTimeNanoseconds / Self.nanosecondsPerSecond
        let remainder = arrivalTimeNanoseconds % Self.nanosecondsPerSecond
        let arrival = seconds &* rate &+ remainder * rate / Self.nanosecondsPerSecond
        let transit = UInt32(truncatingIfNeeded: arrival) &- timestamp
        defer { lastTransit = transit }
        guard let lastTransit else { return }
        let difference = Int64(Int32(bitPattern: transit &- lastTransit)).magnitude
        scaledJitter += Int64(difference) - ((scaledJitter + 8) >> Self.jitterScaleShift)
    }

    /// A report block for this source; fraction lost covers the packets since the previous call (A.3), and
    /// cumulative lost is clamped to the 24-bit signed range.
    public mutating func makeReportBlock(ssrc: UInt32, lastSR: UInt32, delaySinceLastSR: UInt32) -> ReportBlock {
        let expectedNow = expected
        let expectedInterval = expectedNow - expectedPrior
        expectedPrior = expectedNow
        let receivedInterval = Int64(received) - Int64(receivedPrior)
        receivedPrior = received
        let lostInterval = expectedInterval - receivedInterval
        let fraction: UInt8 =
            expectedInterval == 0 || lostInterval <= 0
            ? 0 : UInt8(clamping: (lostInterval << 8) / expectedInterval)
        let lost = min(max(cumulativeLost, Int64(ReportBlock.minCumulativeLost)), Int64(ReportBlock.maxCumulativeLost))
        return ReportBlock(
            ssrc: ssrc, fractionLost: fraction, cumulativeLost: Int32(lost), highestSequence: highestExtendedSequence,
            jitter: jitter, lastSR: lastSR, delaySinceLastSR: delaySinceLastSR)
    }
}
