import Testing
@testable import ParleyWire

@Suite("RTCP SDES (RFC 3550 §6.5)")
struct RTCPSourceDescriptionTests {
    /// One chunk, CNAME "ab": 4 (SSRC) + 2 + 2 + 1 null = 9, padded to 12.
    static let cnameBytes: [UInt8] = [
        0x81, 0xCA, 0x00, 0x03, // V=2 SC=1 | PT=202 | length 3 words (16 bytes)
        0x00, 0x00, 0x00, 0x07, // SSRC 7
        0x01, 0x02, 0x61, 0x62, // CNAME, length 2, "ab"
        0x00, 0x00, 0x00, 0x00, // end of list, padding
    ]

    /// Two chunks: SSRC 1 with NAME "x" then an unknown type 9 then CNAME "c"; SSRC 2 with CNAME "wxyz".
    static let twoChunkBytes: [UInt8] = [
        0x82, 0xCA, 0x00, 0x07, // V=2 SC=2 | PT=202 | length 7 words (32 bytes)
        0x00, 0x00, 0x00, 0x01, // SSRC 1
        0x02, 0x01, 0x78,       // NAME, length 1, "x"
        0x09, 0x01, 0x3F,       // type 9 (unknown): skipped
        0x01, 0x01, 0x63,       // CNAME, length 1, "c"
        0x00, 0x00, 0x00,       // end of list + padding to 20
        0x00, 0x00, 0x00, 0x02, // SSRC 2
        0x01, 0x04, 0x77, 0x78, // CNAME, length 4, "wx
        0x79, 0x7A, 0x00, 0x00, // yz", end of list, padding
    ]

    @Test func cnameTable() throws {
        let expected = SourceDescription(chunks: [.init(ssrc: 7, items: [.cname("ab")])])
        #expect(try withRTCP(Self.cnameBytes) { try SourceDescription(parsing: $0) } == expected)
        #expect(expected.serializedSize == 16)
        #expect(try serialized { try expected.serialize(into: $0) } == Self.cnameBytes)
    }

    @Test func unknownItemsAreSkipped() throws {
        let parsed = try withRTCP(Self.twoChunkBytes) { try SourceDescription(parsing: $0) }
        #expect(parsed.chunks.map(\.ssrc) == [1, 2])
        #expect(parsed.chunks[0].items == [.init(type: 2, text: [0x78]), .cname("c")])
        #expect(parsed.chunks.map(\.cname) == ["c", "wxyz"])
    }

    @Test(arguments: [0, 1, 2, 3, 4, 5, 40, 255])
    func roundTrip(length: Int) throws {
        let name = String(repeating: "n", count: length)
        let sdes = SourceDescription(chunks: [.init(ssrc: 0xDEAD_BEEF, items: [.cname(name), .init(type: 6, text: [1, 2, 3])]),
                                              .init(ssrc: 5, items: [])])
        let bytes = try serialized { try sdes.serialize(into: $0) }
        #expect(bytes.count % 4 == 0 && bytes.count == sdes.serializedSize)
        #expect(try withRTCP(bytes) { try SourceDescription(parsing: $0) } == sdes)
    }

    @Test func itemLengthPastEnd() {
        var bytes = Self.cnameBytes
        bytes[9] = 0x07  // CNAME length 7: runs past the 12-byte body
        #expect(throws: WireError.badLength) { try withRTCP(bytes) { try SourceDescription(parsing: $0) } }
    }

    @Test func missingNullTerminator() {
        var bytes = Self.cnameBytes
        bytes[9] = 0x06  // CNAME fills the body exactly: no null octet ends the list
        #expect(throws: WireError.badLength) { try withRTCP(bytes) { try SourceDescription(parsing: $0) } }
    }

    @Test func itemHeaderCutOff() {
        // A type byte with no length byte before the body ends.
        let bytes: [UInt8] = [0x81, 0xCA, 0x00, 0x02, 0x00, 0x00, 0x00, 0x07, 0x01, 0x00, 0x00, 0x00]
        var cut = bytes
        cut[9] = 0x03  // CNAME length 3 after 2 header bytes, 4 bytes left: text fits but no null follows
        #expect(throws: WireError.badLength) { try withRTCP(cut) { try SourceDescription(parsing: $0) } }
        let shortBody: [UInt8] = [0x81, 0xCA, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07]  // SSRC, then nothing: no null
        #expect(throws: WireError.badLength) { try withRTCP(shortBody) { try SourceDescription(parsing: $0) } }
    }

    @Test func moreChunksThanTheBodyHolds() {
        var bytes = Self.cnameBytes
        bytes[0] = 0x82  // SC=2, one chunk present
        #expect(throws: WireError.badCSRCCount) { try withRTCP(bytes) { try SourceDescription(parsing: $0) } }
    }

    @Test func wrongType() {
        #expect(throws: WireError.unknownType) { try withRTCP(RTCPReportTests.receiverReportBytes) { try SourceDescription(parsing: $0) } }
    }

    @Test func unrepresentableItems() {
        let long = SourceDescription(chunks: [.init(ssrc: 1, items: [.init(type: 1, text: [UInt8](repeating: 1, count: 256))])])
        #expect(throws: WireError.badField) { try serialized(capacity: 400) { try long.serialize(into: $0) } }
        let typeZero = SourceDescription(chunks: [.init(ssrc: 1, items: [.init(type: 0, text: [])])])
        #expect(throws: WireError.badField) { try serialized { try typeZero.serialize(into: $0) } }
        let small = SourceDescription(chunks: [.init(ssrc: 1, items: [.cname("abc")])])
        #expect(throws: WireError.bufferTooSmall) { try serialized(capacity: 8) { try small.serialize(into: $0) } }
    }
}

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

