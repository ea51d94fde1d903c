import ParleyWire

/// The RTCP packet types of a compound, in order (empty if it does not parse).
func rtcpTypes(_ bytes: [UInt8]) -> [UInt8] {
    bytes.withUnsafeBytes { raw in
        var it = rtcpPackets(in: raw)
        var types: [UInt8] = []
        while let p = try? it.next() { types.append(p.packetType) }
        return types
    }
}

/// The packets of a compound as values (what the tests look at).
struct ParsedCompound {
    var senderReports: [SenderReport] = []
    var receiverReports: [ReceiverReport] = []
    var descriptions: [SourceDescription.Chunk] = []
    var goodbyes: [UInt32] = []

    init(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var it = rtcpPackets(in: raw)
            while let p = try it.next() {
                switch p.packetType {
                case 200: senderReports.append(try SenderReport(parsing: p))
                case 201: receiverReports.append(try ReceiverReport(parsing: p))
                case 202: descriptions += try SourceDescription(parsing: p).chunks
                case 203: goodbyes += try Goodbye(parsing: p).ssrcs
                default: break
                }
            }
        }
    }

    /// Every report block, from SRs and RRs alike.
    var blocks: [ReportBlock] { senderReports.flatMap(\.reports) + receiverReports.flatMap(\.reports) }
}
