@testable import ParleyCrypto
import Testing

/// End-to-end call keys: both sides agree the same keys and safety code from the shares; each binding (identities,
/// room, shares) changes them; bad shares are refused. Vectors computed once with fixed secrets and pinned; they
/// were checked against an independent implementation (Python `cryptography` X25519 and ChaCha20-Poly1305, hashlib
/// BLAKE2b with the Noise HMAC/HKDF written out) when first pinned.
@Suite("CallKeyAgreement")
struct CallKeyAgreementTests {
    static let callerSecret = [UInt8](repeating: 0x11, count: 32)
    static let calleeSecret = [UInt8](repeating: 0x22, count: 32)

    static func pair(room: String = "call-0123456789abcdef") throws -> (caller: CallKeys, callee: CallKeys) {
        let caller = CallKeyAgreement(role: .caller, keyPair: X25519KeyPair(secretKey: callerSecret)!)
        let callee = CallKeyAgreement(role: .callee, keyPair: X25519KeyPair(secretKey: calleeSecret)!)
        return (try caller.agree(peerShare: callee.share, callerIdentity: "alice", calleeIdentity: "bob", room: room),
                try callee.agree(peerShare: caller.share, callerIdentity: "alice", calleeIdentity: "bob", room: room))
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() }

    @Test("both sides agree: send key of one is the receive key of the other, key ids 0 and 1, one safety code")
    func agree() throws {
        let (a, b) = try Self.pair()
        #expect(a.sendKey == b.receiveKey && a.receiveKey == b.sendKey)
        #expect(a.sendKey != a.receiveKey)
        #expect(a.sendKeyID == 0 && a.receiveKeyID == 1 && b.sendKeyID == 1 && b.receiveKeyID == 0)
        #expect(a.safetyCode == b.safetyCode)
        #expect(a.safetyCode.groups.count == 6 && a.safetyCode.groups.allSatisfy { $0 < 100_000 })
    }

    @Test("pinned vector: keys and safety code for fixed secrets, identities and room")
    func vector() throws {
        let (a, _) = try Self.pair()
        #expect(Self.hex(a.sendKey) == "afaf68c1492e61ebeb5573effec8873238b63ffa8fc15f167e2cd58734f36f60")
        #expect(Self.hex(a.receiveKey) == "bb5a71c24ff0f33d8ee2b960af8f689c89ff7a3bd786c8bd27207be6cd7088b6")
        #expect(a.safetyCode.description == "95570 41598 51537 15237 17848 76398")
    }

    @Test("the code and keys change with the room, either identity, and either share")
    func binding() throws {
        let base = try Self.pair().caller
        let otherRoom = try Self.pair(room: "call-ffffffffffffffff").caller
        #expect(otherRoom.safetyCode != base.safetyCode && otherRoom.sendKey != base.sendKey)
        let caller = CallKeyAgreement(role: .caller, keyPair: X25519KeyPair(secretKey: Self.callerSecret)!)
        let calleeShare = X25519KeyPair(secretKey: Self.calleeSecret)!.publicKey
        let swapped = try caller.agree(peerShare: calleeShare, callerIdentity: "bob", calleeIdentity: "alice", room: "call-0123456789abcdef")
        #expect(swapped.safetyCode != base.safetyCode && swapped.sendKey != base.sendKey)
        // A relay in the middle: each side agrees with the relay's share instead; the codes differ.
        let mallory = CallKeyAgreement(role: .callee, keyPair: X25519KeyPair(secretKey: [UInt8](repeating: 0x33, count: 32))!)
        let intercepted = try caller.agree(peerShare: mallory.share, callerIdentity: "alice", calleeIdentity: "bob", room: "call-0123456789abcdef")
        #expect(intercepted.safetyCode != base.safetyCode)
    }

    @Test("fresh agreements draw fresh shares and keys")
    func fresh() throws {
        let a = CallKeyAgreement(role: .caller), b = CallKeyAgreement(role: .callee), c = CallKeyAgreement(role: .callee)
        #expect(b.share != c.share)
        let k1 = try a.agree(peerShare: b.share, callerIdentity: "a", calleeIdentity: "b", room: "call-1")
        let k2 = try a.agree(peerShare: c.share, callerIdentity: "a", calleeIdentity: "b", room: "call-1")
        #expect(k1.sendKey != k2.sendKey && k1.safetyCode != k2.safetyCode)
    }

    @Test("bad shares are refused", arguments: [
        [],                                        // absent
        [UInt8](repeating: 9, count: 31),          // short
        [UInt8](repeating: 9, count: 33),          // long
        [UInt8](repeating: 0, count: 32),          // the zero point (low order)
        [1] + [UInt8](repeating: 0, count: 31),    // the point of order 1
    ])
    func badShare(share: [UInt8]) {
        let a = CallKeyAgreement(role: .caller)
        #expect(throws: CallKeyError.invalidShare) { try a.agree(peerShare: share, callerIdentity: "a", calleeIdentity: "b", room: "r") }
    }

    @Test("the safety code prints as six zero-padded groups of five digits")
    func format() throws {
        let code = try Self.pair().caller.safetyCode.description
        let groups = code.split(separator: " ")
        #expect(groups.count == 6 && groups.allSatisfy { $0.count == 5 && $0.allSatisfy(\.isNumber) })
    }
}