@Suite("NTP time and round trips (RFC 3550 §4, §6.4.1)")
struct NTPTimestampTests {
    @Test func fromUnixMilliseconds() {
        #expect(NTPTimestamp(unixMilliseconds: 0).bits == 2_208_988_800 << 32)
        // 1.5 s after the Unix epoch: half a second is 0x8000_0000 of the fraction.
        #expect(NTPTimestamp(unixMilliseconds: 1_500).bits == (UInt64(2_208_988_801) << 32 | 0x8000_0000))
        #expect(NTPTimestamp(unixMilliseconds: 1_500).middle == UInt32(truncatingIfNeeded: 2_208_988_801 << 16) | 0x8000)
        // 250 ms: a quarter of 2^32.
        #expect(NTPTimestamp(unixMilliseconds: 250).bits & 0xFFFF_FFFF == 0x4000_0000)
    }

    @Test func compactUnits() {
        #expect(NTPTimestamp.compactUnits(.milliseconds(5_250)) == 0x0005_4000)
        #expect(NTPTimestamp.compactUnits(-.seconds(1)) == 0)
        #expect(NTPTimestamp.compactUnits(.seconds(100_000)) == UInt32.max)
    }

    @Test func roundTripOfTheRFCExample() {
        // A = 0xb710:8000, LSR = 0xb705:2000, DLSR = 0x0005:4000: 6.125 s.
        #expect(NTPTimestamp.roundTrip(arrival: 0xB710_8000, lastSR: 0xB705_2000, delaySinceLastSR: 0x0005_4000) == .milliseconds(6_125))
        // Across the 32-bit wrap of the middle word.
        #expect(NTPTimestamp.roundTrip(arrival: 0x0000_1000, lastSR: 0xFFFF_F000, delaySinceLastSR: 0x0000_1000) == .nanoseconds(0x1000 * 1_000_000_000 / 65_536))
        #expect(NTPTimestamp.roundTrip(arrival: 0xB710_8000, lastSR: 0, delaySinceLastSR: 0) == nil)        // no SR named
        #expect(NTPTimestamp.roundTrip(arrival: 0xB705_2000, lastSR: 0xB705_2000, delaySinceLastSR: 1) == nil)  // negative
    }
}

@Suite("RTCP report interval (RFC 3550 §6.3.1, §A.7)")
struct RTCPIntervalTests {
    /// 64 kbit/s session: 8,000 bytes/s, RTCP 400 bytes/s.
    static let calculator = RTCPInterval(sessionBandwidth: 8_000, minimum: .seconds(1))

    @Test func floorForSmallSessions() {
        #expect(Self.calculator.deterministic(members: 2, senders: 1, weSent: true, averageSize: 100) == .seconds(1))
        #expect(Self.calculator.deterministic(members: 2, senders: 1, weSent: true, averageSize: 100, initial: true) == .milliseconds(500))
    }

    @Test func receiversShareSeventyFivePercent() {
        // 100 members, 1 sender: a receiver's share is 300 bytes/s among 99 receivers of 200-byte reports: 66 s.
        #expect(Self.calculator.deterministic(members: 100, senders: 1, weSent: false, averageSize: 200) == .seconds(66))
        // The one sender gets 100 bytes/s to itself: 2 s.
        #expect(Self.calculator.deterministic(members: 100, senders: 1, weSent: true, averageSize: 200) == .seconds(2))
    }

    @Test func manySendersShareEverything() {
        // 40 of 100 send (> 25 %): all 100 share 400 bytes/s: 50 s for 200-byte reports, senders and receivers alike.
        #expect(Self.calculator.deterministic(members: 100, senders: 40, weSent: true, averageSize: 200) == .seconds(50))
        #expect(Self.calculator.deterministic(members: 100, senders: 40, weSent: false, averageSize: 200) == .seconds(50))
    }

    @Test(arguments: [(0.0, 0.410_42), (0.5, 0.820_83), (0.999_999, 1.231_24)])
    func randomizedAndCompensated(unit: Double, seconds: Double) {
        let t = RTCPInterval.randomized(.seconds(1), unit: unit)
        #expect(abs(t.seconds - seconds) < 0.000_01)
    }

    @Test func seededDrawsStayInRange() {
        var random = SeededRandomNumberGenerator(seed: 7)
        var sum = 0.0
        for _ in 0..<1_000 {
            let t = Self.calculator.next(members: 2, senders: 1, weSent: false, averageSize: 100, using: &random)
            #expect(t >= Interval(seconds: 0.5 / RTCPInterval.compensation) && t <= Interval(seconds: 1.5 / RTCPInterval.compensation))
            sum += t.seconds
        }
        #expect(abs(sum / 1_000 - 1 / RTCPInterval.compensation) < 0.03)   // mean Td / (e − 3/2)
        var again = SeededRandomNumberGenerator(seed: 7)
        var first = SeededRandomNumberGenerator(seed: 7)
        #expect(Self.calculator.next(members: 2, senders: 1, weSent: false, averageSize: 100, using: &again)
            == Self.calculator.next(members: 2, senders: 1, weSent: false, averageSize: 100, using: &first))
    }

    @Test func averageSize() {
        #expect(RTCPInterval.averageSize(100, adding: 260) == 110)
    }
}
