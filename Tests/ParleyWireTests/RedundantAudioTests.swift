import Testing

@testable import ParleyWire

@Suite("RFC 2198 redundant audio")
struct RedundantAudioTests {
    /// Two redundant Opus frames (960 and 1920 ticks back) and a primary, as Chrome's `red/48000/2` sends them.
    static let twoBlocks: [UInt8] = [
        0xEF, 0x1E, 0x00, 0x02,  // F=1 PT=111 | offset 1920 (0x780 << 10) | length 2
        0xEF, 0x0F, 0x00, 0x03,  // F=1 PT=111 | offset 960 | length 3
        0x6F,  // F=0 PT=111: the primary
        0xA1, 0xA2,  // oldest redundant data
        0xB1, 0xB2, 0xB3,  // newer redundant data
        0xC1, 0xC2, 0xC3, 0xC4,  // primary data
    ]

    func parse(_ bytes: [UInt8]) throws(WireError) -> RedundantAudio {
        var result: Result<RedundantAudio, WireError> = .failure(.truncated)
        bytes.withUnsafeBytes { raw in
            do throws(WireError) { result = .success(try RedundantAudio(parsing: raw)) } catch {
                result = .failure(error)
            }
        }
        return try result.get()
    }

    @Test func tableParses() throws {
        let red = try parse(Self.twoBlocks)
        #expect(red.redundantCount == 2)
        #expect(red.redundant(0) == RedundantBlock(payloadType: 111, timestampOffset: 1920, range: 9..<11))
        #expect(red.redundant(1) == RedundantBlock(payloadType: 111, timestampOffset: 960, range: 11..<14))
        #expect(red.primary == RedundantBlock(payloadType: 111, timestampOffset: 0, range: 14..<18))
        #expect(red.sequenceNumber(ofRedundant: 0, primary: 1) == 65535)
        #expect(red.sequenceNumber(ofRedundant: 1, primary: 1) == 0)
    }

    @Test func primaryOnlyParses() throws {
        let red = try parse([0x6F, 0x01, 0x02])
        #expect(red.redundantCount == 0)
        #expect(red.primary.range == 1..<3)
    }

    @Test func writerRoundTrips() throws {
        let old: [UInt8] = [0xA1, 0xA2], newer: [UInt8] = [0xB1, 0xB2, 0xB3],
            primary: [UInt8] = [0xC1, 0xC2, 0xC3, 0xC4]
        let bytes = try serialized { out in
            var w = try RedundantAudioWriter(into: out, redundantBlocks: 2)
            try old.withUnsafeBytes { try w.appendRedundant(payloadType: 111, timestampOffset: 1920, data: $0) }
            try newer.withUnsafeBytes { try w.appendRedundant(payloadType: 111, timestampOffset: 960, data: $0) }
            return try primary.withUnsafeBytes { try w.finish(primaryPayloadType: 111, data: $0) }
        }
        #expect(bytes == Self.twoBlocks)
        #expect(RedundantAudio.serializedSize(redundantBlocks: 2, redundantBytes: 5, primaryBytes: 4) == bytes.count)
    }

