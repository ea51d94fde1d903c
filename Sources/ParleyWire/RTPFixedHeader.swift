// The RTP fixed header (RFC 3550 §5.1) as a plain value, written into a buffer the caller owns (pion's
// `MarshalTo(buf)`): no arrays, no allocation, so every sender can use it on its per-packet path.
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P|X|  CC   |M|     PT      |       sequence number         |   0   `write(into:)`
// |                           timestamp                           |   4
// |           synchronization source (SSRC) identifier            |   8
// |            contributing source (CSRC) identifiers ...         |  12   `writeCSRC(_:at:into:)`, one by one
// |  extension block (RFC 8285), if X ...                         |       `RTPExtensionWriter(at: extensionOffset(...))`
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// A sender that fans one packet out writes the header once and patches the sequence number per listener
// (`patchSequenceNumber(_:in:)`). The padding bit is never set.

/// The fixed 12 bytes of an RTP header, plus the two counts byte 0 carries (CC and X).
public struct RTPFixedHeader: Equatable, Sendable {
    /// Bytes `write(into:)` writes.
    public static let size = RTPLayout.fixedHeaderSize
    /// Largest CSRC count (the 4-bit CC field).
    public static let maxCSRCCount = RTPLayout.maxCSRCCount

    /// The M bit.
    public var marker: Bool
    /// Payload type, `0...127`.
    public var payloadType: UInt8
    /// Sequence number.
    public var sequenceNumber: UInt16
    /// Media timestamp.
    public var timestamp: UInt32
    /// Synchronization source.
    public var ssrc: UInt32
    /// The CC field: how many CSRCs follow, `0...15` (the caller writes them with `writeCSRC`).
    public var csrcCount: Int
    /// The X bit: an extension block follows the CSRCs (the caller writes it with `RTPExtensionWriter`).
    public var hasExtension: Bool

    /// A fixed header with the given fields.
    @inlinable
    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
                csrcCount: Int = 0, hasExtension: Bool = false) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcCount = csrcCount
        self.hasExtension = hasExtension
    }

    /// Offset just after `csrcCount` CSRCs: where the extension block (or, without one, the payload) begins.
    @inlinable
    public static func extensionOffset(csrcCount: Int) -> Int { size + csrcCount * RTPLayout.csrcSize }

    /// Writes the 12 fixed bytes at the start of `buffer`; returns `size`. The caller has checked that the fields are
    /// in range (payload type ≤ 127, CC ≤ 15) and that the buffer holds `size` bytes (checked in debug builds).
    @inlinable
    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        assert(payloadType <= RTPLayout.maxPayloadType && (0...RTPLayout.maxCSRCCount).contains(csrcCount))
        var byte0 = RTPLayout.version << RTPLayout.versionShift | UInt8(truncatingIfNeeded: csrcCount) & RTPLayout.csrcCountMask
        if hasExtension { byte0 |= RTPLayout.extensionMask }
        buffer[RTPLayout.flagsOffset] = byte0
        buffer[RTPLayout.payloadTypeOffset] = (marker ? RTPLayout.markerMask : 0) | payloadType & RTPLayout.payloadTypeMask
        buffer.setUInt16(sequenceNumber, at: RTPLayout.sequenceOffset)
        buffer.setUInt32(timestamp, at: RTPLayout.timestampOffset)
        buffer.setUInt32(ssrc, at: RTPLayout.ssrcOffset)
        return Self.size
    }

    /// Writes CSRC number `index` (0-based) of the list that follows the fixed header.
    @inlinable
    public static func writeCSRC(_ csrc: UInt32, at index: Int, into buffer: UnsafeMutableRawBufferPointer) {
        buffer.setUInt32(csrc, at: size + index * RTPLayout.csrcSize)
    }

    /// Overwrites the sequence number of a header already written at the start of `buffer`.
    @inlinable
    public static func patchSequenceNumber(_ sequenceNumber: UInt16, in buffer: UnsafeMutableRawBufferPointer) {
        buffer.setUInt16(sequenceNumber, at: RTPLayout.sequenceOffset)
    }
}
