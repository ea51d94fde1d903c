import CSRTP

/// The SRTP protection profiles libsrtp2 runs for the relay's standard peers: SDES endpoints (ffmpeg, GStreamer) use
/// `aesCM128HmacSHA1_80`; WebRTC members get whichever DTLS-SRTP negotiated (RFC 5764, RFC 7714).
public enum SRTPProtectionProfile: Sendable, Equatable {
    /// `AES_CM_128_HMAC_SHA1_80` / `SRTP_AES128_CM_SHA1_80`: AES-128 counter mode, 80-bit HMAC-SHA1 tags. Master key
    /// 16 bytes ‖ salt 14.
    case aesCM128HmacSHA1_80
    /// `AEAD_AES_128_GCM` / `SRTP_AEAD_AES_128_GCM` (RFC 7714): 16-byte tags. Master key 16 bytes ‖ salt 12.
    case aeadAES128GCM
    /// `AEAD_AES_256_GCM` / `SRTP_AEAD_AES_256_GCM` (RFC 7714): 16-byte tags. Master key 32 bytes ‖ salt 12.
    case aeadAES256GCM

    /// Master key length in bytes.
    public var keyLength: Int { self == .aeadAES256GCM ? 32 : 16 }
    /// Master salt length in bytes.
    public var saltLength: Int { self == .aesCM128HmacSHA1_80 ? 14 : 12 }
    /// Bytes SRTP adds to an RTP packet (the tag).
    public var rtpOverhead: Int { self == .aesCM128HmacSHA1_80 ? 10 : 16 }
    /// Bytes SRTCP adds to an RTCP packet (E‖SRTCP index, then the tag).
    public var rtcpOverhead: Int { 4 + rtpOverhead }
}

/// One direction of SRTP/SRTCP through Debian's libsrtp2, with one `SRTPProtectionProfile` and a master key from
/// SDES (`a=crypto`, the plain-RTP endpoints: ffmpeg's `srtp://`, GStreamer's `srtpenc`/`srtpdec`) or DTLS-SRTP (WebRTC
/// members). RFC 3711 defaults otherwise: a 128-packet replay window. The relay's own members use
/// `SRTPSender`/`SRTPReceiver` (AEAD, libsodium).
///
/// Owns one `srtp_t` (`srtp_create` in `init`, `srtp_dealloc` in `deinit`). Packets are transformed in place in the
/// caller's buffer, which must hold `trailerCapacity` bytes beyond the packet when protecting (libsrtp's documented
/// contract: `SRTP_MAX_TRAILER_LEN`). No allocation per packet, except that libsrtp sets up a stream (a copy of the
/// session's template) at the first packet of each new SSRC.
/// Not thread-safe: one thread owns each session (a relay worker).
public final class LibSRTPSession {
    /// Which way the packets go: `outbound` protects (any SSRC we send), `inbound` unprotects (any SSRC we receive).
    public enum Direction: Sendable {
        /// We send: `protectRTP` / `protectRTCP`.
        case outbound
        /// We receive: `unprotectRTP` / `unprotectRTCP`.
        case inbound
    }

    /// Room a protecting caller leaves after the packet (`SRTP_MAX_TRAILER_LEN`).
    public static let trailerCapacity = Int(SRTP_MAX_TRAILER_LEN)

    private let session: srtp_t
    /// The direction the session was made for.
    public let direction: Direction
    /// The profile it runs.
    public let profile: SRTPProtectionProfile

    /// libsrtp's one-time setup (`srtp_init`), thread-safe through a `static let`.
    private static let libraryReady: Bool = srtp_init() == srtp_err_status_ok

    /// A session for `direction` with an SDES key (`AES_CM_128_HMAC_SHA1_80`); nil when libsrtp refuses.
    public convenience init?(key: SDESKey, direction: Direction) {
        self.init(masterKey: key.bytes, profile: .aesCM128HmacSHA1_80, direction: direction)
    }

