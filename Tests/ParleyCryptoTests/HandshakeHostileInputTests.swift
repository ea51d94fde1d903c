import ParleyCrypto
import Testing

/// Every malformed or forged handshake message is an error value, never a trap, and leaves the state untouched.
@Suite("Noise handshake: hostile input")
struct HandshakeHostileInputTests {
    static let relay = X25519KeyPair()

    static func pair(_ pattern: HandshakePattern = .nk, prologue: [UInt8] = Array("cookie".utf8))
        throws -> (initiator: HandshakeState, responder: HandshakeState) {
        let initiator = try HandshakeState(pattern: pattern, role: .initiator, prologue: prologue,
                                           localStatic: pattern == .ik ? X25519KeyPair() : nil,
                                           remoteStatic: relay.publicKey)
        let responder = try HandshakeState(pattern: pattern, role: .responder, prologue: prologue, localStatic: relay)
        return (initiator, responder)
    }

    /// X25519 points of small order (RFC 7748 §7 and the curve25519 literature): 0, 1, and a point of order 8.
    static let lowOrderPoints: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),
        [1] + [UInt8](repeating: 0, count: 31),
        X25519Tests.bytes("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
        X25519Tests.bytes("5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"),
    ]

    @Test("a fresh NK and IK handshake carries the token and agrees on keys and hash", arguments: HandshakePattern.allCases)
    func roundTrip(_ pattern: HandshakePattern) throws {
        var (client, relay) = try Self.pair(pattern)
        let token = Array("v1.token.signature".utf8)
        let first = try client.writeMessage(payload: token)
        #expect(!first.contains(subsequence: token))
        #expect(try relay.readMessage(first) == token)
        #expect(try client.readMessage(try relay.writeMessage(payload: [])) == [])
        #expect(client.handshakeHash == relay.handshakeHash)
        let c = try client.split(), r = try relay.split()
        var cs = c.sending, rr = r.receiving
        #expect(try rr.decrypt(try cs.encrypt([1, 2, 3], associatedData: []), associatedData: []) == [1, 2, 3])
    }

    @Test("first message cut short: no ephemeral, or no tag", arguments: [0, 1, 31, 32, 47])
    func shortFirstMessage(length: Int) throws {
        var (client, relay) = try Self.pair()
        let first = try client.writeMessage(payload: [])
        #expect(throws: NoiseError.messageTooShort) { try relay.readMessage(Array(first.prefix(length))) }
        #expect(try relay.readMessage(first) == [])   // unchanged by the failure
    }

    @Test("a message over 65535 bytes is refused before any work, and so is a payload that would make one")
    func tooLong() throws {
        var (client, relay) = try Self.pair()
        #expect(throws: NoiseError.messageTooLong) { try relay.readMessage([UInt8](repeating: 7, count: 65536)) }
        #expect(throws: NoiseError.messageTooLong) { try client.writeMessage(payload: [UInt8](repeating: 0, count: 65536 - 48)) }
        _ = try client.writeMessage(payload: [UInt8](repeating: 0, count: 65535 - 48))
    }

    @Test("a low-order ephemeral key is refused (the DH would be all zeros)", arguments: lowOrderPoints)
    func lowOrderEphemeral(point: [UInt8]) throws {
        var (client, relay) = try Self.pair()
        var first = try client.writeMessage(payload: [])
        first.replaceSubrange(0..<32, with: point)
        #expect(throws: NoiseError.invalidPublicKey) { try relay.readMessage(first) }
        // And in the reply.
        var (client2, relay2) = try Self.pair()
        _ = try relay2.readMessage(try client2.writeMessage(payload: []))
        var second = try relay2.writeMessage(payload: [])
        second.replaceSubrange(0..<32, with: point)
        #expect(throws: NoiseError.invalidPublicKey) { try client2.readMessage(second) }
    }

    @Test("any flipped bit (ephemeral, ciphertext, tag) fails authentication", arguments: [0, 31, 32, 40, 48 + 4 - 1])
    func flippedBit(at index: Int) throws {
        var (client, relay) = try Self.pair()
        let first = try client.writeMessage(payload: [9, 9, 9, 9])
        var forged = first
        forged[index] ^= 0x01
        #expect(throws: NoiseError.authenticationFailed) { try relay.readMessage(forged) }
        #expect(try relay.readMessage(first) == [9, 9, 9, 9])
        var second = try relay.writeMessage(payload: [])
        second[second.count - 1] ^= 0x80
        #expect(throws: NoiseError.authenticationFailed) { try client.readMessage(second) }
    }

    @Test("a client holding another relay key, or another prologue, fails at the relay")
    func wrongKeyOrPrologue() throws {
        var impostorTarget = try HandshakeState(pattern: .nk, role: .initiator, remoteStatic: X25519KeyPair().publicKey)
        var relay = try HandshakeState(pattern: .nk, role: .responder, localStatic: Self.relay)
        #expect(throws: NoiseError.authenticationFailed) { try relay.readMessage(try impostorTarget.writeMessage(payload: [])) }
        var (client, _) = try Self.pair(prologue: Array("cookie A".utf8))
        var (_, relayB) = try Self.pair(prologue: Array("cookie B".utf8))
        #expect(throws: NoiseError.authenticationFailed) { try relayB.readMessage(try client.writeMessage(payload: [])) }
    }

    @Test("a relay that does not hold the key cannot answer: the client refuses its reply")
    func impostorRelay() throws {
        var (client, _) = try Self.pair()
        var impostor = try HandshakeState(pattern: .nk, role: .responder, localStatic: X25519KeyPair())
        let first = try client.writeMessage(payload: [])
        // The impostor cannot decrypt the payload, and a reply it makes up does not authenticate.
        #expect(throws: NoiseError.authenticationFailed) { try impostor.readMessage(first) }
        var madeUp = X25519KeyPair().publicKey + [UInt8](repeating: 0, count: 16)
        #expect(throws: NoiseError.authenticationFailed) { try client.readMessage(madeUp) }
        madeUp.removeLast()
        #expect(throws: NoiseError.messageTooShort) { try client.readMessage(madeUp) }
    }

    @Test("IK: a tampered encrypted static key fails authentication")
    func ikTamperedStatic() throws {
        var (client, relay) = try Self.pair(.ik)
        var first = try client.writeMessage(payload: [])
        first[40] ^= 0x01
        #expect(throws: NoiseError.authenticationFailed) { try relay.readMessage(first) }
        #expect(throws: NoiseError.messageTooShort) { try relay.readMessage(Array(first.prefix(32 + 47))) }
    }

    @Test("calls out of turn are refused")
    func outOfOrder() throws {
        var (client, relay) = try Self.pair()
        #expect(throws: NoiseError.outOfOrder) { try relay.writeMessage(payload: []) }
        #expect(throws: NoiseError.outOfOrder) { try client.readMessage([UInt8](repeating: 0, count: 64)) }
        #expect(throws: NoiseError.outOfOrder) { try client.split() }
        _ = try relay.readMessage(try client.writeMessage(payload: []))
        #expect(throws: NoiseError.outOfOrder) { try client.writeMessage(payload: []) }
        _ = try client.readMessage(try relay.writeMessage(payload: []))
        #expect(throws: NoiseError.outOfOrder) { try client.writeMessage(payload: []) }
        #expect(throws: NoiseError.outOfOrder) { try relay.readMessage([UInt8](repeating: 0, count: 64)) }
    }

    @Test("keys missing, superfluous or of the wrong length are refused at init")
    func initKeys() {
        let pair = X25519KeyPair()
        #expect(throws: NoiseError.missingKey) { try HandshakeState(pattern: .nk, role: .initiator) }
        #expect(throws: NoiseError.invalidPublicKey) { try HandshakeState(pattern: .nk, role: .initiator, remoteStatic: [1, 2]) }
        #expect(throws: NoiseError.missingKey) { try HandshakeState(pattern: .nk, role: .initiator, localStatic: pair, remoteStatic: pair.publicKey) }
        #expect(throws: NoiseError.missingKey) { try HandshakeState(pattern: .ik, role: .initiator, remoteStatic: pair.publicKey) }
        #expect(throws: NoiseError.missingKey) { try HandshakeState(pattern: .nk, role: .responder) }
        #expect(throws: NoiseError.missingKey) { try HandshakeState(pattern: .nk, role: .responder, localStatic: pair, remoteStatic: pair.publicKey) }
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs contiguously in the array.
    func contains(subsequence needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<$0 + needle.count]) == needle }
    }
}
