// Zero-copy view of one packet inside an RTCP compound packet (RFC 3550 §6.4, common header):
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P| RC/FMT  |      PT       |  length (32-bit words − 1)    |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                     body ... [padding | padding count]        |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

/// Field positions and packet types of RTCP (RFC 3550 §6, RFC 4585 §6.1).
enum RTCPLayout {
    /// Size of the common header.
    static let headerSize = 4
    /// The only RTCP version we speak.
    static let version: UInt8 = 2
    /// Byte 0: version in the top two bits.
    static let versionShift: UInt8 = 6
    /// Byte 0: padding flag.
    static let paddingMask: UInt8 = 0x20
    /// Byte 0: report count / feedback format.
    static let countMask: UInt8 = 0x1F
    /// Largest value of the 5-bit count field.
    static let maxCount = 31

    /// Packet type: sender report.
    static let senderReport: UInt8 = 200
    /// Packet type: receiver report.
    static let receiverReport: UInt8 = 201
    /// Packet type: source description.
    static let sourceDescription: UInt8 = 202
    /// Packet type: goodbye.
    static let goodbye: UInt8 = 203
    /// Packet type: application-defined.
    static let application: UInt8 = 204
    /// Packet type: transport-layer feedback (RFC 4585).
    static let transportFeedback: UInt8 = 205
    /// Packet type: payload-specific feedback (RFC 4585).
    static let payloadFeedback: UInt8 = 206

    /// Writes a common header with no padding for a packet of `size` bytes (a multiple of 4).
    static func writeHeader(into buffer: UnsafeMutableRawBufferPointer, count: Int, packetType: UInt8, size: Int) {
        buffer[0] = version << versionShift | UInt8(count)
        buffer[1] = packetType
        buffer.setUInt16(UInt16(size / 4 - 1), at: 2)
    }
}

/// One RTCP packet inside a compound packet, pointing into the caller's buffer.
///
/// Valid only while that buffer lives; offsets are relative to the start of the whole compound buffer.
public struct RTCPPacketView {
    /// The whole compound buffer this packet was found in.
    public let bytes: UnsafeRawBufferPointer
    /// Offset of this packet's first header byte.
    public let offset: Int
    /// Packet type: 200 SR, 201 RR, 202 SDES, 203 BYE, 204 APP, 205 RTPFB, 206 PSFB, or anything else.
    public let packetType: UInt8
    /// The 5-bit report count (SR/RR), source count (SDES/BYE) or feedback message type (RTPFB/PSFB).
    public let countOrFormat: UInt8
    /// The P bit: the last byte of this packet counts padding bytes.
    public let padding: Bool
    /// Whole packet size including the 4-byte header and padding: `(length + 1) * 4`.
    public let lengthBytes: Int
    /// Offset of the first body byte, just after the common header.
    public let bodyOffset: Int
    /// Number of body bytes, excluding the header and any padding.
    public let bodyCount: Int

    /// Parses the one packet starting at `offset` in `bytes` (usually you want `rtcpPackets(in:)` instead).
    /// Throws `truncated` (under 4 bytes), `badVersion`, `badLength` (length past the buffer), `badPadding`.
    public init(parsing bytes: UnsafeRawBufferPointer, at offset: Int = 0) throws(WireError) {
        guard bytes.count - offset >= RTCPLayout.headerSize else { throw .truncated }
        let byte0 = bytes[offset]
        guard byte0 >> RTCPLayout.versionShift == RTCPLayout.version else { throw .badVersion }
        let lengthBytes = (Int(bytes.getUInt16(at: offset + 2)) + 1) * 4
        guard lengthBytes <= bytes.count - offset else { throw .badLength }
        let padding = byte0 & RTCPLayout.paddingMask != 0
        var paddingCount = 0
        if padding {
            paddingCount = Int(bytes[offset + lengthBytes - 1])
            guard paddingCount >= 1, paddingCount <= lengthBytes - RTCPLayout.headerSize else { throw .badPadding }
        }
        self.bytes = bytes
        self.offset = offset
        self.packetType = bytes[offset + 1]
        self.countOrFormat = byte0 & RTCPLayout.countMask
        self.padding = padding
        self.lengthBytes = lengthBytes
        self.bodyOffset = offset + RTCPLayout.headerSize
        self.bodyCount = lengthBytes - RTCPLayout.headerSize - paddingCount
    }

    /// Byte range of the body within `bytes`.
    public var bodyRange: Range<Int> { bodyOffset..<(bodyOffset + bodyCount) }

    /// The body bytes, as a view into the same buffer.
    public var body: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[bodyRange]) }
}

/// Walks the packets of an RTCP compound packet in order, without allocating.
///
/// Any packet order is accepted (RFC 5506 reduced-size RTCP lets clients send a bare NACK). After `next()`
/// throws, the iterator is finished and returns nil. Not `IteratorProtocol`, because `next()` throws.
public struct RTCPCompoundIterator {
    private let bytes: UnsafeRawBufferPointer
    private var cursor: Int

    /// An iterator over the packets in `bytes`.
    public init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        self.cursor = 0
    }

    /// The next packet, nil at the end. Throws `truncated` if 1–3 bytes trail the last packet, `badVersion`,
    /// `badLength` if a length field runs past the buffer, `badPadding`.
    public mutating func next() throws(WireError) -> RTCPPacketView? {
        guard cursor < bytes.count else { return nil }
        do {
            let packet = try RTCPPacketView(parsing: bytes, at: cursor)
            cursor += packet.lengthBytes
            return packet
        } catch {
            cursor = bytes.count
            throw error
        }
    }
}

/// An iterator over the packets of the compound RTCP packet in `bytes` (which must outlive it).
public func rtcpPackets(in bytes: UnsafeRawBufferPointer) -> RTCPCompoundIterator {
    RTCPCompoundIterator(bytes)
}

/// RFC 5761 §4 demultiplexing of RTP and RTCP on one port: true when the first byte's top two bits are
/// version 2 (0b10) and the second byte (RTCP packet type, or RTP M bit + PT) is in 192...223.
public func isRTCP(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard bytes.count >= 2 else { return false }
    return bytes[0] >> RTCPLayout.versionShift == RTCPLayout.version && (192...223).contains(bytes[1])
}