    /// A session for `direction` with `masterKey` (key ‖ salt, `profile`'s lengths); nil when the key has the wrong
    /// length or libsrtp refuses (it could not initialise, or no memory). Outbound sessions allow repeating an index
    /// (`allow_repeat_tx`): a NACKed packet is resent with the same bytes.
    public init?(masterKey: [UInt8], profile: SRTPProtectionProfile, direction: Direction) {
        guard Self.libraryReady, masterKey.count == profile.keyLength + profile.saltLength else { return nil }
        var policy = srtp_policy_t()
        switch profile {
        case .aesCM128HmacSHA1_80:
            srtp_crypto_policy_set_rtp_default(&policy.rtp)    // AES_CM_128_HMAC_SHA1_80
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)  // AES_CM_128_HMAC_SHA1_80
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        case .aeadAES256GCM:
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtcp)
        }
        policy.ssrc.type = direction == .outbound ? ssrc_any_outbound : ssrc_any_inbound
        policy.window_size = 128
        policy.allow_repeat_tx = direction == .outbound ? 1 : 0
        policy.next = nil
        var created: srtp_t?
        var key = masterKey  // libsrtp derives its session keys in srtp_create and keeps no pointer to this
        let status = key.withUnsafeMutableBufferPointer { k in
            policy.key = k.baseAddress
            return srtp_create(&created, &policy)
        }
        for i in key.indices { key[i] = 0 }
        guard status == srtp_err_status_ok, let created else { return nil }
        session = created
        self.direction = direction
        self.profile = profile
    }

    deinit { srtp_dealloc(session) }

    /// Protects the RTP packet in `buffer[0..<length]` in place; returns the SRTP length (`length + profile.rtpOverhead`).
    /// `buffer` must hold `length + trailerCapacity` bytes.
    public func protectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .outbound, "protectRTP on an inbound session")
        return try transform(buffer, length: length, minimum: 12, trailer: true, srtp_protect)
    }

    /// Protects the compound RTCP packet in `buffer[0..<length]` in place; returns the SRTCP length.
    public func protectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .outbound, "protectRTCP on an inbound session")
        return try transform(buffer, length: length, minimum: 8, trailer: true, srtp_protect_rtcp)
    }

    /// Checks and decrypts the SRTP packet in `buffer[0..<length]` in place; returns the RTP length. A packet whose
    /// tag fails (`authenticationFailed`), or whose index was seen (`replayed`) or is behind the window (`tooOld`),
    /// changes nothing.
    public func unprotectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .inbound, "unprotectRTP on an outbound session")
        return try transform(buffer, length: length, minimum: 12 + profile.rtpOverhead, trailer: false, srtp_unprotect)
    }

    /// Checks and decrypts the SRTCP packet in `buffer[0..<length]` in place; returns the RTCP length.
    public func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .inbound, "unprotectRTCP on an outbound session")
        return try transform(buffer, length: length, minimum: 8 + profile.rtcpOverhead, trailer: false, srtp_unprotect_rtcp)
    }

    private func transform(_ buffer: UnsafeMutableRawBufferPointer, length: Int, minimum: Int, trailer: Bool,
                           _ call: (srtp_t?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) -> srtp_err_status_t)
        throws(SRTPError) -> Int {
        guard length >= minimum, length <= buffer.count, length <= Int(Int32.max) - Self.trailerCapacity else { throw .malformed }
        guard !trailer || buffer.count - length >= Self.trailerCapacity else { throw .bufferTooSmall }
        var n = Int32(length)
        let status = call(session, buffer.baseAddress, &n)
        switch status {
        case srtp_err_status_ok: return Int(n)
        case srtp_err_status_auth_fail: throw .authenticationFailed
        case srtp_err_status_replay_fail: throw .replayed
        case srtp_err_status_replay_old: throw .tooOld
        default: throw .malformed
        }
    }
}
