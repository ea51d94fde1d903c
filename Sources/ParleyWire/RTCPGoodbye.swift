// Goodbye, RTCP packet type 203 (RFC 3550 §6.6):
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P|    SC   |   PT=BYE=203  |             length            |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                           SSRC/CSRC                           |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// :                              ...                              :
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
// |     length    |               reason for leaving            ... (opt)
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The reason is zero-padded to a 32-bit boundary.

/// A BYE: the listed sources are leaving, optionally with a UTF-8 reason.
public struct Goodbye: Equatable, Sendable {
    /// Size of one SSRC/CSRC entry.
    static let ssrcSize = 4
    /// Longest reason the 8-bit length byte can describe.
    static let maxReasonLength = 255

    /// Sources leaving, at most 31.
    public var ssrcs: [UInt32]
    /// Reason for leaving, at most 255 UTF-8 bytes; nil for none.
    public var reason: String?

    /// A BYE with the given fields.
    public init(ssrcs: [UInt32], reason: String? = nil) {
        self.ssrcs = ssrcs
        self.reason = reason
    }

    /// Reads a BYE; `unknownType` unless PT is 203, `badCSRCCount` if the SSRC list runs past the body,
    /// `badLength` if the reason's length byte runs past it. Invalid UTF-8 is repaired, not rejected.
    public init(parsing packet: RTCPPacketView) throws(WireError) {
        guard packet.packetType == RTCPLayout.goodbye else { throw .unknownType }
        let count = Int(packet.countOrFormat)
        let listSize = count * Self.ssrcSize
        guard packet.bodyCount >= listSize else { throw .badCSRCCount }
        let bytes = packet.bytes
        self.ssrcs = (0..<count).map { bytes.getUInt32(at: packet.bodyOffset + $0 * Self.ssrcSize) }
        let reasonOffset = packet.bodyOffset + listSize
        let remaining = packet.bodyCount - listSize
        if remaining == 0 {
            self.reason = nil
        } else {
            let length = Int(bytes[reasonOffset])
            guard 1 + length <= remaining else { throw .badLength }
            let text = UnsafeRawBufferPointer(rebasing: bytes[(reasonOffset + 1)..<(reasonOffset + 1 + length)])
            self.reason = String(decoding: text, as: UTF8.self)
        }
    }

    /// Bytes `serialize(into:)` writes, header and reason padding included.
    public var serializedSize: Int {
        var size = RTCPLayout.headerSize + ssrcs.count * Self.ssrcSize
        if let reason { size += paddedToWord(1 + reason.utf8.count) }
        return size
    }

    /// Writes the BYE and returns its size; `badField` for more than 31 SSRCs or a reason over 255 bytes,
    /// `bufferTooSmall`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        guard ssrcs.count <= RTCPLayout.maxCount else { throw .badField }
        if let reason, reason.utf8.count > Self.maxReasonLength { throw .badField }
        let size = serializedSize
        guard buffer.count >= size else { throw .bufferTooSmall }
        RTCPLayout.writeHeader(into: buffer, count: ssrcs.count, packetType: RTCPLayout.goodbye, size: size)
        var offset = RTCPLayout.headerSize
        for ssrc in ssrcs {
            buffer.setUInt32(ssrc, at: offset)
            offset += Self.ssrcSize
        }
        if let reason {
            buffer[offset] = UInt8(reason.utf8.count)
            offset += 1
            for byte in reason.utf8 {
                buffer[offset] = byte
                offset += 1
            }
            buffer.setZeros(at: offset, count: size - offset)
        }
        return size
    }
}
