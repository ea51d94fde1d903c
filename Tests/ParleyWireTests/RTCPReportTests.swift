import Testing
import ParleyWire

@Suite("RTCP sender and receiver reports")
struct RTCPReportTests {
    static let block = ReportBlock(
        ssrc: 2, fractionLost: 64, cumulativeLost: -2, highestSequence: 65541, jitter: 32,
        lastSR: 0x2A80_8000, delaySinceLastSR: 65536)

    static let senderReportBytes: [UInt8] = [
        0x81, 0xC8, 0x00, 0x0C, // V=2 P=0 RC=1 | PT=200 | length 12 words (52 bytes)
        0x00, 0x00, 0x00, 0x01, // SSRC of sender
        0xE5, 0x4D, 0x2A, 0x80, // NTP seconds
        0x80, 0x00, 0x00, 0x00, // NTP fraction (0.5 s)
        0x00, 0x00, 0x03, 0xC0, // RTP timestamp 960
        0x00, 0x00, 0x00, 0x0A, // packet count 10
        0x00, 0x00, 0x06, 0x40, // octet count 1600
        0x00, 0x00, 0x00, 0x02, // report block: SSRC 2
        0x40, 0xFF, 0xFF, 0xFE, // fraction 64/256, cumulative lost −2 (24-bit two's complement)
        0x00, 0x01, 0x00, 0x05, // extended highest sequence: 1 cycle, seq 5
        0x00, 0x00, 0x00, 0x20, // jitter 32
        0x2A, 0x80, 0x80, 0x00, // LSR
        0x00, 0x01, 0x00, 0x00, // DLSR 1 s
    ]

    static let senderReport = SenderReport(
        ssrc: 1, ntpTimestamp: 0xE54D_2A80_8000_0000, rtpTimestamp: 960, packetCount: 10, octetCount: 1600,
        reports: [block])

    @Test func senderReportTable() throws {
        let parsed = try withRTCP(Self.senderReportBytes) { try SenderReport(parsing: $0) }
        #expect(parsed == Self.senderReport)
        #expect(Self.senderReport.serializedSize == 52)
        #expect(try serialized { try Self.senderReport.serialize(into: $0) } == Self.senderReportBytes)
    }

    static let receiverReportBytes: [UInt8] = [
        0x81, 0xC9, 0x00, 0x07, // V=2 RC=1 | PT=201 | length 7 words (32 bytes)
        0x00, 0x00, 0x00, 0x09, // SSRC of reporter
        0x00, 0x00, 0x00, 0x02, // report block: SSRC 2
        0xFF, 0x7F, 0xFF, 0xFF, // fraction 255, cumulative lost +8388607 (largest 24-bit)
        0xFF, 0xFF, 0xFF, 0xFF, // extended highest sequence 2^32−1
        0x00, 0x00, 0x00, 0x00, // jitter
        0x00, 0x00, 0x00, 0x00, // LSR
        0x00, 0x00, 0x00, 0x00, // DLSR
    ]

    @Test func receiverReportTable() throws {
        let expected = ReceiverReport(ssrc: 9, reports: [
            ReportBlock(ssrc: 2, fractionLost: 255, cumulativeLost: 0x7F_FFFF, highestSequence: .max, jitter: 0,
                        lastSR: 0, delaySinceLastSR: 0),
        ])
        #expect(try withRTCP(Self.receiverReportBytes) { try ReceiverReport(parsing: $0) } == expected)
        #expect(try serialized { try expected.serialize(into: $0) } == Self.receiverReportBytes)
    }

    @Test func emptyReceiverReportWithPadding() throws {
        let bytes: [UInt8] = [
            0xA0, 0xC9, 0x00, 0x02, // V=2 P=1 RC=0 | PT=201 | length 2 words
            0x00, 0x00, 0x00, 0x09, // SSRC
            0x00, 0x00, 0x00, 0x04, // 4 bytes of padding
        ]
        try withRTCP(bytes) { packet in
            #expect(packet.padding && packet.lengthBytes == 12 && packet.bodyCount == 4)
            let report = try ReceiverReport(parsing: packet)
            #expect(report == ReceiverReport(ssrc: 9))
        }
    }

    @Test(arguments: [Int32(-10_000_000), -0x80_0000, -1, 0, 1, 0x7F_FFFF, 10_000_000])
    func cumulativeLostIsClampedTo24BitsWhenSerialized(lost: Int32) throws {
        var block = Self.block
        block.cumulativeLost = lost
        let report = ReceiverReport(ssrc: 1, reports: [block])
        let parsed = try serialized { try report.serialize(into: $0) }
        let back = try withRTCP(parsed) { try ReceiverReport(parsing: $0) }
        #expect(back.reports[0].cumulativeLost == min(max(lost, -0x80_0000), 0x7F_FFFF))
    }

    static let reportRoundTrips: [SenderReport] = [
        SenderReport(ssrc: 0, ntpTimestamp: 0, rtpTimestamp: 0, packetCount: 0, octetCount: 0),
        SenderReport(ssrc: .max, ntpTimestamp: .max, rtpTimestamp: .max, packetCount: .max, octetCount: .max,
                     reports: Array(repeating: block, count: 31)),
    ]

    @Test(arguments: reportRoundTrips)
    func senderReportRoundTrip(report: SenderReport) throws {
        let bytes = try serialized { try report.serialize(into: $0) }
        #expect(bytes.count == report.serializedSize)
        #expect(try withRTCP(bytes) { try SenderReport(parsing: $0) } == report)
        let asRR = ReceiverReport(ssrc: report.ssrc, reports: report.reports)
        let rrBytes = try serialized { try asRR.serialize(into: $0) }
        #expect(try withRTCP(rrBytes) { try ReceiverReport(parsing: $0) } == asRR)
    }

    @Test func tooManyReportsOrTooSmallBuffer() throws {
        let many = ReceiverReport(ssrc: 1, reports: Array(repeating: Self.block, count: 32))
        #expect(throws: WireError.badField) { _ = try serialized { try many.serialize(into: $0) } }
        let sr = SenderReport(ssrc: 1, ntpTimestamp: 0, rtpTimestamp: 0, packetCount: 0, octetCount: 0,
                              reports: Array(repeating: Self.block, count: 32))
        #expect(throws: WireError.badField) { _ = try serialized { try sr.serialize(into: $0) } }
        for capacity in 0..<52 {
            #expect(throws: WireError.bufferTooSmall) {
                _ = try serialized(capacity: capacity) { try Self.senderReport.serialize(into: $0) }
            }
        }
    }

    @Test func reportCountPastBody() {
        var sr = Self.senderReportBytes
        sr[0] = 0x82 // RC=2 but one block present
        #expect(throws: WireError.badLength) { try withRTCP(sr) { try SenderReport(parsing: $0) } }
        var rr = Self.receiverReportBytes
        rr[0] = 0x82
        #expect(throws: WireError.badLength) { try withRTCP(rr) { try ReceiverReport(parsing: $0) } }
    }

    @Test func wrongTypeIsRejected() {
        #expect(throws: WireError.unknownType) {
            try withRTCP(Self.receiverReportBytes) { try SenderReport(parsing: $0) }
        }
        #expect(throws: WireError.unknownType) {
            try withRTCP(Self.senderReportBytes) { try ReceiverReport(parsing: $0) }
        }
    }
}
