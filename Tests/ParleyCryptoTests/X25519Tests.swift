import ParleyCrypto
import Testing

@Suite("X25519 (RFC 7748)")
struct X25519Tests {
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    @Test("RFC 7748 §6.1: Alice's and Bob's public keys and their shared secret")
    func rfc7748Vectors() throws {
        let alice = try #require(X25519KeyPair(secretKey: Self.bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")))
        let bob = try #require(X25519KeyPair(secretKey: Self.bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")))
        #expect(alice.publicKey == Self.bytes("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"))
        #expect(bob.publicKey == Self.bytes("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"))
        let shared = Self.bytes("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
        #expect(alice.sharedSecret(with: bob.publicKey) == shared)
        #expect(bob.sharedSecret(with: alice.publicKey) == shared)
    }

    @Test("fresh pairs differ and agree with each other")
    func freshPairs() {
        let a = X25519KeyPair(), b = X25519KeyPair()
        #expect(a.publicKey != b.publicKey)
        #expect(a.sharedSecret(with: b.publicKey) == b.sharedSecret(with: a.publicKey))
    }

    @Test("a low-order peer key (all zeros) or a wrong length gives no shared secret")
    func badPeerKeys() {
        let a = X25519KeyPair()
        #expect(a.sharedSecret(with: [UInt8](repeating: 0, count: 32)) == nil)
        #expect(a.sharedSecret(with: [UInt8](repeating: 9, count: 31)) == nil)
        #expect(X25519KeyPair(secretKey: [1, 2, 3]) == nil)
    }
}
