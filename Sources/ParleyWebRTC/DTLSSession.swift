import COpenSSL

/// Which end of the handshake a session is: the relay answers `a=setup:passive` and is always the server; the
/// client role is for tests and relay-to-relay links.
public enum DTLSRole: Sendable {
    /// Waits for a ClientHello.
    case server
    /// Sends the ClientHello on `start()`.
    case client
}

/// Where a `DTLSSession` is.
public enum DTLSState: Sendable, Equatable {
    /// Nothing received (server) or `start()` not called (client).
    case new
    /// Flights are being exchanged.
    case handshaking
    /// The handshake completed, the peer's fingerprint matched and `keys` holds the SRTP keys.
    case connected
    /// The handshake or the connection failed (`failure` says why); the session does nothing more.
    case failed
    /// Either side sent close_notify; the session does nothing more.
    case closed
}

/// What one input (a datagram or a timeout) did to a `DTLSSession`.
public enum DTLSEvent: Sendable, Equatable {
    /// The handshake goes on; send `takeOutgoing()` and arm `secondsUntilRetransmit()`.
    case handshaking
    /// The handshake just completed (reported once): `keys` is set.
    case connected
    /// The session just failed and ignores everything from now on; `takeOutgoing()` may still hold the alert
    /// OpenSSL wrote for the peer.
    case failed(WebRTCError)
    /// The peer's close_notify arrived (ours went into `takeOutgoing()` in reply).
    case closed
    /// Nothing changed: not DTLS, not for this state, a duplicate, or application data (discarded: no data channels).
    case ignored
}

/// One peer's DTLS 1.2 session for DTLS-SRTP (RFC 5763, RFC 5764, RFC 8842), driven by the caller's event loop:
/// datagrams go in through `receive(_:)`, datagrams to send come out of `takeOutgoing()`, retransmissions happen
/// in `handleTimeout()` when `secondsUntilRetransmit()` has passed. No socket, no blocking.
///
/// The peer's certificate is pinned: its SHA-256 must equal `peerFingerprint` (what its SDP announced). The
/// session's verify callback checks it when the certificate arrives, so OpenSSL answers a wrong one with a
/// bad_certificate alert and never sends its Finished; the check is made again once the handshake completes,
/// together with the negotiated SRTP profile. Then `keys` holds the exported SRTP master keys.
///
/// Time: the session never asks the caller's clock, but OpenSSL reads the real (wall) clock inside
/// `DTLSv1_get_timeout` and `DTLSv1_handle_timeout`: a retransmission happens only once that clock agrees the timer
/// expired.
///
/// Owns one `SSL` (about 50 KB with its record buffers: RSS over 500 connected sessions) and, through it, its read
/// BIO (memory) and write BIO (datagrams), all freed in `deinit`. Not Sendable: one thread drives it.
public final class DTLSSession {
    /// The largest datagram the session writes (the UDP payload: DTLS record headers included).
    public static let mtu = 1200
    /// Datagrams a peer may send before the handshake must have completed; the next one fails the session.
    public static let maxHandshakeDatagrams = 32
    /// The largest datagram taken: anything larger is not a WebRTC peer's DTLS.
    public static let maxDatagramSize = 16 * 1024

    /// This end's role.
    public let role: DTLSRole
    /// The SHA-256 fingerprint of the certificate the peer announced in SDP (32 bytes).
    public let peerFingerprint: [UInt8]
    /// Where the session is.
    public private(set) var state: DTLSState = .new
    /// Why the session failed, once `state` is `.failed`.
    public private(set) var failure: WebRTCError?
    /// The SRTP master keys, once `state` has been `.connected`.
    public private(set) var keys: DTLSSRTPKeys?
    /// Datagrams received while the handshake was not complete (counted against `maxHandshakeDatagrams`).
    public private(set) var handshakeDatagrams = 0

    /// True once the client called `start()`, or the server has taken a ClientHello.
    public var handshakeStarted: Bool { state != .new }

