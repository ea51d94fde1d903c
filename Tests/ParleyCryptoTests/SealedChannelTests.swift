@testable import ParleyCrypto
import Testing

/// Sealed datagrams after the handshake: per-direction keys, explicit counters, the replay window, tamper refusal.
@Suite("SealedChannel")
struct SealedChannelTests {
    /// A client and a relay channel from a fresh NK handshake.
    static func channels() throws -> (client: SealedChannel, relay: SealedChannel) {
        let relayKey = X25519KeyPair()
        var client = try HandshakeState(pattern: .nk, role: .initiator, remoteStatic: relayKey.publicKey)
        var relay = try HandshakeState(pattern: .nk, role: .responder, localStatic: relayKey)
        _ = try relay.readMessage(try client.writeMessage(payload: []))
        _ = try client.readMessage(try relay.writeMessage(payload: []))
        let c = try client.split(), r = try relay.split()
        return (SealedChannel(sending: c.sending, receiving: c.receiving),
                SealedChannel(sending: r.sending, receiving: r.receiving))
    }

    static func seal(_ channel: SealedChannel, _ plaintext: [UInt8]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + SealedChannel.overhead)
        let n = try channel.seal(plaintext, into: &out)
        return Array(out.prefix(n))
    }

    static func open(_ channel: SealedChannel, _ datagram: [UInt8]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(0, datagram.count - SealedChannel.overhead))
        let n = try channel.open(datagram, into: &out)
        return Array(out.prefix(n))
    }

    @Test("round trip both ways, counters 0, 1, 2 in front")
    func roundTrip() throws {
        let (client, relay) = try Self.channels()
        for i in 0..<3 {
            let text = Array("hello \(i)".utf8)
            let datagram = try Self.seal(client, text)
            #expect(datagram.count == text.count + 24)
            #expect(datagram.prefix(8) == [UInt8(i), 0, 0, 0, 0, 0, 0, 0][...])
            #expect(!datagram.contains(subsequence: text))
            #expect(try Self.open(relay, datagram) == text)
            #expect(try Self.open(client, try Self.seal(relay, text)) == text)
        }
        #expect(try Self.open(relay, try Self.seal(client, [])) == [])
    }

    @Test("reordered and lost datagrams within the window open, each once")
    func reorderAndLoss() throws {
        let (client, relay) = try Self.channels()
        let datagrams = try (0..<100).map { try Self.seal(client, [UInt8($0)]) }
        for i in [99, 0, 50, 49, 98, 1] { #expect(try Self.open(relay, datagrams[i]) == [UInt8(i)]) }
        for i in [99, 0, 50] { #expect(throws: NoiseError.replayed) { try Self.open(relay, datagrams[i]) } }
    }

    @Test("a replay is refused before decrypting, a counter behind the window as too old")
    func replayAndTooOld() throws {
        let (client, relay) = try Self.channels()
        let first = try Self.seal(client, [1])
        _ = try Self.open(relay, first)
        #expect(throws: NoiseError.replayed) { try Self.open(relay, first) }
        client.nextSendCounter = ReplayWindow.size + 5
        _ = try Self.open(relay, try Self.seal(client, [2]))
        let late = try { client.nextSendCounter = 3; return try Self.seal(client, [3]) }()
        #expect(throws: NoiseError.tooOld) { try Self.open(relay, late) }
    }

    @Test("tampered counter, ciphertext or tag fails authentication and marks nothing", arguments: [0, 7, 8, 12, 12 + 16 - 1])
    func tampered(at index: Int) throws {
        let (client, relay) = try Self.channels()
        let datagram = try Self.seal(client, [1, 2, 3, 4])
        var forged = datagram
        forged[index] ^= 0x01
        #expect(throws: NoiseError.authenticationFailed) { try Self.open(relay, forged) }
        #expect(try Self.open(relay, datagram) == [1, 2, 3, 4])
        #expect(relay.replayWindow.highest == 0)
    }

    @Test("a datagram fed back to its sender (the other direction's key) is refused")
    func wrongDirection() throws {
        let (client, relay) = try Self.channels()
        #expect(throws: NoiseError.authenticationFailed) { try Self.open(client, try Self.seal(client, [5])) }
        #expect(throws: NoiseError.authenticationFailed) { try Self.open(relay, try Self.seal(relay, [5])) }
        let (_, otherRelay) = try Self.channels()
        #expect(throws: NoiseError.authenticationFailed) { try Self.open(otherRelay, try Self.seal(client, [5])) }
    }

    @Test("datagrams shorter than counter and tag are refused", arguments: [0, 1, 8, 23])
    func short(length: Int) throws {
        let (_, relay) = try Self.channels()
        #expect(throws: NoiseError.messageTooShort) { try Self.open(relay, [UInt8](repeating: 0, count: length)) }
    }

    @Test("buffers too small to seal into or open into are refused")
    func smallBuffers() throws {
        let (client, relay) = try Self.channels()
        var small = [UInt8](repeating: 0, count: 3 + 23)
        #expect(throws: NoiseError.bufferTooSmall) { try client.seal([1, 2, 3], into: &small) }
        let datagram = try Self.seal(client, [1, 2, 3])
        var tiny = [UInt8](repeating: 0, count: 2)
        #expect(throws: NoiseError.bufferTooSmall) { try relay.open(datagram, into: &tiny) }
    }

    @Test("the counter stops at 2^64−2: sealing past it throws, and 2^64−1 never opens")
    func exhaustion() throws {
        let (client, relay) = try Self.channels()
        client.nextSendCounter = UInt64.max - 1
        let last = try Self.seal(client, [7])
        #expect(try Self.open(relay, last) == [7])
        #expect(throws: NoiseError.nonceExhausted) { try Self.seal(client, [8]) }
        var forged = last
        for i in 0..<8 { forged[i] = 0xff }
        #expect(throws: NoiseError.nonceExhausted) { try Self.open(relay, forged) }
    }
}
