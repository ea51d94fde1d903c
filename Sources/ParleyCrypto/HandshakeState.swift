/// Noise's `HandshakeState` (revision 34, §5.3) for `Noise_NK_25519_ChaChaPoly_BLAKE2b` and
/// `Noise_IK_25519_ChaChaPoly_BLAKE2b`: the client (initiator) knows the relay's static key from its token or
/// configuration; the relay (responder) proves it holds that key; both get fresh transport keys from ephemerals
/// (forward secrecy). Payloads ride inside each message (the join token travels encrypted in the first one).
///
/// A message that fails to read (short, too long, low-order ephemeral, bad tag) throws and **leaves the state as it
/// was**: a forged datagram cannot spoil a handshake in progress.
///
/// Cost on the relay: reading NK's first message is one X25519 (`es`); writing the reply is a key generation and one
/// more (`ee`). IK doubles that (`es`, `ss`, then `ee`, `se`). **The stateless cookie round trip must come before
/// any of it**: the relay builds a `HandshakeState` only for an address that has proven it can receive (and puts the
/// cookie exchange into the prologue so both sides agree on it), otherwise a spoofed flood buys Diffie-Hellman.
public struct HandshakeState {
    /// Which side of the handshake this state plays.
    public enum Role: Sendable {
        /// The client: writes the first message.
        case initiator
        /// The relay: reads the first message.
        case responder
    }

    /// The pattern being run.
    public let pattern: HandshakePattern
    /// This side's role.
    public let role: Role
    private var symmetric: SymmetricState
    private let localStatic: X25519KeyPair?
    private var localEphemeral: X25519KeyPair?
    /// The peer's static public key: given to the initiator, learnt by an IK responder from the first message.
    public private(set) var remoteStatic: [UInt8]?
    private var remoteEphemeral: [UInt8]?
    private var messageIndex = 0

    /// Starts a handshake (`Initialize`): mixes the prologue and the responder's static key (the pre-message).
    /// - Parameters:
    ///   - localStatic: this side's static key pair: the responder's always, the initiator's for IK only.
    ///   - remoteStatic: the responder's public key, for the initiator (32 bytes).
    ///   - localEphemeral: a fixed ephemeral key, **for test vectors only**; nil draws a fresh one when needed.
    /// - Throws: `.missingKey` when a key the pattern needs is absent, `.invalidPublicKey` when `remoteStatic` is not
    ///   32 bytes.
    public init(pattern: HandshakePattern, role: Role, prologue: [UInt8] = [], localStatic: X25519KeyPair? = nil,
                remoteStatic: [UInt8]? = nil, localEphemeral: X25519KeyPair? = nil) throws(NoiseError) {
        switch role {
        case .initiator:
            guard let remoteStatic else { throw .missingKey }
            guard remoteStatic.count == X25519KeyPair.keyLength else { throw .invalidPublicKey }
            guard (localStatic != nil) == pattern.initiatorHasStatic else { throw .missingKey }
        case .responder:
            guard localStatic != nil, remoteStatic == nil else { throw .missingKey }
        }
        self.pattern = pattern
        self.role = role
        self.localStatic = localStatic
        self.remoteStatic = remoteStatic
        self.localEphemeral = localEphemeral
        symmetric = SymmetricState(protocolName: pattern.protocolName)
        symmetric.mixHash(prologue)
        // Pre-message `<- s`: the responder's static public key.
        symmetric.mixHash(role == .initiator ? remoteStatic! : localStatic!.publicKey)
    }

    /// True once every message of the pattern has been written or read.
    public var isComplete: Bool { messageIndex == pattern.messages.count }

    /// True when the next message is this side's to write.
    public var isMyTurn: Bool { !isComplete && (messageIndex % 2 == 0) == (role == .initiator) }

    /// The handshake hash `h` (64 bytes); after completion both sides hold the same value (channel binding).
    public var handshakeHash: [UInt8] { symmetric.handshakeHash }

