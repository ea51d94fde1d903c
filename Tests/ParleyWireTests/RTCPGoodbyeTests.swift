import Testing
import ParleyWire

@Suite("RTCP BYE")
struct RTCPGoodbyeTests {
    static let byeBytes: [UInt8] = [
        0x82, 0xCB, 0x00, 0x03, // V=2 SC=2 | PT=203 | length 3 words (16 bytes)
        0x00, 0x00, 0x00, 0x01, // SSRC 1
        0x00, 0x00, 0x00, 0x02, // SSRC 2
        0x03, 0x62, 0x79, 0x65, // reason length 3, "bye"
    ]

    @Test func table() throws {
        let expected = Goodbye(ssrcs: [1, 2], reason: "bye")
        #expect(try withRTCP(Self.byeBytes) { try Goodbye(parsing: $0) } == expected)
        #expect(try serialized { try expected.serialize(into: $0) } == Self.byeBytes)
    }

    @Test func withoutReason() throws {
        let bytes: [UInt8] = [0x81, 0xCB, 0x00, 0x01, 0xFF, 0xFF, 0xFF, 0xFF] // SC=1, SSRC 2^32−1
        let expected = Goodbye(ssrcs: [.max])
        #expect(try withRTCP(bytes) { try Goodbye(parsing: $0) } == expected)
        #expect(try serialized { try expected.serialize(into: $0) } == bytes)
    }

    static let roundTrips: [Goodbye] = [
        Goodbye(ssrcs: []),
        Goodbye(ssrcs: [], reason: ""),
        Goodbye(ssrcs: [7], reason: "ab"),
        Goodbye(ssrcs: Array(1...31), reason: "sörry, gotta go 👋"),
        Goodbye(ssrcs: [1], reason: String(repeating: "x", count: 255)),
    ]

    @Test(arguments: roundTrips)
    func roundTrip(bye: Goodbye) throws {
        let bytes = try serialized { try bye.serialize(into: $0) }
        #expect(bytes.count == bye.serializedSize && bytes.count % 4 == 0)
        #expect(try withRTCP(bytes) { try Goodbye(parsing: $0) } == bye)
    }

    @Test func malformed() {
        var tooManySSRCs = Self.byeBytes
        tooManySSRCs[0] = 0x84 // SC=4: 16 bytes of SSRCs, body has 12
        #expect(throws: WireError.badCSRCCount) { try withRTCP(tooManySSRCs) { try Goodbye(parsing: $0) } }
        var longReason = Self.byeBytes
        longReason[12] = 0x04 // reason length 4, 3 bytes follow
        #expect(throws: WireError.badLength) { try withRTCP(longReason) { try Goodbye(parsing: $0) } }
        #expect(throws: WireError.unknownType) {
            try withRTCP(RTCPReportTests.receiverReportBytes) { try Goodbye(parsing: $0) }
        }
    }

    @Test func serializeErrors() {
        let tooMany = Goodbye(ssrcs: Array(0...31))
        #expect(throws: WireError.badField) { _ = try serialized { try tooMany.serialize(into: $0) } }
        let tooLong = Goodbye(ssrcs: [1], reason: String(repeating: "x", count: 256))
        #expect(throws: WireError.badField) { _ = try serialized { try tooLong.serialize(into: $0) } }
        #expect(throws: WireError.bufferTooSmall) {
            _ = try serialized(capacity: 15) { try Goodbye(ssrcs: [1, 2], reason: "bye").serialize(into: $0) }
        }
    }
}
