import Testing
import ParleyWire
@testable import ParleyWebRTC

@Suite("STUN Binding request: parsing, hostile input")
struct STUNBindingRequestTests {
    /// A copy of `bytes` with `bytes[index] = value`.
    static func patched(_ bytes: [UInt8], _ changes: [Int: UInt8]) -> [UInt8] {
        var copy = bytes
        for (index, value) in changes { copy[index] = value }
        return copy
    }

    /// Key for built messages.
    static let key = Array("ice-pwd-of-the-relay-0123".utf8)

    /// A well-formed check with the given attributes (USERNAME first), MESSAGE-INTEGRITY and FINGERPRINT.
    static func check(_ extra: [(UInt16, [UInt8])] = []) -> STUNMessageBuilder {
        STUNMessageBuilder(attributes: [(0x0006, Array("abcd:wxyz".utf8))] + extra, integrityKey: key)
    }

    static let malformed: [(String, [UInt8], String)] = [
        ("empty", [], "bad_stun"),
        ("truncated header", Array(rfc5769Request[0..<19]), "bad_stun"),
        ("first two bits not zero", patched(rfc5769Request, [0: 0x40]), "bad_stun"),
        ("wrong magic cookie", patched(rfc5769Request, [4: 0x21, 5: 0x12, 6: 0xa4, 7: 0x43]), "bad_stun"),
        ("length says more than the datagram", Array(rfc5769Request.dropLast(4)), "bad_stun"),
        ("length says less than the datagram", rfc5769Request + [0, 0, 0, 0], "bad_stun"),
        ("length not a multiple of 4", patched(Array(rfc5769Request.dropLast(1)), [3: 0x57]), "bad_stun"),
        ("attribute overruns the message", patched(rfc5769Request, [62: 0x00, 63: 0xFF]), "bad_stun"), // USERNAME length 255
        ("attribute overruns by its padding", STUNMessageBuilder(attributes: [(0x8022, [1, 2, 3, 4])], fingerprint: false).bytes
            .enumerated().map { $0.offset == 23 ? 5 : $0.element }, "bad_stun"), // SOFTWARE says 5 bytes, 4 are there
        ("MESSAGE-INTEGRITY of 19 bytes", refingerprinted(patched(rfc5769Request, [79: 0x13])), "bad_stun"),
        ("bad fingerprint", patched(rfc5769Request, [107: 0xce]), "bad_stun_fingerprint"),
        ("FINGERPRINT of 8 bytes", STUNMessageBuilder(attributes: [(0x8028, [0, 0, 0, 0, 0, 0, 0, 0])], fingerprint: false).bytes, "bad_stun"),
        ("Binding error response type 0x0111", patched(rfc5769Request, [0: 0x01, 1: 0x11]), "not_binding_request"),
        ("Binding success response type 0x0101", rfc5769IPv4Response, "not_binding_request"),
        ("Binding indication type 0x0011", patched(rfc5769Request, [1: 0x11]), "not_binding_request"),
        ("attribute after FINGERPRINT", STUNMessageBuilder(integrityKey: key, afterFingerprint: [(0x8022, [0x61])]).bytes, "bad_stun"),
        ("attribute between MESSAGE-INTEGRITY and FINGERPRINT", STUNMessageBuilder(integrityKey: key, afterIntegrity: [(0x8022, [0x61])]).bytes, "bad_stun"),
        ("second MESSAGE-INTEGRITY", STUNMessageBuilder(integrityKey: key, afterIntegrity: [(0x0008, [UInt8](repeating: 0, count: 20))]).bytes, "bad_stun"),
        ("unknown comprehension-required attribute 0x0003", check([(0x0003, [0, 0, 0, 0])]).bytes, "unknown_stun_attribute"),
        ("MESSAGE-INTEGRITY-SHA256 (not used by ICE)", check([(0x001C, [UInt8](repeating: 0, count: 32))]).bytes, "unknown_stun_attribute"),
        ("PRIORITY of 8 bytes", check([(0x0024, [0, 0, 0, 0, 0, 0, 0, 1])]).bytes, "bad_stun"),
        ("USE-CANDIDATE with a value", check([(0x0025, [1, 0, 0, 0])]).bytes, "bad_stun"),
        ("ICE-CONTROLLING of 4 bytes", check([(0x802A, [0, 0, 0, 1])]).bytes, "bad_stun"),
        ("ICE-CONTROLLED of 4 bytes", check([(0x8029, [0, 0, 0, 1])]).bytes, "bad_stun"),
        ("USERNAME of 514 bytes", STUNMessageBuilder(attributes: [(0x0006, [UInt8](repeating: 0x61, count: 514))]).bytes, "bad_stun"),
        ("USERNAME not UTF-8", STUNMessageBuilder(attributes: [(0x0006, [0x61, 0xFF, 0x3A, 0x62])]).bytes, "bad_stun"),
    ]

