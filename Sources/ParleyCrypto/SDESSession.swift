import CSRTP

/// One direction of SRTP/SRTCP with an SDES key, `AES_CM_128_HMAC_SHA1_80` (RFC 3711 defaults: AES-128 counter mode,
/// HMAC-SHA1 tags of 80 bits on SRTP, 80 bits plus the 4-byte E‖index on SRTCP, a 128-packet replay window) through
/// Debian's libsrtp2. The plain-RTP endpoints' profile (ffmpeg's `srtp://`, GStreamer's `srtpenc`/`srtpdec`); the
/// relay's own members use `SRTPSender`/`SRTPReceiver` (AEAD, libsodium).
///
/// Owns one `srtp_t` (`srtp_create` in `init`, `srtp_dealloc` in `deinit`). Packets are transformed in place in the
/// caller's buffer, which must hold `trailerCapacity` bytes beyond the packet when protecting (libsrtp's documented
/// contract: `SRTP_MAX_TRAILER_LEN`; it writes 10 bytes to SRTP, 14 to SRTCP). No allocation per packet, except that
/// libsrtp sets up a stream (a copy of the session's template) at the first packet of each new SSRC.
/// Not thread-safe: one thread owns each session (a relay worker).
public final class SDESSession {
    /// Which way the packets go: `outbound` protects (any SSRC we send), `inbound` unprotects (any SSRC we receive).
    public enum Direction: Sendable {
        /// We send: `protectRTP` / `protectRTCP`.
        case outbound
        /// We receive: `unprotectRTP` / `unprotectRTCP`.
        case inbound
    }

    /// Room a protecting caller leaves after the packet (`SRTP_MAX_TRAILER_LEN`).
    public static let trailerCapacity = Int(SRTP_MAX_TRAILER_LEN)
    /// Bytes SRTP adds to an RTP packet (the 80-bit tag).
    public static let rtpOverhead = 10
    /// Bytes SRTCP adds to an RTCP packet (E‖SRTCP index, then the 80-bit tag).
    public static let rtcpOverhead = 14

    private let session: srtp_t
    /// The direction the session was made for.
    public let direction: Direction

    /// libsrtp's one-time setup (`srtp_init`), thread-safe through a `static let`.
    private static let libraryReady: Bool = srtp_init() == srtp_err_status_ok

    /// A session for `direction` with `key`; nil when libsrtp refuses (it could not initialise, or no memory).
    /// Outbound sessions allow repeating an index (`allow_repeat_tx`): a NACKed packet is resent with the same bytes.
    public init?(key: SDESKey, direction: Direction) {
        guard Self.libraryReady else { return nil }
        var policy = srtp_policy_t()
        srtp_crypto_policy_set_rtp_default(&policy.rtp)    // AES_CM_128_HMAC_SHA1_80
        srtp_crypto_policy_set_rtcp_default(&policy.rtcp)  // AES_CM_128_HMAC_SHA1_80
        policy.ssrc.type = direction == .outbound ? ssrc_any_outbound : ssrc_any_inbound
        policy.window_size = 128
        policy.allow_repeat_tx = direction == .outbound ? 1 : 0
        policy.next = nil
        var created: srtp_t?
        var key = key.bytes  // libsrtp derives its session keys in srtp_create and keeps no pointer to this
        let status = key.withUnsafeMutableBufferPointer { k in
            policy.key = k.baseAddress
            return srtp_create(&created, &policy)
        }
        for i in key.indices { key[i] = 0 }
        guard status == srtp_err_status_ok, let created else { return nil }
        session = created
        self.direction = direction
    }

    deinit { srtp_dealloc(session) }

    /// Protects the RTP packet in `buffer[0..<length]` in place; returns the SRTP length (`length + rtpOverhead`).
    /// `buffer` must hold `length + trailerCapacity` bytes.
    public func protectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .outbound, "protectRTP on an inbound SDES session")
        return try transform(buffer, length: length, minimum: 12, trailer: true, srtp_protect)
    }

    /// Protects the compound RTCP packet in `buffer[0..<length]` in place; returns the SRTCP length.
    public func protectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .outbound, "protectRTCP on an inbound SDES session")
        return try transform(buffer, length: length, minimum: 8, trailer: true, srtp_protect_rtcp)
    }

    /// Checks and decrypts the SRTP packet in `buffer[0..<length]` in place; returns the RTP length. A packet whose
    /// tag fails (`authenticationFailed`), or whose index was seen (`replayed`) or is behind the window (`tooOld`),
    /// changes nothing.
    public func unprotectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .inbound, "unprotectRTP on an outbound SDES session")
        return try transform(buffer, length: length, minimum: 12 + Self.rtpOverhead, trailer: false, srtp_unprotect)
    }

    /// Checks and decrypts the SRTCP packet in `buffer[0..<length]` in place; returns the RTCP length.
    public func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        precondition(direction == .inbound, "unprotectRTCP on an outbound SDES session")
        return try transform(buffer, length: length, minimum: 8 + Self.rtcpOverhead, trailer: false, srtp_unprotect_rtcp)
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
