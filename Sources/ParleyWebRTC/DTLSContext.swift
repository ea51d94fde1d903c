import COpenSSL

/// The DTLS 1.2 configuration every `DTLSSession` of a relay (or of one worker) is made from: one `SSL_CTX` with
/// the certificate and key, the `use_srtp` profiles in preference order, ECDHE over X25519 or P-256, ECDSA
/// AEAD cipher suites, mutual certificates whatever their issuer (RFC 8827 §6.5: each session pins the fingerprint
/// the peer's SDP announced), no session cache, tickets or renegotiation, no MTU probing.
///
/// Made with `DTLS_method()`, so sessions of either role share it. Owns the `SSL_CTX`, freed in `deinit`.
public final class DTLSContext: @unchecked Sendable {
    // @unchecked Sendable: the SSL_CTX is configured in `init` and never changed afterwards; OpenSSL allows
    // `SSL_new` from several threads on a context nobody modifies (its reference count is atomic).

    /// `SSL_CTX *`.
    let context: OpaquePointer
    /// The certificate the sessions present; its `fingerprintSDP` goes into the SDP answer.
    public let certificate: DTLSCertificate
    /// The SRTP profiles offered (client) or accepted (server), most preferred first. A server picks the first of
    /// these that the client offered, whatever the client's order.
    public let srtpProfiles: [SRTPProfile]
    /// Seconds before a handshake flight is first retransmitted; each retransmission doubles it, up to 60 s.
    public let initialRetransmitTimeout: Double

    /// The SRTP profiles accepted by default: AES-256-GCM (RFC 7714; the relay runs it on its own libsodium SRTP,
    /// the native members' path), then AES-128-GCM, then AES-128-CM-HMAC-SHA1-80, which every WebRTC endpoint has.
    public static let defaultSRTPProfiles: [SRTPProfile] = [.aeadAes256Gcm, .aeadAes128Gcm, .aes128CmHmacSha1_80]
    /// The same without AES-256-GCM, for a CPU where libsodium cannot run it (no AES-NI): libsrtp2 runs the rest.
    public static let withoutAES256GCM: [SRTPProfile] = [.aeadAes128Gcm, .aes128CmHmacSha1_80]

    /// Cipher suites: ECDHE with an ECDSA certificate and an AEAD. RFC 8827 §6.5 makes
    /// TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 mandatory, so every WebRTC peer has the first; no CBC suite, whose
    /// records `DTLSSession` would have to bound differently.
    static let cipherList = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305"
    /// Key exchange groups, preferred first.
    static let groups = "X25519:P-256"
    /// The largest certificate chain a peer may send, in bytes (browsers send one certificate of well under 2 KB).
    static let maxCertificateList = 16 * 1024

    /// A context presenting `certificate`. `srtpProfiles` must not be empty; `initialRetransmitTimeout` is in
    /// seconds (RFC 6347 §4.2.4.1 suggests 1 s).
    public init(certificate: DTLSCertificate, srtpProfiles: [SRTPProfile] = DTLSContext.defaultSRTPProfiles,
                initialRetransmitTimeout: Double = 1.0) throws(WebRTCError) {
        guard !srtpProfiles.isEmpty else { throw WebRTCError("dtls_context", "no SRTP profile to offer") }
        guard initialRetransmitTimeout > 0, initialRetransmitTimeout <= 60 else {
            throw WebRTCError("dtls_context", "the initial retransmission timeout must be in (0, 60] seconds")
        }
        ERR_clear_error()
        guard let context = SSL_CTX_new(DTLS_method()) else {
            throw WebRTCError("dtls_context", "SSL_CTX_new failed: \(OpenSSLErrors.drain())")
        }
        let profileList = srtpProfiles.map(\.openSSLName).joined(separator: ":")
        _ = SSL_CTX_set_options(context, parley_dtls_context_options())
        let configured = parley_dtls_ctx_set_min_proto_version(context, DTLS1_2_VERSION) == 1
            && SSL_CTX_use_certificate(context, certificate.certificate) == 1
            && SSL_CTX_use_PrivateKey(context, certificate.key) == 1
            && SSL_CTX_check_private_key(context) == 1
            && SSL_CTX_set_tlsext_use_srtp(context, profileList) == 0  // 0 is success here
            && SSL_CTX_set_cipher_list(context, Self.cipherList) == 1
            && parley_dtls_ctx_set1_groups_list(context, Self.groups) == 1
        guard configured else {
            SSL_CTX_free(context)
            throw WebRTCError("dtls_context", "cannot configure the DTLS context: \(OpenSSLErrors.drain())")
        }
        // Any certificate is accepted here; `DTLSSession` checks its fingerprint once the handshake is done.
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT) { _, _ in 1 }
        parley_dtls_ctx_set_read_ahead(context, 1)
        parley_dtls_ctx_disable_session_cache(context)
        parley_dtls_ctx_set_max_cert_list(context, Self.maxCertificateList)
        self.context = context
        self.certificate = certificate
        self.srtpProfiles = srtpProfiles
        self.initialRetransmitTimeout = initialRetransmitTimeout
    }

    deinit { SSL_CTX_free(context) }

    /// The retransmission timer after `previous` microseconds (0: the first flight): the initial timeout, then
    /// doubled up to 60 s. OpenSSL asks through `DTLS_set_timer_cb`.
    func nextRetransmitMicroseconds(after previous: UInt32) -> UInt32 {
        if previous == 0 { return UInt32(initialRetransmitTimeout * 1_000_000) }
        return min(previous, 30_000_000) * 2
    }
}
