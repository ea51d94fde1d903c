import Testing
@testable import ParleyWire

@Suite("RTCP compound writer (RFC 3550 §6.1)")
struct RTCPCompoundWriterTests {
    /// SR (one block) + SDES CNAME "ab" for two SSRCs + a one-entry NACK + BYE of two SSRCs.
    static let compoundBytes: [UInt8] = [
        0x81, 0xC8, 0x00, 0x0C, // SR, RC=1, 52 bytes
        0x00, 0x00, 0x00, 0x01, // SSRC 1
        0xE5, 0x4D, 0x2A, 0x80, // NTP seconds
        0x80, 0x00, 0x00, 0x00, // NTP fraction
        0x00, 0x00, 0x03, 0xC0, // RTP timestamp 960
        0x00, 0x00, 0x00, 0x0A, // packets 10
        0x00, 0x00, 0x06, 0x40, // octets 1600
        0x00, 0x00, 0x00, 0x02, // block: SSRC 2
        0x40, 0xFF, 0xFF, 0xFE, // fraction 64, cumulative −2
        0x00, 0x01, 0x00, 0x05, // highest 1:5
        0x00, 0x00, 0x00, 0x20, // jitter 32
        0x2A, 0x80, 0x80, 0x00, // LSR
        0x00, 0x01, 0x80, 0x00, // DLSR 1.5 s
        0x82, 0xCA, 0x00, 0x06, // SDES, SC=2, 28 bytes
        0x00, 0x00, 0x00, 0x01, // SSRC 1
        0x01, 0x02, 0x61, 0x62, // CNAME "ab"
        0x00, 0x00, 0x00, 0x00, // end, padding
        0x00, 0x00, 0x00, 0x03, // SSRC 3
        0x01, 0x02, 0x61, 0x62, // CNAME "ab"
        0x00, 0x00, 0x00, 0x00, // end, padding
        0x81, 0xCD, 0x00, 0x03, // RTPFB FMT=1 (generic NACK), 16 bytes
        0x00, 0x00, 0x00, 0x01, // sender SSRC 1
        0x00, 0x00, 0x00, 0x02, // media SSRC 2
        0x00, 0x0A, 0x00, 0x01, // PID 10, BLP: 11
        0x82, 0xCB, 0x00, 0x02, // BYE, SC=2, 12 bytes
        0x00, 0x00, 0x00, 0x01, // SSRC 1
        0x00, 0x00, 0x00, 0x03, // SSRC 3
    ]

    static let block = ReportBlock(ssrc: 2, fractionLost: 64, cumulativeLost: -2, highestSequence: 0x0001_0005, jitter: 32,
                                   lastSR: 0x2A80_8000, delaySinceLastSR: 0x0001_8000)

    static func write(capacity: Int = 1500, _ body: (inout RTCPCompoundWriter) throws -> Void) throws -> [UInt8] {
        try serialized(capacity: capacity) { buffer in
            var w = RTCPCompoundWriter(into: buffer)
            try body(&w)
            return w.length
        }
    }

