/// Parley's key exchange: `Noise_NK_25519_ChaChaPoly_BLAKE2b` after the cookie round trip (`SignallingEnvelope`).
///
/// ```
/// member                                             relay (static key s, known to the member)
///   hello (nonce, padded)                       →
///                                               ←    cookie ‖ s                 (no Diffie-Hellman yet)
///   initiation: cookie, e, es, AEAD(join/register) →                            (the token travels only here)
///                                               ←    response: e, ee, AEAD(empty, or a refusal)
///   sealed signalling, SRTP media (SessionKeys) ↔
/// ```
///
/// The prologue is `"parley signalling v2"` ‖ cookie: an initiation replayed from another address needs that
/// address's cookie, and with another cookie its payload does not open. Only the holder of `s` can open the
/// initiation or write a response that opens (what "the relay proves it holds its key" means), and the session keys
/// mix two fresh ephemerals (`ee`): recorded traffic stays sealed if `s` leaks later.
public enum ParleyHandshake {
    /// The fixed part of the prologue.
    static let prologueLabel = Array("parley signalling v2".utf8)

    /// The shortest initiation a join or register can make: the ephemeral key (32), the AEAD tag (16) and a payload
    /// that holds at least a token. An HS256 JWT is longer than 64 characters (a 43-character signature, two dots,
    /// a header of at least 20). Anything shorter is refused before it costs the relay a Diffie-Hellman or a place in
    /// the join budget.
    public static let minimumInitiationLength = 32 + 16 + 64

    /// The prologue for an initiation made with `cookie`.
    public static func prologue(cookie: [UInt8]) -> [UInt8] { prologueLabel + cookie }

    /// The relay's side of one initiation: opens `noiseMessage` with the relay's key and returns its payload and the
    /// handshake, ready for `respond`. Throws (and nothing is kept) when it does not open.
    public static func read(initiation noiseMessage: [UInt8], cookie: [UInt8],
                            relayKey: X25519KeyPair) throws(NoiseError) -> (payload: [UInt8], handshake: HandshakeState) {
        var state = try HandshakeState(pattern: .nk, role: .responder, prologue: prologue(cookie: cookie), localStatic: relayKey)
        let payload = try state.readMessage(noiseMessage)
        return (payload, state)
    }

    /// The relay's response carrying `payload`, and the session's keys (the relay's view).
    public static func respond(_ handshake: inout HandshakeState, payload: [UInt8] = []) throws(NoiseError) -> (message: [UInt8], keys: SessionKeys) {
        let message = try handshake.writeMessage(payload: payload)
        return (message, try SessionKeys(handshake: handshake))
    }
}

/// The member's side of the handshake: one per join or register attempt. The initiation is made once and resent
/// as is while no response arrives (the relay answers a repeat from its cache, without a second Diffie-Hellman).
public struct MemberHandshake {
    /// The relay public key the member expects.
    public let relayKey: [UInt8]
    /// The initiation's Noise message (made at `init`).
    public let initiation: [UInt8]
    private var state: HandshakeState

    /// Starts a handshake with the relay holding `relayKey`, for an initiation carrying `payload`, made with
    /// `cookie`. Throws `invalidPublicKey` for a key that is not a usable X25519 public key.
    public init(relayKey: [UInt8], cookie: [UInt8], payload: [UInt8]) throws(NoiseError) {
        guard relayKey.count == X25519KeyPair.keyLength else { throw .invalidPublicKey }
        self.relayKey = relayKey
        var state = try HandshakeState(pattern: .nk, role: .initiator, prologue: ParleyHandshake.prologue(cookie: cookie),
                                       remoteStatic: relayKey)
        initiation = try state.writeMessage(payload: payload)
        self.state = state
    }

    /// Takes the relay's response: its payload and the session's keys (the member's view). Throws when it does not
    /// open (not from the holder of `relayKey`, or not for this initiation); the handshake is then unchanged.
    public mutating func finish(response: [UInt8]) throws(NoiseError) -> (payload: [UInt8], keys: SessionKeys) {
        var next = state
        let payload = try next.readMessage(response)
        let keys = try SessionKeys(handshake: next)
        state = next
        return (payload, keys)
    }
}
