import Foundation
import ParleyRelay
import ParleyTestSupport
import Testing

/// The HTTP API's TLS settings: a certificate and a key come together, and their files are checked before the relay
/// starts. (Whether GnuTLS takes a real pair is `HTTPSIntegrationTests`' part: it makes one with openssl.)
@Suite("http_tls_cert and http_tls_key: both or neither; files that are missing, not PEM, or a key others may read are refused")
struct HTTPTLSFilesTests {
    // Blocks of the right shape; their content is GnuTLS's business, not `HTTPTLSFiles`'.
    static let certificate = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
    static let key = "-----BEGIN PRIVATE KEY-----\nMC4Cfake\n-----END PRIVATE KEY-----\n"

    /// A scratch directory holding `cert.pem` (0644) and `key.pem` (0600) with the given texts.
    static func files(certificate: String = certificate, key: String = key, keyMode: Int = 0o600) throws -> (ScratchDirectory, cert: String, key: String) {
        let scratch = ScratchDirectory()
        try FileManager.default.createDirectory(atPath: scratch.path, withIntermediateDirectories: true)
        let cert = scratch.path + "/cert.pem", keyPath = scratch.path + "/key.pem"
        #expect(FileManager.default.createFile(atPath: cert, contents: Data(certificate.utf8), attributes: [.posixPermissions: 0o644]))
        #expect(FileManager.default.createFile(atPath: keyPath, contents: Data(key.utf8), attributes: [.posixPermissions: keyMode]))
        return (scratch, cert, keyPath)
    }