    @Test func compoundTable() throws {
        let bytes = try Self.write { w in
            try w.senderReport(ssrc: 1, ntpTimestamp: 0xE54D_2A80_8000_0000, rtpTimestamp: 960, packetCount: 10, octetCount: 1600)
            try w.reportBlock(Self.block)
            try w.cname(ssrc: 1, "ab")
            try w.cname(ssrc: 3, "ab")
            try w.nack(GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [10, 11]))
            try w.goodbye(ssrc: 1)
            try w.goodbye(ssrc: 3)
        }
        #expect(bytes == Self.compoundBytes)
        // And back: the codecs read every packet of it.
        let packets = try Self.split(bytes)
        #expect(packets.count == 4)
        #expect(try withRTCP(packets[0]) { try SenderReport(parsing: $0) } == SenderReport(
            ssrc: 1, ntpTimestamp: 0xE54D_2A80_8000_0000, rtpTimestamp: 960, packetCount: 10, octetCount: 1600, reports: [Self.block]))
        #expect(try withRTCP(packets[1]) { try SourceDescription(parsing: $0) }.chunks.map(\.cname) == ["ab", "ab"])
        #expect(try withRTCP(packets[2]) { try GenericNACK(parsing: $0) }.lost == [10, 11])
        #expect(try withRTCP(packets[3]) { try Goodbye(parsing: $0) } == Goodbye(ssrcs: [1, 3]))
    }

    /// The packets of a compound, each as its own bytes.
    static func split(_ bytes: [UInt8]) throws -> [[UInt8]] {
        try bytes.withUnsafeBytes { raw in
            var it = rtcpPackets(in: raw)
            var out: [[UInt8]] = []
            while let p = try it.next() { out.append(Array(raw[p.offset..<(p.offset + p.lengthBytes)])) }
            return out
        }
    }

    @Test func receiverReportsAndSeveralSenderReports() throws {
        let bytes = try Self.write { w in
            try w.receiverReport(ssrc: 9)
            try w.senderReport(ssrc: 4, ntpTimestamp: 1, rtpTimestamp: 2, packetCount: 3, octetCount: 4)
            try w.reportBlock(Self.block)
            try w.reportBlock(Self.block)
            try w.cname(ssrc: 9, "")
        }
        let rr = try withRTCP(bytes) { try ReceiverReport(parsing: $0) }
        #expect(rr == ReceiverReport(ssrc: 9))
        let packets = try rtcpSummary(bytes)
        #expect(packets.map(\.type) == [201, 200, 202])
        #expect(packets.map(\.count) == [0, 2, 1])
        #expect(bytes.count == 8 + 28 + 48 + 12)
    }

    @Test func orderRules() throws {
        // Nothing but a report may come first.
        #expect(throws: WireError.badField) { try Self.write { try $0.cname(ssrc: 1, "a") } }
        #expect(throws: WireError.badField) { try Self.write { try $0.goodbye(ssrc: 1) } }
        #expect(throws: WireError.badField) { try Self.write { try $0.nack(GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [1])) } }
        #expect(throws: WireError.badField) { try Self.write { try $0.reportBlock(Self.block) } }
        // No report after SDES, no SDES after feedback, no feedback after BYE, no block after SDES.
        #expect(throws: WireError.badField) {
            try Self.write { w in try w.receiverReport(ssrc: 1); try w.cname(ssrc: 1, "a"); try w.receiverReport(ssrc: 1) }
        }
        #expect(throws: WireError.badField) {
            try Self.write { w in try w.receiverReport(ssrc: 1); try w.nack(GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [1])); try w.cname(ssrc: 1, "a") }
        }
        #expect(throws: WireError.badField) {
            try Self.write { w in try w.receiverReport(ssrc: 1); try w.goodbye(ssrc: 1); try w.nack(GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [1])) }
        }
        #expect(throws: WireError.badField) {
            try Self.write { w in try w.receiverReport(ssrc: 1); try w.cname(ssrc: 1, "a"); try w.reportBlock(Self.block) }
        }
    }

    @Test func limits() throws {
        #expect(throws: WireError.badField) {
            try Self.write(capacity: 2000) { w in
                try w.receiverReport(ssrc: 1)
                for _ in 0..<32 { try w.reportBlock(Self.block) }
            }
        }
        #expect(throws: WireError.badField) {
            try Self.write { w in try w.receiverReport(ssrc: 1); try w.cname(ssrc: 1, String(repeating: "x", count: 256)) }
        }
        #expect(throws: WireError.bufferTooSmall) { try Self.write(capacity: 7) { try $0.receiverReport(ssrc: 1) } }
        #expect(throws: WireError.bufferTooSmall) {
            try Self.write(capacity: 20) { w in try w.receiverReport(ssrc: 1); try w.reportBlock(Self.block) }
        }
        #expect(throws: WireError.bufferTooSmall) {
            try Self.write(capacity: 16) { w in try w.receiverReport(ssrc: 1); try w.cname(ssrc: 1, "abcd") }
        }
        // 31 blocks fit.
        let bytes = try Self.write(capacity: 2000) { w in
            try w.receiverReport(ssrc: 1)
            for _ in 0..<31 { try w.reportBlock(Self.block) }
        }
        #expect(try withRTCP(bytes) { try ReceiverReport(parsing: $0) }.reports.count == 31)
    }
}
