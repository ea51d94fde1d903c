// Receiver report, RTCP packet type 201 (RFC 3550 §6.4.2):
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P|    RC   |   PT=RR=201   |             length            |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                     SSRC of packet sender                     |
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
// |                 report blocks (RC × 24 bytes)                 |
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
// |                  profile-specific extensions (ignored)        |

/// A receiver report: reception reports from a participant that is not sending.
public struct ReceiverReport: Equatable, Sendable {
    /// Body bytes before the report blocks: the reporter's SSRC.
    static let reporterSize = 4

    /// SSRC of the packet sender (the reporter).
    public var ssrc: UInt32
    /// Reception report blocks, at most 31.
    public var reports: [ReportBlock]

    /// A receiver report with the given fields.
    public init(ssrc: UInt32, reports: [ReportBlock] = []) {
        self.ssrc = ssrc
        self.reports = reports
    }

    /// Reads an RR; `unknownType` unless PT is 201, `badLength` if the body is shorter than its report count needs.
    public init(parsing packet: RTCPPacketView) throws(WireError) {
        guard packet.packetType == RTCPLayout.receiverReport else { throw .unknownType }
        let count = Int(packet.countOrFormat)
        guard packet.bodyCount >= Self.reporterSize + count * ReportBlock.size else { throw .badLength }
        let bytes = packet.bytes
        self.ssrc = bytes.getUInt32(at: packet.bodyOffset)
        let first = packet.bodyOffset + Self.reporterSize
        self.reports = (0..<count).map { ReportBlock(bytes: bytes, at: first + $0 * ReportBlock.size) }
    }

    /// Bytes `serialize(into:)` writes, header included.
    public var serializedSize: Int { RTCPLayout.headerSize + Self.reporterSize + reports.count * ReportBlock.size }

    /// Writes the RR and returns its size; `badField` for more than 31 reports, `bufferTooSmall`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        guard reports.count <= RTCPLayout.maxCount else { throw .badField }
        let size = serializedSize
        guard buffer.count >= size else { throw .bufferTooSmall }
        RTCPLayout.writeHeader(into: buffer, count: reports.count, packetType: RTCPLayout.receiverReport, size: size)
        buffer.setUInt32(ssrc, at: RTCPLayout.headerSize)
        let first = RTCPLayout.headerSize + Self.reporterSize
        for (i, report) in reports.enumerated() {
            report.write(into: buffer, at: first + i * ReportBlock.size)
        }
        return size
    }
}
