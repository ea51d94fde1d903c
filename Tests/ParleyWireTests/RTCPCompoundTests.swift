import Testing
import ParleyWire

@Suite("RTCP compound packets and demux")
struct RTCPCompoundTests {
    @Test func iteratesInAnyOrder() throws {
        // A reduced-size compound (RFC 5506): a NACK first, then a BYE, then an RR.
        let bytes = RTCPNACKTests.nackBytes + RTCPGoodbyeTests.byeBytes + RTCPReportTests.receiverReportBytes
        let packets = try rtcpSummary(bytes)
        #expect(packets.map(\.type) == [205, 203, 201])
        #expect(packets.map(\.count) == [1, 2, 1])
        #expect(packets.map(\.body.count) == [16, 12, 28])
    }

    @Test func emptyBufferHasNoPackets() throws {
        #expect(try rtcpSummary([]).isEmpty)
    }

    @Test func viewFieldsAndOffsets() throws {
        let bytes = RTCPReportTests.receiverReportBytes + RTCPGoodbyeTests.byeBytes
        try bytes.withUnsafeBytes { raw in
            var packets = rtcpPackets(in: raw)
            let first = try packets.next()
            let rr = try #require(first)
            #expect(rr.offset == 0 && rr.lengthBytes == 32 && rr.bodyRange == 4..<32 && !rr.padding)
            let second = try packets.next()
            let bye = try #require(second)
            #expect(bye.offset == 32 && bye.packetType == 203 && bye.countOrFormat == 2 && bye.bodyOffset == 36)
            let end = try packets.next()
            #expect(end == nil)
        }
    }

    @Test(arguments: 1..<4)
    func truncatedHeader(length: Int) {
        #expect(throws: WireError.truncated) { try rtcpSummary(Array(RTCPReportTests.receiverReportBytes[..<length])) }
    }

    @Test(arguments: [4, 8, 31])
    func lengthPastBuffer(length: Int) {
        #expect(throws: WireError.badLength) { try rtcpSummary(Array(RTCPReportTests.receiverReportBytes[..<length])) }
    }

    @Test func overlongLengthField() {
        var bytes = RTCPReportTests.receiverReportBytes
        bytes[3] = 0x08 // 9 words claimed, 8 present
        #expect(throws: WireError.badLength) { try rtcpSummary(bytes) }
    }

    @Test(arguments: 1..<4)
    func trailingBytesAfterLastPacket(extra: Int) throws {
        let bytes = RTCPReportTests.receiverReportBytes + [UInt8](repeating: 0x80, count: extra)
        try bytes.withUnsafeBytes { raw in
            var packets = rtcpPackets(in: raw)
            let first = try packets.next()
            #expect(first?.packetType == 201)
            var thrown: WireError?
            do { _ = try packets.next() } catch let failure as WireError { thrown = failure } catch {}
            #expect(thrown == .truncated)
            let afterError = try packets.next()
            #expect(afterError == nil) // finished after an error
        }
    }

    @Test(arguments: [UInt8(0x01), 0x41, 0xC1])
    func badVersion(byte0: UInt8) {
        var bytes = RTCPReportTests.receiverReportBytes
        bytes[0] = byte0
        #expect(throws: WireError.badVersion) { try rtcpSummary(bytes) }
    }

    @Test(arguments: [UInt8(0), 5, 255])
    func badPaddingCount(count: UInt8) {
        // RR with P=1, 2 words: padding count must be 1...4.
        let bytes: [UInt8] = [0xA0, 0xC9, 0x00, 0x01, 0x00, 0x00, 0x00, count]
        #expect(throws: WireError.badPadding) { try rtcpSummary(bytes) }
    }

    @Test(arguments: [
        // (first two bytes, is RTCP per RFC 5761 §4)
        ([UInt8(0x80), 0xC8], true),   // SR
        ([0x81, 0xCD], true),          // RTPFB
        ([0x80, 0xC0], true),          // 192, lowest
        ([0x80, 0xDF], true),          // 223, highest
        ([0x80, 0xBF], false),         // 191
        ([0x80, 0xE0], false),         // 224
        ([0x80, 0x6F], false),         // RTP PT 111
        ([0x80, 0xEF], false),         // RTP M=1 PT 111
        ([0x40, 0xC8], false),         // version 1
        ([0x00, 0xC8], false),         // STUN-like first byte
        ([0x80], false),               // too short
        ([], false),
    ] as [([UInt8], Bool)])
    func demux(bytes: [UInt8], expected: Bool) {
        #expect(bytes.withUnsafeBytes { isRTCP($0) } == expected)
    }
}
