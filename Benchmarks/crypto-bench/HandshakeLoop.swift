import ParleyAuth
import ParleyCrypto

/// The relay's side of a join's key exchange, as issue 15 plans it: read a client's Noise_NK first message (the token
/// inside, encrypted), verify the token (HS256), answer, split into the two session keys. The clients' first messages are
/// made before the clock starts; each timed iteration is one handshake, so µs per "packet" is µs per handshake.
final class HandshakeLoop {
    let relayKey = X25519KeyPair()
    let verifier = TokenVerifier(keys: ["bench": "bench-secret-of-a-reasonable-length"])
    let prologue = Array("cookie round trip".utf8)
    private var firstMessages: [[UInt8]] = []
    private(set) var failures = 0

    /// Prepares `count` distinct client first messages, each carrying a freshly minted member token.
    func prepare(_ count: Int) {
        let signer = TokenSigner(apiKey: "bench", apiSecret: "bench-secret-of-a-reasonable-length")
        firstMessages = (0..<count).map { i in
            let token = signer.mint(TokenClaims(identity: "member-\(i)", room: "lobby", expiresAt: 4_000_000_000))
            var client = try! HandshakeState(pattern: .nk, role: .initiator, prologue: prologue, remoteStatic: relayKey.publicKey)
            return try! client.writeMessage(payload: Array(token.utf8))
        }
    }

    /// Times the relay's side of every prepared handshake.
    func run() -> Timing {
        timed(firstMessages.count) { i in
            do {
                var relay = try HandshakeState(pattern: .nk, role: .responder, prologue: prologue, localStatic: relayKey)
                let token = try relay.readMessage(firstMessages[i])
                _ = try verifier.verify(String(decoding: token, as: UTF8.self), now: 1_000_000_000)
                _ = try relay.writeMessage(payload: [])
                _ = try relay.split()
            } catch {
                failures += 1
            }
        }
    }
}

/// Signalling after the handshake: `SealedChannel.seal` of a 120-byte message on one side and `open` on the other,
/// and allocations per message. Every datagram is opened once (the replay window refuses a repeat).
final class SealedChannelLoop {
    static let messageBytes = 120
    static let slot = 256
    private let client: SealedChannel, relay: SealedChannel
    private let message = [UInt8](repeating: 0x5A, count: SealedChannelLoop.messageBytes)
    private var datagrams: UnsafeMutableRawBufferPointer
    private var lengths: [Int] = []
    private let opened = UnsafeMutableRawBufferPointer.allocate(byteCount: SealedChannelLoop.slot, alignment: 16)
    private(set) var failures = 0

    init(capacity: Int) throws {
        let relayKey = X25519KeyPair()
        var initiator = try HandshakeState(pattern: .nk, role: .initiator, remoteStatic: relayKey.publicKey)
        var responder = try HandshakeState(pattern: .nk, role: .responder, localStatic: relayKey)
        _ = try responder.readMessage(try initiator.writeMessage())
        _ = try initiator.readMessage(try responder.writeMessage())
        let c = try initiator.split(), r = try responder.split()
        client = SealedChannel(sending: c.sending, receiving: c.receiving)
        relay = SealedChannel(sending: r.sending, receiving: r.receiving)
        datagrams = .allocate(byteCount: capacity * Self.slot, alignment: 16)
        lengths = [Int](repeating: 0, count: capacity)
    }

    deinit {
        datagrams.deallocate()
        opened.deallocate()
    }

    /// Seals `count` messages (timed) into their slots, then opens each (timed).
    func run(_ count: Int) -> (seal: Timing, open: Timing) {
        let count = min(count, lengths.count)
        let seal = message.withUnsafeBytes { plaintext in
            timed(count) { i in
                let slot = UnsafeMutableRawBufferPointer(rebasing: datagrams[(i * Self.slot)..<((i + 1) * Self.slot)])
                lengths[i] = (try? client.seal(plaintext, into: slot)) ?? 0
            }
        }
        let open = timed(count) { i in
            let datagram = UnsafeRawBufferPointer(rebasing: datagrams[(i * Self.slot)..<(i * Self.slot + lengths[i])])
            if (try? relay.open(datagram, into: opened)) != Self.messageBytes { failures += 1 }
        }
        return (seal, open)
    }
}
