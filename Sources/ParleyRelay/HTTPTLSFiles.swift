import ParleyNet

/// The HTTP API's certificate (chain) and private key, read from the PEM files that `http_tls_cert` and `http_tls_key`
/// name. Startup only (blocking reads through `PrivateFile`).
///
/// Checked here, before libmicrohttpd sees them: each file readable, a regular file of at most `sizeLimit` bytes,
/// without a NUL byte (they are handed on as C strings), the certificate file holding a `CERTIFICATE` block and the
/// key file an unencrypted `PRIVATE KEY` block. Symbolic links are followed (certbot keeps its files behind them).
/// The key file's mode: one that others may read is refused; one its group may read is allowed with a warning (Debian's
/// `ssl-cert` group is such a group). Whether GnuTLS takes the two as a matching pair is `HTTPServer.checkTLS`'s question.
public struct HTTPTLSFiles: Sendable {
    /// The certificate file's path, as configured.
    public let certificatePath: String
    /// The key file's path, as configured.
    public let keyPath: String
    /// The certificate file's bytes (PEM: the server certificate first, then any intermediates).
    public let certificatePEM: [UInt8]
    /// The key file's bytes (PEM).
    public let keyPEM: [UInt8]
    /// What the log should say at start (a key file its group may read).
    public let warnings: [String]

    /// The largest file taken: a certificate chain is a few KB.
    public static let sizeLimit = 1 << 20

    /// Reads and checks both files; throws a message naming the file, the setting and the fix.
    public static func read(certificate: String, key: String) throws(ConfigError) -> HTTPTLSFiles {
        let (_, certificateBytes) = try file(certificate, setting: "http_tls_cert")
        guard certificateBytes.contains(Array("-----BEGIN CERTIFICATE-----".utf8)) else {
            throw ConfigError("http_tls_cert \(certificate) is not a PEM certificate (no \"-----BEGIN CERTIFICATE-----\" line)")
        }
        let (keyStatus, keyBytes) = try file(key, setting: "http_tls_key")
        if keyBytes.contains(Array("ENCRYPTED PRIVATE KEY-----".utf8)) || keyBytes.contains(Array("Proc-Type: 4,ENCRYPTED".utf8)) {
            throw ConfigError("http_tls_key \(key) is encrypted with a passphrase: give the relay an unencrypted key (openssl pkey -in \(key) -out NEW.pem, mode 600)")
        }
        guard keyBytes.contains(Array("-----BEGIN ".utf8)), keyBytes.contains(Array("PRIVATE KEY-----".utf8)) else {
            let swapped = keyBytes.contains(Array("-----BEGIN CERTIFICATE-----".utf8)) ? " (it holds a certificate: are http_tls_cert and http_tls_key swapped?)" : ""
            throw ConfigError("http_tls_key \(key) is not a PEM private key (no \"-----BEGIN … PRIVATE KEY-----\" line)\(swapped)")
        }
        let mode = octal(keyStatus.permissions)
        guard keyStatus.permissions & 0o004 == 0 else {
            throw ConfigError("http_tls_key \(key) may be read by anyone (mode \(mode)): chmod 600 \(key) (640 with a group only the relay's user is in), and replace the key if others may have read it")
        }
        var warnings: [String] = []
        if keyStatus.permissions & 0o040 != 0 {
            warnings.append("http_tls_key \(key) may be read by its group (mode \(mode)): fine for a group only the relay's user is in (Debian's ssl-cert); otherwise chmod 600 \(key)")
        }
        return HTTPTLSFiles(certificatePath: certificate, keyPath: key, certificatePEM: certificateBytes, keyPEM: keyBytes, warnings: warnings)
    }

    /// One file's status and bytes, or a `ConfigError` naming the setting.
    private static func file(_ path: String, setting: String) throws(ConfigError) -> (PrivateFile.Status, [UInt8]) {
        let found: (status: PrivateFile.Status, bytes: [UInt8])?
        do {
            found = try PrivateFile.read(path, limit: sizeLimit, followingLinks: true)
        } catch {
            throw ConfigError("cannot read \(setting) \(path) (\(error))")
        }
        guard let (status, bytes) = found else { throw ConfigError("\(setting) \(path) does not exist") }
        guard status.isRegularFile else { throw ConfigError("\(setting) \(path) is not a regular file") }
        guard status.size <= sizeLimit else { throw ConfigError("\(setting) \(path) is \(status.size) bytes, more than a PEM file of \(sizeLimit) bytes at most") }
        guard !bytes.isEmpty else { throw ConfigError("\(setting) \(path) is empty") }
        guard !bytes.contains(0) else { throw ConfigError("\(setting) \(path) holds a NUL byte: it is not a PEM text file (DER? convert it with openssl x509 -inform der / openssl pkey -inform der)") }
        return (status, bytes)
    }

    private static func octal(_ permissions: UInt32) -> String {
        let digits = String(permissions, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
