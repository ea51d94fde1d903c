/// Why an SRTP or SRTCP packet was not protected or unprotected. Every case leaves the context's state as it was.
public enum SRTPError: Error, Equatable, Sendable {
    /// The tag did not verify: tampered bytes, a wrong key, or a wrong rollover counter guess.
    case authenticationFailed
    /// The packet index was already accepted (RFC 3711 §3.3.2): a replay, or a duplicate.
    case replayed
    /// The packet index is older than the replay window reaches (or before the stream's first packet).
    case tooOld
    /// Too short, not version 2, or a CSRC list or header extension running past the end.
    case malformed
    /// The caller's output buffer cannot hold the result.
    case bufferTooSmall
    /// A new SSRC arrived but the context already tracks as many streams as it was built for.
    case tooManyStreams
    /// The rollover counter (2³² rollovers) or the SRTCP index (2³¹ packets) is used up: the key must be replaced.
    case indexExhausted
    /// The key is not 32 bytes or the salt not 12.
    case badKeyLength
    /// libsodium's AES-256-GCM needs AES-NI and PCLMULQDQ, which this CPU lacks (`crypto_aead_aes256gcm_is_available()`).
    case aesGCMUnavailable

    /// A short name for a log line or a metrics label.
    public var label: String {
        switch self {
        case .authenticationFailed: "authentication_failed"
        case .replayed: "replayed"
        case .tooOld: "too_old"
        case .malformed: "malformed"
        case .bufferTooSmall: "buffer_too_small"
        case .tooManyStreams: "too_many_streams"
        case .indexExhausted: "index_exhausted"
        case .badKeyLength: "bad_key_length"
        case .aesGCMUnavailable: "aes_gcm_unavailable"
        }
    }
}
