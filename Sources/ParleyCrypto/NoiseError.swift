/// Why a Noise handshake message or a sealed datagram was refused. Every hostile or malformed input ends here as a
/// value, never as a trap; the caller drops the datagram (and counts the reason) without replying.
public enum NoiseError: Error, Equatable, Sendable {
    /// The message is shorter than its pattern requires (a public key, a tag or the counter is cut off).
    case messageTooShort
    /// The message, or the payload to send, exceeds the Noise limit of 65535 bytes.
    case messageTooLong
    /// A peer's public key is not 32 bytes or is a low-order point (the Diffie-Hellman result would be all zeros).
    case invalidPublicKey
    /// The AEAD tag did not verify: tampered ciphertext, tag, counter, wrong key or wrong direction.
    case authenticationFailed
    /// The nonce counter reached 2^64−1, which Noise reserves: this key may seal nothing more (handshake again).
    case nonceExhausted
    /// A handshake call out of turn: writing when the peer should write, or anything after the last message.
    case outOfOrder
    /// The pattern needs a static key (ours or the peer's) that was not given, or was given for no purpose.
    case missingKey
    /// The caller's output buffer cannot hold the result.
    case bufferTooSmall
    /// The datagram's counter was already accepted once (a replay or a duplicate).
    case replayed
    /// The datagram's counter lies behind the replay window: it can no longer be told apart from a replay.
    case tooOld
}