    private let context: DTLSContext
    /// `SSL *`.
    private let ssl: OpaquePointer
    /// `BIO *` (memory): one datagram at a time is written here for OpenSSL to read. Owned by `ssl`.
    private let readBIO: OpaquePointer
    /// What the write BIO collected; outlives `ssl` (freed in `deinit`, before the stored properties).
    private let queue = DTLSDatagramQueue()
    /// Set by the verify callback when the peer's certificate was not the announced one.
    private var rejectedPeerCertificate = false

    /// A session with `context` in `role` that will accept only the certificate whose SHA-256 is `peerFingerprint`.
    public init(context: DTLSContext, role: DTLSRole, peerFingerprint: [UInt8]) throws(WebRTCError) {
        guard peerFingerprint.count == 32 else {
            throw WebRTCError("bad_fingerprint", "a sha-256 fingerprint has 32 bytes, not \(peerFingerprint.count)")
        }
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else {
            throw WebRTCError("dtls_session", "SSL_new failed: \(OpenSSLErrors.drain())")
        }
        guard let readBIO = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw WebRTCError("dtls_session", "BIO_new failed: \(OpenSSLErrors.drain())")
        }
        guard let writeBIO = DTLSDatagramBIOMethod.shared.makeBIO(queue: queue) else {
            BIO_free(readBIO)
            SSL_free(ssl)
            throw WebRTCError("dtls_session", "BIO_new failed: \(OpenSSLErrors.drain())")
        }
        parley_dtls_bio_set_mem_eof_return(readBIO, -1)  // empty means "try again", not end of file
        SSL_set_bio(ssl, readBIO, writeBIO)  // ssl owns both from here
        guard parley_dtls_set_mtu(ssl, Self.mtu) == Self.mtu else {
            SSL_free(ssl)
            throw WebRTCError("dtls_session", "SSL_set_mtu failed: \(OpenSSLErrors.drain())")
        }
        switch role {
        case .server: SSL_set_accept_state(ssl)
        case .client: SSL_set_connect_state(ssl)
        }
        self.context = context
        self.role = role
        self.peerFingerprint = peerFingerprint
        self.ssl = ssl
        self.readBIO = readBIO
        // The callbacks find the session through the SSL's app data (unretained: the session owns the SSL).
        parley_dtls_set_app_data(ssl, Unmanaged.passUnretained(self).toOpaque())
        DTLS_set_timer_cb(ssl) { ssl, previous in
            guard let session = DTLSSession.from(ssl) else { return previous == 0 ? 1_000_000 : previous }
            return session.context.nextRetransmitMicroseconds(after: previous)
        }
        SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT) { _, store in
            guard let store, let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
                  let session = DTLSSession.from(OpaquePointer(ssl)) else { return 0 }
            // Only the end-entity certificate (depth 0) is pinned; whatever chain comes with it is not looked at.
            guard X509_STORE_CTX_get_error_depth(store) == 0 else { return 1 }
            guard let certificate = X509_STORE_CTX_get_current_cert(store),
                  session.pinnedCertificateMatches(certificate) else {
                X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)  // OpenSSL sends bad_certificate
                return 0
            }
            return 1
        }
    }

    /// The session whose SSL is `ssl` (its app data), inside an OpenSSL callback.
    private static func from(_ ssl: OpaquePointer?) -> DTLSSession? {
        guard let ssl, let session = parley_dtls_get_app_data(ssl) else { return nil }
        return Unmanaged<DTLSSession>.fromOpaque(session).takeUnretainedValue()
    }

    /// Whether `certificate`'s SHA-256 is `peerFingerprint` (compared in constant time); remembers a mismatch.
    private func pinnedCertificateMatches(_ certificate: OpaquePointer) -> Bool {
        guard let digest = DTLSCertificate.sha256(of: certificate), digest.count == peerFingerprint.count,
              CRYPTO_memcmp(digest, peerFingerprint, digest.count) == 0 else {
            rejectedPeerCertificate = true
            return false
        }
        return true
    }

    deinit { SSL_free(ssl) }

    /// Client role: writes the ClientHello into `takeOutgoing()`. Does nothing for a server or a started session.
    @discardableResult
    public func start() -> DTLSEvent {
        guard role == .client, state == .new else { return .ignored }
        state = .handshaking
        return driveHandshake()
    }

    /// Takes one datagram the peer sent (the caller's demultiplexer decided it is DTLS, RFC 7983: first byte
    /// 20–63). Before the handshake completes it is a handshake step; afterwards records are read and discarded,
    /// except a close_notify (`.closed`) or a fatal alert (`.failed`).
    public func receive(_ datagram: UnsafeRawBufferPointer) -> DTLSEvent {
        switch state {
        case .failed, .closed: return .ignored
        case .new where role == .client: return .ignored  // nothing is expected before our ClientHello
        case .new, .handshaking, .connected: break
        }
        guard let first = datagram.first, (20...63).contains(first), datagram.count <= Self.maxDatagramSize else {
            return .ignored
        }
        if state != .connected {
            handshakeDatagrams += 1
            guard handshakeDatagrams <= Self.maxHandshakeDatagrams else {
                return fail("dtls_handshake_budget",
                            "\(Self.maxHandshakeDatagrams) datagrams without completing the handshake")
            }
        }
        // A server not yet started takes nothing but a ClientHello: other records could only fail it.
        if state == .new, !Self.startsWithClientHello(datagram) { return .ignored }
        guard Self.recordsTile(datagram, minimumProtectedLength: minimumProtectedRecordLength) else { return .ignored }
        guard BIO_write(readBIO, datagram.baseAddress, Int32(datagram.count)) == Int32(datagram.count) else {
            parley_dtls_bio_reset(readBIO)
            return fail("dtls_failed", "cannot buffer the datagram: \(OpenSSLErrors.drain())")
        }
        // OpenSSL reads a whole datagram at once; whatever it left (a malformed one) must not join the next.
        defer { if parley_dtls_bio_pending(readBIO) > 0 { parley_dtls_bio_reset(readBIO) } }
        return state == .connected ? readRecords() : driveHandshake()
    }

    /// The datagrams to send, oldest first, each at most `mtu` bytes; the session forgets them.
    public func takeOutgoing() -> [[UInt8]] {
        defer { queue.datagrams.removeAll() }
        return queue.datagrams
    }

    /// Seconds until the running retransmission timer expires (0 when it has), or nil when none runs. OpenSSL
    /// measures it against the real clock (`DTLSv1_get_timeout`).
    public func secondsUntilRetransmit() -> Double? {
        guard state == .handshaking || state == .connected else { return nil }
        let microseconds = parley_dtls_get_timeout_us(ssl)
        return microseconds < 0 ? nil : Double(microseconds) / 1_000_000
    }

    /// Retransmits the last flight if OpenSSL's timer expired (`DTLSv1_handle_timeout`); after too many
    /// retransmissions (OpenSSL allows 12) the session fails.
    public func handleTimeout() -> DTLSEvent {
        guard state == .handshaking || state == .connected else { return .ignored }
        ERR_clear_error()
        if parley_dtls_handle_timeout(ssl) < 0 {
            return fail("dtls_timeout", "the peer stopped answering the handshake: \(OpenSSLErrors.drain())")
        }
        return state == .connected ? .ignored : .handshaking
    }

    /// Sends close_notify if connected, and ends the session either way.
    public func close() {
        switch state {
        case .connected:
            ERR_clear_error()
            _ = SSL_shutdown(ssl)
            ERR_clear_error()
            state = .closed
        case .new, .handshaking:
            state = .closed
        case .failed, .closed:
            break
        }
    }

    // MARK: - Steps

    /// One `SSL_do_handshake`: on to `.handshaking`, to `finishHandshake()`, or to `.failed`.
    private func driveHandshake() -> DTLSEvent {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return finishHandshake() }
        let error = SSL_get_error(ssl, result)
        switch error {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            if state == .new {
                // A server leaves `.new` only once a ClientHello was taken; anything else was dropped by OpenSSL.
                guard SSL_get_state(ssl) != TLS_ST_BEFORE else { return .ignored }
                state = .handshaking
            }
            return .handshaking
        default:
            if rejectedPeerCertificate {
                // OpenSSL queued a bad_certificate alert for the peer; it stays in `takeOutgoing()`.
                _ = OpenSSLErrors.drain()
                return fail("fingerprint_mismatch", "the peer's certificate is not the one its SDP announced")
            }
            return fail("dtls_handshake_failed", Self.describe(error, in: "SSL_do_handshake"))
        }
    }

    /// The handshake completed: the peer's certificate must be the one announced, a profile must be chosen, and
    /// the keys are exported. On failure the last flight (a server's Finished) is not sent.
    private func finishHandshake() -> DTLSEvent {
        let event = checkCompletedHandshake()
        if case .failed = event { queue.datagrams.removeAll() }
        return event
    }

    /// `finishHandshake()`'s checks and the key export.
    private func checkCompletedHandshake() -> DTLSEvent {
        guard let certificate = SSL_get1_peer_certificate(ssl) else {
            return fail("dtls_no_certificate", "the peer sent no certificate")
        }
        let matches = pinnedCertificateMatches(certificate)
        X509_free(certificate)
        guard matches else {
            return fail("fingerprint_mismatch", "the peer's certificate is not the one its SDP announced")
        }
        guard let selected = SSL_get_selected_srtp_profile(ssl),
              let profile = SRTPProfile(rawValue: UInt16(truncatingIfNeeded: selected.pointee.id)) else {
            return fail("no_srtp_profile", "the handshake negotiated no SRTP profile (use_srtp)")
        }
        guard let exported = DTLSSRTPKeys.export(from: ssl, profile: profile, isServer: role == .server) else {
            return fail("dtls_failed", "cannot export the SRTP keys: \(OpenSSLErrors.drain())")
        }
        keys = exported
        state = .connected
        return .connected
    }

    /// Reads every record of the datagram just written: application data is discarded; close_notify closes.
    private func readRecords() -> DTLSEvent {
        withUnsafeTemporaryAllocation(byteCount: 2048, alignment: 1) { buffer in
            while true {
                ERR_clear_error()
                let result = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
                if result > 0 { continue }
                let error = SSL_get_error(ssl, result)
                switch error {
                case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                    return .ignored
                case SSL_ERROR_ZERO_RETURN:
                    ERR_clear_error()
                    _ = SSL_shutdown(ssl)  // our close_notify in reply (RFC 5246 §7.2.1)
                    ERR_clear_error()
                    state = .closed
                    return .closed
                default:
                    // Only the peer's fatal alert (authenticated under the connection's keys: OpenSSL drops records
                    // that fail theirs) ends a connected session. Any other read error is about this datagram, which
                    // anyone could have forged: it is dropped, and the media keys the handshake gave stay in use.
                    guard SSL_get_shutdown(ssl) & SSL_RECEIVED_SHUTDOWN != 0 else {
                        _ = OpenSSLErrors.drain()
                        return .ignored
                    }
                    return fail("dtls_failed", Self.describe(error, in: "SSL_read"))
                }
            }
        }
    }

    /// Whether `datagram` starts with a DTLS record of epoch 0 carrying a ClientHello (or its first fragment):
    ///
    ///     record (RFC 6347 §4.1)                          handshake (§4.2.2)
    ///     +------+---------+-------+--------+--------+    +------+--------+---------+--------+----------+
    ///     | 22   | FE FD/FF| epoch | seq(6) | length |    | 1    | length | msg_seq | offset | frag len |
    ///     | type | version | 0     |        | (2)    |    | type | (3)    | (2)     | (3)    | (3)      |
    ///     +------+---------+-------+--------+--------+    +------+--------+---------+--------+----------+
    static func startsWithClientHello(_ datagram: UnsafeRawBufferPointer) -> Bool {
        let recordHeader = 13, handshakeHeader = 12
        guard datagram.count >= recordHeader + handshakeHeader,
              datagram[0] == 22, datagram[1] == 0xFE, datagram[2] == 0xFD || datagram[2] == 0xFF,  // DTLS 1.2 / 1.0
              datagram[3] == 0, datagram[4] == 0 else { return false }
        let length = Int(datagram[11]) << 8 | Int(datagram[12])
        return length >= handshakeHeader && recordHeader + length <= datagram.count && datagram[recordHeader] == 1
    }

    /// The shortest protected record the negotiated AEAD allows: ChaCha20-Poly1305's 16-byte tag, or AES-GCM's
    /// 8-byte explicit nonce and 16-byte tag (also while no cipher is negotiated yet).
    private var minimumProtectedRecordLength: Int {
        guard let cipher = SSL_get_current_cipher(ssl), SSL_CIPHER_get_cipher_nid(cipher) == NID_chacha20_poly1305 else {
            return 24
        }
        return 16
    }

    /// Whether `datagram` is whole DTLS records and nothing else: each header complete, of a record type and a DTLS
    /// version, each record ending inside the datagram and the last one exactly at its end; and no record under an
    /// epoch other than 0 shorter than `minimumProtectedLength` (the AEAD's explicit nonce and tag). OpenSSL 3.0 takes
    /// a datagram that breaks either rule as a fatal error and ends the session: it resynchronises inside a record
    /// whose length overruns the datagram (a forged 31-byte datagram ended a connected session, SSL_ERROR_SYSCALL
    /// with an empty queue), and it fails on a protected record too short to hold its tag. No peer sends either.
    ///
    ///     record (RFC 6347 §4.1)
    ///     +------+---------+-------+--------+--------+-----------------+------+---------
    ///     | type | FE FD/FF| epoch | seq(6) | length | length bytes    | type | … next record, or the datagram's end
    ///     +------+---------+-------+--------+--------+-----------------+------+---------
    static func recordsTile(_ datagram: UnsafeRawBufferPointer, minimumProtectedLength: Int) -> Bool {
        let recordHeader = 13
        var offset = 0
        while offset < datagram.count {
            guard datagram.count - offset >= recordHeader,
                  (20...25).contains(datagram[offset]),  // change_cipher_spec, alert, handshake, application_data, heartbeat, tls12_cid
                  datagram[offset + 1] == 0xFE, datagram[offset + 2] == 0xFD || datagram[offset + 2] == 0xFF else { return false }
            let epoch = Int(datagram[offset + 3]) << 8 | Int(datagram[offset + 4])
            let length = Int(datagram[offset + 11]) << 8 | Int(datagram[offset + 12])
            guard length <= datagram.count - offset - recordHeader, epoch == 0 || length >= minimumProtectedLength else { return false }
            offset += recordHeader + length
        }
        return offset > 0
    }

    /// One line for an `SSL_get_error` result `error` of `call`: the OpenSSL error queue, or the code if it is empty.
    private static func describe(_ error: Int32, in call: String) -> String {
        let queue = OpenSSLErrors.drain()
        return queue == OpenSSLErrors.empty ? "\(call) failed with SSL_get_error \(error) and no OpenSSL error" : queue
    }

    /// Moves to `.failed` with `code` and `reason`, and returns the event.
    private func fail(_ code: String, _ reason: String) -> DTLSEvent {
        let error = WebRTCError(code, reason)
        state = .failed
        failure = error
        return .failed(error)
    }
}