    @Test("every malformed request throws its code", arguments: malformed)
    func malformedThrows(name: String, bytes: [UInt8], code: String) {
        #expect(errorCode { try parseRequest(bytes) } == code, "\(name)")
    }

    @Test("attributes a browser adds that the relay ignores: comprehension-optional ones, SOFTWARE")
    func optionalAttributesIgnored() throws {
        let request = try parseRequest(Self.check([
            (0xC057, [0x00, 0x01, 0x00, 0x0A]), // GOOG-NETWORK-INFO
            (0x8022, Array("libwebrtc".utf8)),  // SOFTWARE
            (0x0024, [0x6E, 0x7F, 0x1E, 0xFF]), // PRIORITY
        ]).bytes)
        #expect(request.username == "abcd:wxyz")
        #expect(request.priority == 0x6E7F_1EFF)
    }

    @Test("a USERNAME of exactly 513 bytes, duplicates keep the first, no MESSAGE-INTEGRITY never verifies")
    func boundaries() throws {
        let long = String(repeating: "u", count: 513)
        #expect(try parseRequest(STUNMessageBuilder(attributes: [(0x0006, Array(long.utf8))]).bytes).username == long)
        let twice = try parseRequest(STUNMessageBuilder(attributes: [
            (0x0006, Array("first:one".utf8)), (0x0006, Array("second:two".utf8)),
            (0x0024, [0, 0, 0, 1]), (0x0024, [0, 0, 0, 2]),
        ], integrityKey: Self.key).bytes)
        #expect(twice.username == "first:one" && twice.priority == 1)
        let unsigned = STUNMessageBuilder(attributes: [(0x0006, Array("a:b".utf8))]).bytes
        let request = try parseRequest(unsigned)
        #expect(request.messageIntegrityOffset == nil && request.hasFingerprint)
        unsigned.withUnsafeBytes { #expect(!request.hasValidIntegrity(key: Self.key, in: $0)) }
        let bare = try parseRequest(STUNMessageBuilder(fingerprint: false).bytes)
        #expect(bare.username == nil && !bare.hasFingerprint && bare.messageIntegrityOffset == nil)
    }

    @Test("integrity: a changed byte anywhere before MESSAGE-INTEGRITY, or a different key, fails")
    func integrityCoversTheMessage() throws {
        let bytes = Self.check([(0x0024, [0, 0, 0, 9]), (0x802A, [1, 2, 3, 4, 5, 6, 7, 8])]).bytes
        let request = try parseRequest(bytes)
        let offset = try #require(request.messageIntegrityOffset)
        bytes.withUnsafeBytes { #expect(request.hasValidIntegrity(key: Self.key, in: $0)) }
        for index in [8, 19, 20, 24, offset - 1] {
            let tampered = Self.patched(bytes, [index: bytes[index] ^ 0x01])
            tampered.withUnsafeBytes { #expect(!request.hasValidIntegrity(key: Self.key, in: $0), "byte \(index)") }
        }
        bytes.withUnsafeBytes { raw in
            #expect(!request.hasValidIntegrity(key: Array("ice-pwd-of-the-relay-0124".utf8), in: raw))
            // A buffer too short for the recorded offset is refused, not read past.
            #expect(!request.hasValidIntegrity(key: Self.key, in: UnsafeRawBufferPointer(rebasing: raw[0..<(offset + 10)])))
        }
    }
}
