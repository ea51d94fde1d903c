import CMicroHTTPD
import ParleyRelay

// HTTPS: whether this libmicrohttpd can serve it, the check of a certificate and key before the relay starts, and the
// PEM strings the daemon keeps while it runs.
extension HTTPServer {
    /// Whether this libmicrohttpd can serve HTTPS (`MHD_FEATURE_TLS`; Debian's is built with GnuTLS).
    public static var supportsTLS: Bool { parley_mhd_has_tls() == 1 }

    /// What to say when HTTPS is asked for and `supportsTLS` is false.
    public static let tlsUnsupported = ConfigError("this libmicrohttpd was built without TLS (MHD_FEATURE_TLS): install Debian's libmicrohttpd12 (GnuTLS), or unset http_tls_cert and http_tls_key")

    /// Checks that GnuTLS takes `files` as a certificate and its key (libmicrohttpd starts a daemon with them and no
    /// socket, and stops it); throws GnuTLS's reason, naming both files, when it does not or when `supportsTLS` is false.
    public static func checkTLS(_ files: HTTPTLSFiles) throws(ConfigError) {
        guard supportsTLS else { throw tlsUnsupported }
        let reasons = TLSCheckLog()
        let pem = PEMStrings(files)
        let line: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?) -> Void = { cls, text in
            guard let cls, let text else { return }
            Unmanaged<TLSCheckLog>.fromOpaque(cls).takeUnretainedValue().lines.append(String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        var logger = parley_mhd_logger(line: line, cls: Unmanaged.passUnretained(reasons).toOpaque())
        let accepted = withExtendedLifetime(reasons) { parley_mhd_check_tls(pem.certificate, pem.key, Self.refuse, &logger) }
        guard accepted == 1 else {
            let reason = reasons.lines.first { $0.contains("GnuTLS") } ?? reasons.lines.first ?? "no reason given"
            throw ConfigError("http_tls_cert \(files.certificatePath) and http_tls_key \(files.keyPath) were refused: \(reason)")
        }
    }

    /// libmicrohttpd's messages during `checkTLS` (one thread: the caller's).
    final class TLSCheckLog {
        var lines: [String] = []
    }

    /// The handler of `checkTLS`'s daemon, which has no socket and so no requests.
    static let refuse: MHD_AccessHandlerCallback = { _, _, _, _, _, _, _, _ in MHD_NO }

    /// The certificate and key as C strings for libmicrohttpd, which keeps the pointers while its daemon runs; the
    /// key's copy is zeroed when freed.
    final class PEMStrings: @unchecked Sendable {
        // Invariant: written once in `init`, read only by libmicrohttpd while starting; freed in `deinit`, after the
        // owning `HTTPServer` stopped its daemon.
        let certificate: UnsafeMutablePointer<CChar>
        let key: UnsafeMutablePointer<CChar>
        private let keyCount: Int

        init(_ files: HTTPTLSFiles) {
            certificate = Self.cString(files.certificatePEM)
            key = Self.cString(files.keyPEM)
            keyCount = files.keyPEM.count + 1
        }

        private static func cString(_ bytes: [UInt8]) -> UnsafeMutablePointer<CChar> {
            let p = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            bytes.withUnsafeBytes { if let base = $0.baseAddress { UnsafeMutableRawPointer(p).copyMemory(from: base, byteCount: $0.count) } }
            p[bytes.count] = 0
            return p
        }

        deinit {
            certificate.deallocate()
            key.update(repeating: 0, count: keyCount)
            key.deallocate()
        }
    }
}