    /// `WriteMessage(payload)`: the next handshake message carrying `payload` (encrypted once a key exists).
    /// Throws `.outOfOrder` when it is not this side's turn, `.messageTooLong` past 65535 bytes.
    public mutating func writeMessage(payload: [UInt8] = []) throws(NoiseError) -> [UInt8] {
        guard isMyTurn else { throw .outOfOrder }
        var next = self
        var message: [UInt8] = []
        for token in pattern.messages[messageIndex] {
            switch token {
            case .e:
                let ephemeral = next.localEphemeral ?? X25519KeyPair()
                next.localEphemeral = ephemeral
                message += ephemeral.publicKey
                next.symmetric.mixHash(ephemeral.publicKey)
            case .s:
                message += try next.symmetric.encryptAndHash(next.localStatic!.publicKey)
            default:
                try next.mixDiffieHellman(token)
            }
        }
        message += try next.symmetric.encryptAndHash(payload)
        guard message.count <= CipherState.maxMessageLength else { throw .messageTooLong }
        next.messageIndex += 1
        self = next
        return message
    }

    /// `ReadMessage(message)`: the payload the peer put in its next handshake message. On any error the state is
    /// unchanged: `.messageTooShort`, `.messageTooLong`, `.invalidPublicKey` (a low-order key), `.authenticationFailed`
    /// (bad tag), `.outOfOrder` (this side should write, or the handshake is over).
    public mutating func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard !isComplete, !isMyTurn else { throw .outOfOrder }
        guard message.count <= CipherState.maxMessageLength else { throw .messageTooLong }
        var next = self
        var offset = 0
        func take(_ count: Int) throws(NoiseError) -> [UInt8] {
            guard message.count - offset >= count else { throw .messageTooShort }
            defer { offset += count }
            return Array(message[offset..<offset + count])
        }
        for token in pattern.messages[messageIndex] {
            switch token {
            case .e:
                let ephemeral = try take(X25519KeyPair.keyLength)
                next.remoteEphemeral = ephemeral
                next.symmetric.mixHash(ephemeral)
            case .s:
                let length = X25519KeyPair.keyLength + (next.symmetric.cipherState.hasKey ? CipherState.tagLength : 0)
                next.remoteStatic = try next.symmetric.decryptAndHash(try take(length))
            default:
                try next.mixDiffieHellman(token)
            }
        }
        let rest = Array(message[offset...])
        if next.symmetric.cipherState.hasKey, rest.count < CipherState.tagLength { throw .messageTooShort }
        let payload = try next.symmetric.decryptAndHash(rest)
        next.messageIndex += 1
        self = next
        return payload
    }

    /// `Split()` after the last message: this side's sending and receiving cipher states (the initiator sends with the
    /// first key, the responder with the second). Throws `.outOfOrder` before the handshake is complete.
    public func split() throws(NoiseError) -> (sending: CipherState, receiving: CipherState) {
        guard isComplete else { throw .outOfOrder }
        let (toResponder, toInitiator) = symmetric.split()
        return role == .initiator ? (toResponder, toInitiator) : (toInitiator, toResponder)
    }

    /// `MixKey(DH(...))` for a DH token, with the key pair and peer key this role uses for it.
    private mutating func mixDiffieHellman(_ token: HandshakePattern.Token) throws(NoiseError) {
        let isInitiator = role == .initiator
        let pair: X25519KeyPair?, peer: [UInt8]?
        switch token {
        case .ee: (pair, peer) = (localEphemeral, remoteEphemeral)
        case .es: (pair, peer) = isInitiator ? (localEphemeral, remoteStatic) : (localStatic, remoteEphemeral)
        case .se: (pair, peer) = isInitiator ? (localStatic, remoteEphemeral) : (localEphemeral, remoteStatic)
        case .ss: (pair, peer) = (localStatic, remoteStatic)
        case .e, .s: preconditionFailure("not a Diffie-Hellman token")
        }
        guard let pair, let peer else { throw .missingKey }
        guard let shared = pair.sharedSecret(with: peer) else { throw .invalidPublicKey }
        symmetric.mixKey(shared)
    }
}