    static func refusal(_ certificate: String, _ key: String) -> String? {
        do {
            _ = try HTTPTLSFiles.read(certificate: certificate, key: key)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("neither set: plain HTTP, nothing to read; both set: accepted by the pair check, from flags, file or environment")
    func bothOrNeither() throws {
        let plain = RelayConfig()
        try plain.checkCredentials()
        #expect(try plain.readHTTPTLSFiles() == nil)
        var both = RelayConfig()
        try both.load(environment: ["PARLEY_HTTP_TLS_CERT": "/etc/c.pem", "PARLEY_HTTP_TLS_KEY": "/etc/k.pem"])
        try both.checkCredentials()
        #expect(both.httpTLSCertificate == "/etc/c.pem" && both.httpTLSKey == "/etc/k.pem")
        // An empty value is "not set" (what Samples/parley-relay.json holds): a later source can turn HTTPS off.
        try both.set("http_tls_cert", "")
        try both.set("http_tls_key", "")
        try both.checkCredentials()
        #expect(both.httpTLSCertificate == nil && both.httpTLSKey == nil)
    }

    @Test("a certificate without its key, or a key without its certificate, is a configuration error naming both settings",
          arguments: [("http_tls_cert", "http_tls_key"), ("http_tls_key", "http_tls_cert")])
    func halfAPair(given: String, missing: String) throws {
        var c = RelayConfig()
        try c.set(given, "/etc/parley/tls.pem")
        do {
            try c.checkCredentials()
            Issue.record("half a TLS pair was accepted")
        } catch {
            #expect(error.description.contains("\(given) /etc/parley/tls.pem is set without \(missing)"), "\(error)")
            #expect(error.description.contains("--http-tls-cert FILE --http-tls-key FILE"))
        }
    }

    @Test("a path with a NUL byte is refused when set")
    func nulInPath() {
        var c = RelayConfig()
        #expect(throws: ConfigError.self) { try c.set("http_tls_key", "/etc/k\0.pem") }
    }

    @Test("well-formed files are read as they are; a key only its owner may read gives no warning")
    func wellFormed() throws {
        let (scratch, cert, key) = try Self.files()
        defer { scratch.remove() }
        var c = RelayConfig()
        try c.set("http_tls_cert", cert)
        try c.set("http_tls_key", key)
        let files = try #require(try c.readHTTPTLSFiles())
        #expect(files.certificatePEM == Array(Self.certificate.utf8))
        #expect(files.keyPEM == Array(Self.key.utf8))
        #expect(files.certificatePath == cert && files.keyPath == key)
        #expect(files.warnings.isEmpty)
    }

    @Test("a missing file is named with its setting")
    func missingFile() throws {
        let (scratch, cert, key) = try Self.files()
        defer { scratch.remove() }
        #expect(Self.refusal(scratch.path + "/none.pem", key) == "http_tls_cert \(scratch.path)/none.pem does not exist")
        #expect(Self.refusal(cert, scratch.path + "/none.pem") == "http_tls_key \(scratch.path)/none.pem does not exist")
        #expect(Self.refusal(cert, scratch.path)?.contains("http_tls_key \(scratch.path) is not a regular file") == true)
    }

    @Test("texts that are not the PEM asked for are refused, saying what is wrong", arguments: [
        // (certificate text, key text, the setting named, what the refusal says)
        ("", HTTPTLSFilesTests.key, "http_tls_cert", "is empty"),
        ("not pem", HTTPTLSFilesTests.key, "http_tls_cert", "is not a PEM certificate"),
        (HTTPTLSFilesTests.key, HTTPTLSFilesTests.key, "http_tls_cert", "is not a PEM certificate"),
        (HTTPTLSFilesTests.certificate, HTTPTLSFilesTests.certificate, "http_tls_key", "(it holds a certificate: are http_tls_cert and http_tls_key swapped?)"),
        (HTTPTLSFilesTests.certificate, "-----BEGIN PUBLIC KEY-----\nMC4C\n-----END PUBLIC KEY-----\n", "http_tls_key", "is not a PEM private key"),
        (HTTPTLSFilesTests.certificate, "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMC4C\n-----END ENCRYPTED PRIVATE KEY-----\n", "http_tls_key", "is encrypted with a passphrase"),
        (HTTPTLSFilesTests.certificate, "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n-----END RSA PRIVATE KEY-----\n", "http_tls_key", "is encrypted with a passphrase"),
        (HTTPTLSFilesTests.certificate, HTTPTLSFilesTests.key + "\0", "http_tls_key", "holds a NUL byte"),
    ])
    func notPEM(certificate: String, key: String, setting: String, says: String) throws {
        let (scratch, cert, keyPath) = try Self.files(certificate: certificate, key: key)
        defer { scratch.remove() }
        let refusal = try #require(Self.refusal(cert, keyPath))
        #expect(refusal.hasPrefix(setting + " "), "\(refusal)")
        #expect(refusal.contains(says), "\(refusal)")
    }

    @Test("RSA and EC keys in their own PEM blocks are taken", arguments: ["RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY"])
    func keyKinds(block: String) throws {
        let (scratch, cert, key) = try Self.files(key: "-----BEGIN \(block)-----\nMC4C\n-----END \(block)-----\n")
        defer { scratch.remove() }
        #expect(Self.refusal(cert, key) == nil)
    }

    @Test("a key file others may read is refused; one its group may read is taken with a warning", arguments: [
        (0o644, "refused"), (0o604, "refused"), (0o640, "warned"), (0o440, "warned"), (0o600, "quiet"), (0o400, "quiet"),
    ])
    func keyPermissions(mode: Int, outcome: String) throws {
        let (scratch, cert, key) = try Self.files(keyMode: mode)
        defer { scratch.remove() }
        #expect(scratch.mode(key) == mode)
        switch outcome {
        case "refused":
            let refusal = try #require(Self.refusal(cert, key))
            #expect(refusal.contains("http_tls_key \(key) may be read by anyone (mode 0\(String(mode, radix: 8)))"), "\(refusal)")
            #expect(refusal.contains("chmod 600 \(key)"))
        default:
            let files = try HTTPTLSFiles.read(certificate: cert, key: key)
            #expect(files.warnings.count == (outcome == "warned" ? 1 : 0))
            #expect(files.warnings.allSatisfy { $0.contains("http_tls_key \(key) may be read by its group") })
        }
    }

    @Test("symbolic links are followed (certbot's live/ files are links), and the target's mode is the one checked")
    func symbolicLinks() throws {
        let (scratch, cert, key) = try Self.files()
        defer { scratch.remove() }
        try FileManager.default.createSymbolicLink(atPath: scratch.path + "/live-cert.pem", withDestinationPath: cert)
        try FileManager.default.createSymbolicLink(atPath: scratch.path + "/live-key.pem", withDestinationPath: key)
        let files = try HTTPTLSFiles.read(certificate: scratch.path + "/live-cert.pem", key: scratch.path + "/live-key.pem")
        #expect(files.keyPEM == Array(Self.key.utf8) && files.warnings.isEmpty)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key)
        #expect(Self.refusal(scratch.path + "/live-cert.pem", scratch.path + "/live-key.pem")?.contains("may be read by anyone") == true)
    }
}
