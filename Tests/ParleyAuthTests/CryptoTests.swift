import Testing
import ParleyAuth

/// RFC 4231 §4 HMAC-SHA-256 test vectors, as byte tables.
@Suite struct HMACSHA256Tests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String
        let key: [UInt8]
        let message: [UInt8]
        let mac: [UInt8]
        var testDescription: String { name }
    }

    static let vectors: [Vector] = [
        // Test Case 1: 20-byte key of 0x0b, "Hi There".
        Vector(name: "RFC 4231 case 1",
               key: [UInt8](repeating: 0x0b, count: 20),
               message: Array("Hi There".utf8),
               mac: [0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53, 0x5c, 0xa8, 0xaf, 0xce, 0xaf, 0x0b, 0xf1, 0x2b,
                     0x88, 0x1d, 0xc2, 0x00, 0xc9, 0x83, 0x3d, 0xa7, 0x26, 0xe9, 0x37, 0x6c, 0x2e, 0x32, 0xcf, 0xf7]),
        // Test Case 2: key "Jefe" (shorter than the block), "what do ya want for nothing?".
        Vector(name: "RFC 4231 case 2",
               key: Array("Jefe".utf8),
               message: Array("what do ya want for nothing?".utf8),
               mac: [0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
                     0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43]),
        // Test Case 6: 131-byte key of 0xaa (longer than the 64-byte block, so it is hashed first).
        Vector(name: "RFC 4231 case 6 (long key)",
               key: [UInt8](repeating: 0xaa, count: 131),
               message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
               mac: [0x60, 0xe4, 0x31, 0x59, 0x1e, 0xe0, 0xb6, 0x7f, 0x0d, 0x8a, 0x26, 0xaa, 0xcb, 0xf5, 0xb7, 0x7f,
                     0x8e, 0x0b, 0xc6, 0x21, 0x37, 0x28, 0xc5, 0x14, 0x05, 0x46, 0x04, 0x0f, 0x0e, 0xe3, 0x7f, 0x54]),
    ]

    @Test(arguments: vectors)
    func arrayVariant(_ vector: Vector) {
        #expect(Crypto.hmacSHA256(key: vector.key, message: vector.message) == vector.mac)
    }

    @Test(arguments: vectors)
    func rawBufferVariant(_ vector: Vector) {
        let mac = vector.message.withUnsafeBytes { Crypto.hmacSHA256(key: vector.key, message: $0) }
        #expect(mac == vector.mac)
    }

    @Test(arguments: vectors)
    func intoCallerBufferVariant(_ vector: Vector) {
        var out = [UInt8](repeating: 0, count: 40)
        vector.key.withUnsafeBytes { key in
            vector.message.withUnsafeBytes { message in
                out.withUnsafeMutableBytes { Crypto.hmacSHA256(key: key, message: message, into: $0) }
            }
        }
        #expect(Array(out[0..<32]) == vector.mac)
        #expect(out[32...].allSatisfy { $0 == 0 }, "only the first 32 bytes are written")
    }

    @Test func emptyKeyAndMessage() {
        // HMAC-SHA-256("", "") from Python's hmac module.
        let expected: [UInt8] = [0xb6, 0x13, 0x67, 0x9a, 0x08, 0x14, 0xd9, 0xec, 0x77, 0x2f, 0x95, 0xd7, 0x78, 0xc3, 0x5f, 0xc5,
                                 0xff, 0x16, 0x97, 0xc4, 0x93, 0x71, 0x56, 0x53, 0xc6, 0xc7, 0x12, 0x14, 0x42, 0x92, 0xc5, 0xad]
        #expect(Crypto.hmacSHA256(key: [], message: []) == expected)
    }
}

@Suite struct ConstantTimeEqualTests {
    @Test func equalBytes() {
        #expect(Crypto.constantTimeEqual([1, 2, 3, 4], [1, 2, 3, 4]))
        #expect(Crypto.constantTimeEqual([], []))
    }

    @Test func differentBytes() {
        #expect(!Crypto.constantTimeEqual([1, 2, 3, 4], [1, 2, 3, 5]))
        #expect(!Crypto.constantTimeEqual([0x80, 2, 3, 4], [0, 2, 3, 4]))
    }

    @Test func differentLengths() {
        #expect(!Crypto.constantTimeEqual([1, 2, 3], [1, 2, 3, 4]))
        #expect(!Crypto.constantTimeEqual([], [0]))
    }

    @Test func rawBuffers() {
        let a: [UInt8] = [9, 8, 7]
        let b: [UInt8] = [9, 8, 7]
        let same = a.withUnsafeBytes { ra in b.withUnsafeBytes { rb in Crypto.constantTimeEqual(ra, rb) } }
        let shorter = a.withUnsafeBytes { ra in b.withUnsafeBytes { rb in Crypto.constantTimeEqual(ra, UnsafeRawBufferPointer(rebasing: rb[0..<2])) } }
        #expect(same)
        #expect(!shorter)
    }
}

@Suite struct RandomTests {
    @Test func lengthsAndVariety() {
        #expect(Crypto.randomBytes(0).isEmpty)
        let a = Crypto.randomBytes(32)
        let b = Crypto.randomBytes(32)
        #expect(a.count == 32)
        #expect(a != b, "two 256-bit draws collide with probability 2^-256")
        let words = Set((0..<8).map { _ in Crypto.randomUInt64() })
        #expect(words.count == 8)
        let halves = Set((0..<8).map { _ in Crypto.randomUInt32() })
        #expect(halves.count >= 7, "a 32-bit collision among 8 draws has probability ~7e-9")
    }
}
