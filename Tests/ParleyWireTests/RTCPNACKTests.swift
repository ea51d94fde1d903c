import Testing
@testable import ParleyWire

@Suite("RTCP generic NACK")
struct RTCPNACKTests {
    static let nackBytes: [UInt8] = [
        0x81, 0xCD, 0x00, 0x04, // V=2 FMT=1 | PT=205 | length 4 words (20 bytes)
        0x00, 0x00, 0x00, 0x01, // SSRC of packet sender
        0x00, 0x00, 0x00, 0x02, // SSRC of media source
        0xFF, 0xFE, 0x00, 0x07, // PID 65534, BLP bits 0,1,2: 65535, 0, 1
        0x00, 0x14, 0x00, 0x00, // PID 20, no BLP
    ]

    /// Lost sequence numbers the view reports, in order.
    func expand(_ bytes: [UInt8]) throws -> [UInt16] {
        try withRTCP(bytes) { packet in
            let view = try GenericNACKView(parsing: packet)
            var lost: [UInt16] = []
            view.forEachLostSequence { lost.append($0) }
            return lost
        }
    }

    @Test func tableExpandsAcrossTheWrap() throws {
        #expect(try expand(Self.nackBytes) == [65534, 65535, 0, 1, 20])
        try withRTCP(Self.nackBytes) { packet in
            let view = try GenericNACKView(parsing: packet)
            #expect(view.senderSSRC == 1 && view.mediaSSRC == 2 && view.entryCount == 2)
        }
        let value = try withRTCP(Self.nackBytes) { try GenericNACK(parsing: $0) }
        #expect(value == GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [65534, 65535, 0, 1, 20]))
    }

    @Test func everyBlpBitFromPID65535() throws {
        let bytes: [UInt8] = [
            0x81, 0xCD, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,
            0xFF, 0xFF, 0xFF, 0xFF, // PID 65535, all 16 BLP bits: 0...15
        ]
        #expect(try expand(bytes) == [65535] + Array(0...15))
    }

    @Test func packingTable() throws {
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [65534, 65535, 0, 1, 20])
        #expect(nack.serializedSize == 20)
        #expect(try serialized { try nack.serialize(into: $0) } == Self.nackBytes)
        // Unsorted input with duplicates packs the same way.
        let shuffled = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [20, 1, 0, 65535, 65534, 0, 20])
        #expect(try serialized { try shuffled.serialize(into: $0) } == Self.nackBytes)
    }

    static let packings: [([UInt16], [UInt16])] = [
        // (lost, expected flattened (PID, BLP) pairs)
        ([100], [100, 0x0000]),
        ([100, 101, 116], [100, 0x8001]),            // +1 is bit 0, +16 is bit 15
        ([100, 117], [100, 0x0000, 117, 0x0000]),    // +17 needs a new entry
        ([65535, 0, 15], [65535, 0x8001]),           // wrap inside one entry
        ([0, 1, 65535], [65535, 0x0003]),            // starts at 65535 though numerically last
        ([5, 40000], [40000, 0x0000, 5, 0x0000]),    // largest gap is 5→40000, so start at 40000
        ([0, 32768], [0, 0x0000, 32768, 0x0000]),    // equal gaps: numeric order
    ]

    @Test(arguments: packings)
    func minimalPairs(lost: [UInt16], expected: [UInt16]) throws {
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: lost)
        #expect(nack.entries().flatMap { [$0.pid, $0.blp] } == expected)
        let bytes = try serialized { try nack.serialize(into: $0) }
        #expect(bytes.count == nack.serializedSize)
        // Round trip: expanding gives the set back, in wraparound order.
        let back = try withRTCP(bytes) { try GenericNACK(parsing: $0) }
        #expect(back.lost == GenericNACK.wraparoundSorted(lost))
        #expect(Set(back.lost) == Set(lost))
    }

    @Test func roundTripLongRun() throws {
        let lost = (0..<200).map { UInt16(truncatingIfNeeded: 65436 + $0 * 3) } // crosses the wrap
        let nack = GenericNACK(senderSSRC: 7, mediaSSRC: 8, lost: lost)
        let bytes = try serialized { try nack.serialize(into: $0) }
        #expect(try withRTCP(bytes) { try GenericNACK(parsing: $0) } == nack)
    }

    @Test func malformed() {
        var wrongFormat = Self.nackBytes
        wrongFormat[0] = 0x8F // FMT 15 (RTCP-SR-REQ)
        #expect(throws: WireError.unknownType) { try withRTCP(wrongFormat) { try GenericNACKView(parsing: $0) } }
        var psfb = Self.nackBytes
        psfb[1] = 206 // PLI-space, not RTPFB
        #expect(throws: WireError.unknownType) { try withRTCP(psfb) { try GenericNACKView(parsing: $0) } }
        let noEntries: [UInt8] = [0x81, 0xCD, 0x00, 0x02, 0, 0, 0, 1, 0, 0, 0, 2]
        #expect(throws: WireError.badLength) { try withRTCP(noEntries) { try GenericNACKView(parsing: $0) } }
        let shortBody: [UInt8] = [0x81, 0xCD, 0x00, 0x01, 0, 0, 0, 1]
        #expect(throws: WireError.badLength) { try withRTCP(shortBody) { try GenericNACK(parsing: $0) } }
        // Padding leaving half an entry.
        let halfEntry: [UInt8] = [0xA1, 0xCD, 0x00, 0x03, 0, 0, 0, 1, 0, 0, 0, 2, 0x00, 0x05, 0x00, 0x02]
        #expect(throws: WireError.badLength) { try withRTCP(halfEntry) { try GenericNACKView(parsing: $0) } }
    }

    @Test func serializeErrors() {
        let empty = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [])
        #expect(throws: WireError.badField) { _ = try serialized { try empty.serialize(into: $0) } }
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [1])
        #expect(throws: WireError.bufferTooSmall) {
            _ = try serialized(capacity: 15) { try nack.serialize(into: $0) }
        }
    }
}
