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