    @Test func writerRefusesWhatTheParserWould() throws {
        let one: [UInt8] = [1]
        var buffer = [UInt8](repeating: 0, count: 16)
        try buffer.withUnsafeMutableBytes { out in
            #expect(throws: WireError.badField) { _ = try RedundantAudioWriter(into: out, redundantBlocks: 4) }
            var w = try RedundantAudioWriter(into: out, redundantBlocks: 2)
            try one.withUnsafeBytes { data in
                #expect(throws: WireError.badField) {
                    try w.appendRedundant(payloadType: 111, timestampOffset: 0, data: data)
                }
                #expect(throws: WireError.badField) {
                    try w.appendRedundant(payloadType: 111, timestampOffset: 16384, data: data)
                }
                try w.appendRedundant(payloadType: 111, timestampOffset: 960, data: data)
                // Offsets must fall from the oldest block to the newest.
                #expect(throws: WireError.badField) {
                    try w.appendRedundant(payloadType: 111, timestampOffset: 1920, data: data)
                }
                // Not every announced block written yet.
                #expect(throws: WireError.badField) { _ = try w.finish(primaryPayloadType: 111, data: data) }
            }
            let empty = UnsafeRawBufferPointer(start: nil, count: 0)
            #expect(throws: WireError.badField) {
                try w.appendRedundant(payloadType: 111, timestampOffset: 480, data: empty)
            }
        }
        var small = [UInt8](repeating: 0, count: 6)
        try small.withUnsafeMutableBytes { out in
            var w = try RedundantAudioWriter(into: out, redundantBlocks: 1)
            let big = [UInt8](repeating: 7, count: 4)
            try big.withUnsafeBytes { data in
                #expect(throws: WireError.bufferTooSmall) {
                    try w.appendRedundant(payloadType: 111, timestampOffset: 960, data: data)
                }
            }
        }
    }

    /// Hostile payloads: every one throws, none reads past the buffer.
    @Test(
        arguments: [
            ([UInt8](), WireError.truncated),  // empty
            ([0xEF, 0x0F, 0x00], .truncated),  // a block header cut short
            ([0xEF, 0x0F, 0x00, 0x01], .truncated),  // no primary header
            ([0x6F], .badLength),  // a primary with no data
            ([0xEF, 0x0F, 0x00, 0x05, 0x6F, 1, 2, 3], .badLength),  // block length past the packet
            ([0xEF, 0x0F, 0x00, 0x02, 0x6F, 1, 2], .badLength),  // the block takes the primary's bytes
            ([0xEF, 0x0F, 0x00, 0x00, 0x6F, 1], .badLength),  // a 0-length block
            ([0xEF, 0x00, 0x00, 0x01, 0x6F, 1, 2], .badField),  // timestamp offset 0
            ([0xEF, 0x0F, 0x00, 0x01, 0xEF, 0x1E, 0x00, 0x01, 0x6F, 1, 2, 3], .badField),  // offsets going forwards
            ([0xEF, 0x0F, 0x00, 0x01, 0xEF, 0x0F, 0x00, 0x01, 0x6F, 1, 2, 3], .badField),  // the same offset twice
            (
                [
                    0xEF, 0x3C, 0x00, 0x01, 0xEF, 0x2D, 0x00, 0x01, 0xEF, 0x1E, 0x00, 0x01, 0xEF, 0x0F, 0x00, 0x01,
                    0x6F, 1, 2, 3, 4, 5,
                ], .badField
            ),  // four redundant blocks
            ([0xEF, 0x0F, 0x03, 0xFF, 0x6F, 1], .badLength),  // 1023 claimed, 1 present
        ] as [([UInt8], WireError)])
    func malformedThrows(bytes: [UInt8], error: WireError) {
        #expect(throws: error) { try parse(bytes) }
    }

    @Test func threeBlocksAreTheLimit() throws {
        let red = try parse([0xEF, 0x2D, 0x00, 0x01, 0xEF, 0x1E, 0x00, 0x01, 0xEF, 0x0F, 0x00, 0x01, 0x6F, 1, 2, 3, 4])
        #expect(red.redundantCount == 3)
        #expect(red.redundant(2).timestampOffset == 960 && red.redundant(2).range == 15..<16)
        #expect(red.primary.range == 16..<17)
    }

    @Test func primaryPacketKeepsTheHeader() throws {
        // V=2, marker, PT 63, seq 7, ts 1000, ssrc 9; then the RED payload.
        let header: [UInt8] = [0x80, 0x80 | 63, 0x00, 0x07, 0x00, 0x00, 0x03, 0xE8, 0x00, 0x00, 0x00, 0x09]
        let packet = header + Self.twoBlocks
        let plain = try withRTP(packet) { view in
            let red = try RedundantAudio(parsing: view.payload)
            return try serialized { red.writePrimaryPacket(of: view, into: $0) }
        }
        #expect(
            plain == [
                0x80, 0x80 | 111, 0x00, 0x07, 0x00, 0x00, 0x03, 0xE8, 0x00, 0x00, 0x00, 0x09, 0xC1, 0xC2, 0xC3, 0xC4,
            ])
        let tooSmall = try withRTP(packet) { view in
            let red = try RedundantAudio(parsing: view.payload)
            return try serialized(capacity: 15) { red.writePrimaryPacket(of: view, into: $0) }
        }
        #expect(tooSmall.isEmpty)
    }
}
