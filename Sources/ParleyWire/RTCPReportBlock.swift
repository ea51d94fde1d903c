// One reception report block (RFC 3550 §6.4.1), 24 bytes, as found in SR and RR packets:
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
// |                 SSRC_1 (SSRC of first source)                 |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// | fraction lost |       cumulative number of packets lost       |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |           extended highest sequence number received           |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                      interarrival jitter                      |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                         last SR (LSR)                         |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                   delay since last SR (DLSR)                  |
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+

/// One reception report: what a receiver has seen of one source.
public struct ReportBlock: Equatable, Sendable {
    /// Size of a report block on the wire.
    static let size = 24
    /// Smallest value of the 24-bit signed cumulative-lost field.
    static let minCumulativeLost: Int32 = -0x80_0000
    /// Largest value of the 24-bit signed cumulative-lost field.
    static let maxCumulativeLost: Int32 = 0x7F_FFFF
    /// Shift of fraction lost within its word.
    static let fractionLostShift: UInt32 = 24
    /// Mask of cumulative lost within its word.
    static let cumulativeLostMask: UInt32 = 0x00FF_FFFF

    /// The source this block reports on.
    public var ssrc: UInt32
    /// Fraction of packets lost since the previous report, in 1/256 units.
    public var fractionLost: UInt8
    /// Packets lost since the beginning, 24-bit signed (may be negative with duplicates); clamped when serialized.
    public var cumulativeLost: Int32
    /// Extended highest sequence number received (cycles << 16 | highest sequence).
    public var highestSequence: UInt32
    /// Interarrival jitter, in timestamp units.
    public var jitter: UInt32
    /// Middle 32 bits of the NTP timestamp of the last SR received from the source, 0 if none.
    public var lastSR: UInt32
    /// Delay since that SR, in 1/65536 seconds.
    public var delaySinceLastSR: UInt32

    /// A report block with the given fields.
    public init(
        ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, highestSequence: UInt32, jitter: UInt32,
        lastSR: UInt32, delaySinceLastSR: UInt32
    ) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.highestSequence = highestSequence
        self.jitter = jitter
        self.lastSR = lastSR
        self.delaySinceLastSR = delaySinceLastSR
    }

    /// Reads a block at `offset`; the caller has checked that 24 bytes are there.
    init(bytes: UnsafeRawBufferPointer, at offset: Int) {
        let lossWord = bytes.getUInt32(at: offset + 4)
        // Sign-extend the 24-bit field: move it to the top of an Int32, then shift back arithmetically.
        let cumulative = Int32(bitPattern: lossWord << 8) >> 8
        self.init(
            ssrc: bytes.getUInt32(at: offset),
            fractionLost: UInt8(truncatingIfNeeded: lossWord >> Self.fractionLostShift),
            cumulativeLost: cumulative,
            highestSequence: bytes.getUInt32(at: offset + 8),
            jitter: bytes.getUInt32(at: offset + 12),
            lastSR: bytes.getUInt32(at: offset + 16),
            delaySinceLastSR: bytes.getUInt32(at: offset + 20))
    }

    /// Writes the block at `offset`; the caller has checked that 24 bytes are there.
    func write(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        let clamped = min(max(cumulativeLost, Self.minCumulativeLost), Self.maxCumulativeLost)
        let lossWord = UInt32(fractionLost) << Self.fractionLostShift
            | UInt32(bitPattern: clamped) & Self.cumulativeLostMask
        buffer.setUInt32(ssrc, at: offset)
        buffer.setUInt32(lossWord, at: offset + 4)
        buffer.setUInt32(highestSequence, at: offset + 8)
        buffer.setUInt32(jitter, at: offset + 12)
        buffer.setUInt32(lastSR, at: offset + 16)
        buffer.setUInt32(delaySinceLastSR, at: offset + 20)
    }
}
