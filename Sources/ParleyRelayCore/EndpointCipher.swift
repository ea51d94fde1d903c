import ParleyCrypto

/// One direction of an RTP endpoint's or WebRTC member's SRTP, whichever library runs it: libsrtp2 for the SDES
/// profile (`AES_CM_128_HMAC_SHA1_80`, ffmpeg and GStreamer) and DTLS-SRTP's other libsrtp profiles, or — for
/// `AEAD_AES_256_GCM`, which browsers offer and the relay prefers — the relay's own RFC 7714 SRTP on libsodium
/// (`SRTPSender`/`SRTPReceiver`, the native members' path: no allocation, a quarter of Debian's libsrtp2 cost), with
/// SRTP and SRTCP session keys derived from the master key (`SRTPKeyDerivation`). Transforms in place in the caller's
/// buffer, which holds `trailerCapacity` bytes beyond the packet when protecting. One worker thread owns it.
final class EndpointCipher {
    private enum Backend {
        case libsrtp(LibSRTPSession)
        case sending(rtp: SRTPSender, rtcp: SRTPSender)
        case receiving(rtp: SRTPReceiver, rtcp: SRTPReceiver)
    }
    private let backend: Backend

    /// Room a protecting caller leaves after the packet (either library's largest trailer).
    static let trailerCapacity = max(LibSRTPSession.trailerCapacity, SRTPSender.rtcpOverhead)

    /// The profile it runs.
    var profile: SRTPProtectionProfile {
        switch backend {
        case .libsrtp(let s): s.profile
        case .sending, .receiving: .aeadAES256GCM
        }
    }

    /// A libsrtp2 session.
    init(_ session: LibSRTPSession) { backend = .libsrtp(session) }

    /// The relay's own AES-256-GCM contexts for SRTP and SRTCP (their session keys and salts already derived).
    init(sending rtp: SRTPSender, rtcp: SRTPSender) { backend = .sending(rtp: rtp, rtcp: rtcp) }

    /// See `init(sending:rtcp:)`.
    init(receiving rtp: SRTPReceiver, rtcp: SRTPReceiver) { backend = .receiving(rtp: rtp, rtcp: rtcp) }

    /// Protects the RTP packet in `buffer[0..<length]` in place; returns the SRTP length.
    func protectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        switch backend {
        case .libsrtp(let s): return try s.protectRTP(buffer, length: length)
        case .sending(let rtp, _): return try rtp.protect(UnsafeRawBufferPointer(rebasing: buffer[0..<length]), into: buffer)
        case .receiving: throw .malformed
        }
    }

    /// Protects again, in place, the RTP packet in `buffer[0..<length]`: a NACKed packet rebuilt byte for byte as it
    /// was first protected (the caller guarantees it). libsrtp sessions allow a repeated index when sending
    /// (`allow_repeat_tx`); the relay's own AES-256-GCM takes only an index it protected before (`SRTPSender.protect(again:)`).
    func protectRTPAgain(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        switch backend {
        case .libsrtp(let s): return try s.protectRTP(buffer, length: length)
        case .sending(let rtp, _): return try rtp.protect(again: UnsafeRawBufferPointer(rebasing: buffer[0..<length]), into: buffer)
        case .receiving: throw .malformed
        }
    }

    /// Protects the compound RTCP packet in `buffer[0..<length]` in place; returns the SRTCP length.
    func protectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        switch backend {
        case .libsrtp(let s): return try s.protectRTCP(buffer, length: length)
        case .sending(_, let rtcp): return try rtcp.protect(rtcp: UnsafeRawBufferPointer(rebasing: buffer[0..<length]), into: buffer)
        case .receiving: throw .malformed
        }
    }

    /// Checks and decrypts the SRTP packet in `buffer[0..<length]` in place; returns the RTP length.
    func unprotectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        switch backend {
        case .libsrtp(let s): return try s.unprotectRTP(buffer, length: length)
        case .receiving(let rtp, _): return try rtp.unprotect(UnsafeRawBufferPointer(rebasing: buffer[0..<length]), into: buffer)
        case .sending: throw .malformed
        }
    }

    /// Checks and decrypts the SRTCP packet in `buffer[0..<length]` in place; returns the RTCP length.
    func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        switch backend {
        case .libsrtp(let s): return try s.unprotectRTCP(buffer, length: length)
        case .receiving(_, let rtcp): return try rtcp.unprotect(rtcp: UnsafeRawBufferPointer(rebasing: buffer[0..<length]), into: buffer)
        case .sending: throw .malformed
        }
    }
}
