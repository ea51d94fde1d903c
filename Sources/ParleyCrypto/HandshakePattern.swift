/// A Noise handshake pattern (revision 34, §7): the pre-message (the responder's static key the initiator already
/// knows) and the tokens of each message. Parley uses the one-round-trip patterns whose initiator knows the relay's key.
public enum HandshakePattern: String, Sendable, CaseIterable {
    /// `NK`: `<- s ... -> e, es  <- e, ee`. The initiator is anonymous; the responder proves it holds `s`.
    case nk = "NK"
    /// `IK`: `<- s ... -> e, es, s, ss  <- e, ee, se`. The initiator also sends its static key, encrypted.
    case ik = "IK"

    /// One token of a message pattern (§7.1).
    public enum Token: Sendable {
        /// Send (or receive) an ephemeral public key.
        case e
        /// Send (or receive) the static public key, encrypted once a key exists.
        case s
        /// Diffie-Hellman between the two ephemerals.
        case ee
        /// Diffie-Hellman between the initiator's ephemeral and the responder's static key.
        case es
        /// Diffie-Hellman between the initiator's static key and the responder's ephemeral.
        case se
        /// Diffie-Hellman between the two static keys.
        case ss
    }

    /// The full protocol name for X25519, ChaChaPoly and BLAKE2b, e.g. `Noise_NK_25519_ChaChaPoly_BLAKE2b`.
    public var protocolName: String { "Noise_\(rawValue)_25519_ChaChaPoly_BLAKE2b" }

    /// The messages in order: even indexes go initiator → responder, odd ones back.
    public var messages: [[Token]] {
        switch self {
        case .nk: [[.e, .es], [.e, .ee]]
        case .ik: [[.e, .es, .s, .ss], [.e, .ee, .se]]
        }
    }

    /// Whether the initiator has a static key of its own.
    public var initiatorHasStatic: Bool { self == .ik }
}
