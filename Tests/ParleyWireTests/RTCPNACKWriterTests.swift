import Testing
@testable import ParleyWire

@Suite("RTCP generic NACK writer (no allocation, sequence by sequence)")
struct RTCPNACKWriterTests {
    /// Writes `lost` (ascending around the circle) with a writer of `capacity` bytes.
    func written(_ lost: [UInt16], capacity: Int = 1500) throws -> [UInt8] {
        try serialized(capacity: capacity) { buffer in
            var writer = GenericNACKWriter(into: buffer, senderSSRC: 1, mediaSSRC: 2)
            for sequence in lost { writer.append(sequence) }
            return writer.finish()
        }
    }

    @Test func tableAcrossTheWrap() throws {
        #expect(try written([65534, 65535, 0, 1, 20]) == RTCPNACKTests.nackBytes)
    }

    /// The same packings as `GenericNACK` for input already in wraparound order, byte for byte.
    @Test(arguments: RTCPNACKTests.packings)
    func matchesTheValueSerializer(lost: [UInt16], expected: [UInt16]) throws {
        let sorted = GenericNACK.wraparoundSorted(lost)
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: lost)
        #expect(try written(sorted) == serialized { try nack.serialize(into: $0) })
        let back = try withRTCP(try written(sorted)) { try GenericNACK(parsing: $0) }
        #expect(back.lost == sorted)
    }

    @Test func duplicatesAndEveryBitFrom65535() throws {
        let bytes = try written([65535, 65535] + Array(0...15) + [15])
        #expect(bytes == [0x81, 0xCD, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,
                          0xFF, 0xFF, 0xFF, 0xFF])  // PID 65535, all 16 BLP bits
    }

    @Test func nothingAppendedWritesNothing() throws {
        #expect(try written([]).isEmpty)
    }

    @Test func fullBufferKeepsWhatFits() throws {
        // Room for two entries: the third PID is refused, a BLP bit of the second still fits.
        var accepted: [Bool] = []
        let bytes = try serialized(capacity: GenericNACKWriter.size(entries: 2)) { buffer in
            var writer = GenericNACKWriter(into: buffer, senderSSRC: 1, mediaSSRC: 2)
            accepted = [100, 200, 300, 201].map { writer.append($0) }
            #expect(writer.isFull && writer.entryCount == 2)
            return writer.finish()
        }
        #expect(accepted == [true, true, false, true])
        #expect(try withRTCP(bytes) { try GenericNACK(parsing: $0) }.lost == [100, 200, 201])
    }
}
