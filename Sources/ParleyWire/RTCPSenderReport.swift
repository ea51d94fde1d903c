// Sender report, RTCP packet type 200 (RFC 3550 §6.4.1):
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P|    RC   |   PT=SR=200   |             length            |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                         SSRC of sender                        |
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
// |              NTP timestamp, most significant word             |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |             NTP timestamp, least significant word             |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                         RTP timestamp                         |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                     sender's packet count                     |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                      sender's octet count                     |
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
// |                 report blocks (RC × 24 bytes)                 |
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
// |                  profile-specific extensions (ignored)        |

/// A sender report: the sender's clocks and counts, plus reception reports.
public struct SenderReport: Equatable, Sendable {
    /// Body bytes before the report blocks: SSRC, NTP (8), RTP timestamp, packet and octet counts.
    static let senderInfoSize = 24

    /// SSRC of the sender.
    public var ssrc: UInt32
    /// 64-bit NTP timestamp (seconds since 1900 in the high word, fraction in the low word).
    public var ntpTimestamp: UInt64
    /// RTP timestamp corresponding to `ntpTimestamp`.
    public var rtpTimestamp: UInt32
    /// RTP packets sent since the start.
    public var packetCount: UInt32
    /// Payload octets sent since the start.
    public var octetCount: UInt32
    /// Reception report blocks, at most 31.
    public var reports: [ReportBlock]

    /// A sender report with the given fields.
    public init(
        ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
        reports: [ReportBlock] = []
    ) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reports = reports
    }

    /// Reads an SR; `unknownType` unless PT is 200, `badLength` if the body is shorter than its report count needs.
    public init(parsing packet: RTCPPacketView) throws(WireError) {
        guard packet.packetType == RTCPLayout.senderReport else { throw .unknownType }
        let count = Int(packet.countOrFormat)
        guard packet.bodyCount >= Self.senderInfoSize + count * ReportBlock.size else { throw .badLength }
        let bytes = packet.bytes
        let base = packet.bodyOffset
        self.ssrc = bytes.getUInt32(at: base)
        self.ntpTimestamp = bytes.getUInt64(at: base + 4)
        self.rtpTimestamp = bytes.getUInt32(at: base + 12)
        self.packetCount = bytes.getUInt32(at: base + 16)
        self.octetCount = bytes.getUInt32(at: base + 20)
        let first = base + Self.senderInfoSize
        self.reports = (0..<count).map { ReportBlock(bytes: bytes, at: first + $0 * ReportBlock.size) }
    }

    /// Bytes `serialize(into:)` writes, header included.
    public var serializedSize: Int { RTCPLayout.headerSize + Self.senderInfoSize + reports.count * ReportBlock.size }

    /// Writes the SR and returns its size; `badField` for more than 31 reports, `bufferTooSmall`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        guard reports.count <= RTCPLayout.maxCount else { throw .badField }
        let size = serializedSize
        guard buffer.count >= size else { throw .bufferTooSmall }
        RTCPLayout.writeHeader(into: buffer, count: reports.count, packetType: RTCPLayout.senderReport, size: size)
        let base = RTCPLayout.headerSize
        buffer.setUInt32(ssrc, at: base)
        buffer.setUInt64(ntpTimestamp, at: base + 4)
        buffer.setUInt32(rtpTimestamp, at: base + 12)
        buffer.setUInt32(packetCount, at: base + 16)
        buffer.setUInt32(octetCount, at: base + 20)
        for (i, report) in reports.enumerated() {
            report.write(into: buffer, at: base + Self.senderInfoSize + i * ReportBlock.size)
        }
        return size
    }
}
