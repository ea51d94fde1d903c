import Foundation
import Testing

/// A self-signed certificate for 127.0.0.1 and its key (P-256), made by openssl in a fresh directory; `remove()` deletes it.
struct TestCertificate {
    let directory: String
    var certificate: String { directory + "/cert.pem" }
    var key: String { directory + "/key.pem" }

    init(name: String = "cert") throws {
        directory = NSTemporaryDirectory() + "parley-https-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let openssl = try Spawned(.openssl, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                             "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem", "-days", "2",
                                             "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
        guard openssl.wait(seconds: 20) == 0, FileManager.default.fileExists(atPath: directory + "/cert.pem") else {
            throw OpenSSLFailed(output: openssl.stderr)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory + "/key.pem")
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

struct OpenSSLFailed: Error { var output: String }

extension ProcessTests {
    @Suite("HTTPS: the API over libmicrohttpd's TLS with a certificate made by openssl, checked by curl")
    struct HTTPSIntegrationTests {
        @Test("with a certificate and key the ready line says https; curl trusting the certificate gets answers, plain http and an untrusting curl get none")
        func servesHTTPS() throws {
            let tls = try TestCertificate()
            defer { tls.remove() }
            let (relay, _) = try startRelay(workers: 1, environment: ["PARLEY_HTTP_TLS_CERT": tls.certificate, "PARLEY_HTTP_TLS_KEY": tls.key])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let line = try #require(relay.lines.first { $0.contains("ready on udp") })
            #expect(line.contains(", https 127.0.0.1:") && !line.contains(", http 127.0.0.1:"), "\(line)")
            let base = try #require(httpBase(of: relay))
            #expect(base.hasPrefix("https://127.0.0.1:"))
            let port = try #require(httpPort(of: relay))

            // Over TLS, the certificate trusted: the relay's key, the same as in the ready line.
            let relayKey = try #require(RelayIdentityProcessTests.relayKey(in: relay))
            let answer = try curl("GET", base + "/v1/relay", caCertificate: tls.certificate)
            #expect(answer.status == 200)
            #expect(answer.body.contains(#""public_key":"\#(relayKey)""#), "\(answer.body)")
            // A request that goes through an API thread (the connection suspended and resumed under TLS).
            let admin = try mint(["--admin", "--identity", "ops"])
            #expect(try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"tls-room"}"#, caCertificate: tls.certificate).status == 201)
            let rooms = try curl("GET", base + "/v1/rooms", token: admin, caCertificate: tls.certificate)
            #expect(rooms.status == 200 && rooms.body.contains(#""name":"tls-room""#), "\(rooms.body)")

            // Not trusting the certificate: no answer (curl verifies it against the system's CAs).
            let untrusted = try curl("GET", base + "/v1/relay")
            #expect(untrusted.status == 0 && !untrusted.body.contains("public_key"))
            // Plain HTTP to the same port: no HTTP answer at all.
            let plain = try curl("GET", "http://127.0.0.1:\(port)/v1/relay")
            #expect(plain.status == 0 && plain.body.isEmpty, "\(plain)")

            // The relay is unharmed by those, and its key file gave no warning.
            #expect(try curl("GET", base + "/healthz", caCertificate: tls.certificate).status == 200)
            #expect(!relay.stderr.contains("http_tls_key"), "\(relay.stderr)")
        }

        @Test("parley's API commands over https: a certificate the system does not trust is a clear failure to reach the relay (exit 5)")
        func clientRefusesAnUntrustedCertificate() throws {
            let tls = try TestCertificate()
            defer { tls.remove() }
            let (relay, _) = try startRelay(workers: 1, environment: ["PARLEY_HTTP_TLS_CERT": tls.certificate, "PARLEY_HTTP_TLS_KEY": tls.key])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let client = try Spawned("parley", ["rooms", "list"], environment: ["PARLEY_URL": base])
            #expect(client.wait(seconds: 10) == 5, "\(client.stderr)")
            #expect(client.stderr.contains("cannot reach the relay at \(base)"), "\(client.stderr)")
            #expect(client.stderr.lowercased().contains("certificate"), "\(client.stderr)")
        }

        @Test("a key that is not the certificate's, a key others may read, half a pair: configuration errors (exit 2); a group-readable key: a warning")
        func refusals() throws {
            let tls = try TestCertificate()
            defer { tls.remove() }
            let other = try TestCertificate()
            defer { other.remove() }
            func start(_ certificate: String?, _ key: String?) throws -> Spawned {
                var arguments = ["--udp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "1"]
                if let certificate { arguments += ["--http-tls-cert", certificate] }
                if let key { arguments += ["--http-tls-key", key] }
                return try Spawned("parley-relay", arguments)
            }
            let mismatched = try start(tls.certificate, other.key)
            #expect(mismatched.wait(seconds: 5) == 2)
            #expect(mismatched.stderr.contains("http_tls_cert \(tls.certificate) and http_tls_key \(other.key) were refused"), "\(mismatched.stderr)")
            #expect(mismatched.stderr.contains("do not match"), "\(mismatched.stderr)")
            #expect(!mismatched.stdout.contains("ready on"))

            let certificateOnly = try start(tls.certificate, nil)
            #expect(certificateOnly.wait(seconds: 5) == 2)
            #expect(certificateOnly.stderr.contains("is set without http_tls_key"), "\(certificateOnly.stderr)")

            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: tls.key)
            let loose = try start(tls.certificate, tls.key)
            #expect(loose.wait(seconds: 5) == 2)
            #expect(loose.stderr.contains("http_tls_key \(tls.key) may be read by anyone (mode 0644)"), "\(loose.stderr)")

            try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: tls.key)
            let group = try start(tls.certificate, tls.key)
            defer { group.signal(SIGTERM); group.wait(seconds: 5) }
            #expect(group.waitFor(seconds: 10) { $0.contains("ready on udp") }, "\(group.stderr)")
            #expect(group.stderr.contains("warning http_tls_key \(tls.key) may be read by its group (mode 0640)"), "\(group.stderr)")
        }
    }
}
