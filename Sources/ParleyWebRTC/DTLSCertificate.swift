import COpenSSL

/// The relay's DTLS identity for WebRTC (RFC 8827 §6.5): an ECDSA P-256 key and a self-signed X.509 certificate
/// (CN "parley", random 64-bit serial, valid from a day before `now` to 30 days after, SHA-256 signature). Peers do
/// not check it against a CA: they compare its SHA-256 fingerprint with the `a=fingerprint` the SDP answer carried.
///
/// Owns one `EVP_PKEY` and one `X509`, freed in `deinit`.
public final class DTLSCertificate: @unchecked Sendable {
    // @unchecked Sendable: `key` and `certificate` are written only in `init` and never again; OpenSSL 3 allows
    // concurrent read-only use of an X509 and an EVP_PKEY (contexts up-reference them when they take them).

    /// The key pair (`EVP_PKEY *`).
    let key: OpaquePointer
    /// The self-signed certificate (`X509 *`).
    let certificate: OpaquePointer

    /// SHA-256 of the DER certificate (`X509_digest`): 32 bytes, what `a=fingerprint:sha-256` announces.
    public let fingerprint: [UInt8]

    /// How many days after `now` the certificate stays valid.
    public static let validDays = 30
    /// How many days before `now` it starts to be valid (peers whose clocks run behind).
    public static let backdatedDays = 1

    /// A new key and certificate. `now` is Unix time in seconds (the validity window is computed from it; nothing
    /// here reads a clock).
    public init(now: Int64) throws(WebRTCError) {
        guard let key = parley_dtls_keygen_p256() else {
            throw WebRTCError("dtls_certificate", "cannot make a P-256 key: \(OpenSSLErrors.drain())")
        }
        guard let certificate = X509_new() else {
            EVP_PKEY_free(key)
            throw WebRTCError("dtls_certificate", "X509_new failed: \(OpenSSLErrors.drain())")
        }
        do throws(WebRTCError) {
            fingerprint = try Self.selfSign(certificate, key: key, now: now)
        } catch {
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw error
        }
        self.key = key
        self.certificate = certificate
    }

    /// Fills in `certificate` for `key` (serial, validity, subject = issuer, public key), signs it and returns its
    /// SHA-256 fingerprint.
    private static func selfSign(_ certificate: OpaquePointer, key: OpaquePointer, now: Int64) throws(WebRTCError) -> [UInt8] {
        var serial: UInt64 = 0
        repeat {
            guard withUnsafeMutableBytes(of: &serial, { RAND_bytes($0.baseAddress, 8) }) == 1 else {
                throw WebRTCError("dtls_certificate", "RAND_bytes failed: \(OpenSSLErrors.drain())")
            }
            serial &= 0x7FFF_FFFF_FFFF_FFFF  // positive, at most 8 bytes of DER (RFC 5280 §4.1.2.2)
        } while serial == 0

        var start = Int(now)
        let commonName = Array("parley".utf8)
        let built = X509_set_version(certificate, 2) == 1  // v3
            && ASN1_INTEGER_set_uint64(X509_get_serialNumber(certificate), serial) == 1
            && X509_time_adj_ex(X509_getm_notBefore(certificate), -Int32(backdatedDays), 0, &start) != nil
            && X509_time_adj_ex(X509_getm_notAfter(certificate), Int32(validDays), 0, &start) != nil
            && X509_set_pubkey(certificate, key) == 1
        guard built, let name = X509_get_subject_name(certificate),
              X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, Int32(commonName.count), -1, 0) == 1,
              X509_set_issuer_name(certificate, name) == 1,
              X509_sign(certificate, key, EVP_sha256()) > 0 else {
            throw WebRTCError("dtls_certificate", "cannot build the certificate: \(OpenSSLErrors.drain())")
        }
        guard let digest = sha256(of: certificate) else {
            throw WebRTCError("dtls_certificate", "X509_digest failed: \(OpenSSLErrors.drain())")
        }
        return digest
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
    }

    /// The fingerprint as SDP writes it (RFC 8122 §5): `sha-256 AB:CD:…`, 32 uppercase hex pairs.
    public var fingerprintSDP: String { Self.sdpFingerprint(fingerprint) }

    /// `sha-256 ` and `bytes` as uppercase hex pairs joined by colons.
    public static func sdpFingerprint(_ bytes: [UInt8]) -> String {
        let digits: [Character] = Array("0123456789ABCDEF")
        return "sha-256 " + bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]]) }.joined(separator: ":")
    }

    /// The certificate's DER encoding (`i2d_X509`), for tests and diagnostics.
    func derEncoded() -> [UInt8] {
        let length = i2d_X509(certificate, nil)
        guard length > 0 else { return [] }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_X509(certificate, &cursor)
        }
        return der
    }

    /// SHA-256 of `x509`'s DER encoding, or nil when OpenSSL fails.
    static func sha256(of x509: OpaquePointer) -> [UInt8]? {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(x509, EVP_sha256(), &digest, &length) == 1, length == 32 else { return nil }
        return Array(digest.prefix(32))
    }
}
