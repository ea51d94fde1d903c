import Foundation
import Testing

extension ProcessTests {
    @Suite("Run as a service: SIGHUP rereads the settings under live members, SIGTERM drains, JSON logs")
    struct ServiceProcessTests {
        static let firstSecret = "first-secret-0123456789abcdef"
        static let secondSecret = "second-secret-0123456789abcdef"

        /// A relay reading `file` (settings on loopback, one worker).
        static func start(config file: String, arguments: [String] = []) throws -> (Spawned, String) {
            let relay = try Spawned(
                "parley-relay",
                [
                    "--config", file, "--udp", "127.0.0.1:0", "--http", "127.0.0.1:0",
                    "--workers", "1",
                ] + arguments)
            guard relay.waitFor(seconds: 10, { $0.contains("ready on udp") }),
                let line = relay.lines.first(where: { $0.contains("ready on udp") }),
                let address = line.split(separator: " ").drop(while: { $0 != "udp" }).dropFirst().first
            else {
                throw RelayDidNotStart(output: relay.stdout + relay.stderr)
            }
            return (relay, String(address))
        }

        /// `parley join` with the key pair `key`/`secret`, for `seconds`.
        static func join(
            _ room: String, _ identity: String, server: String, key: String, secret: String,
            seconds: Int = 3, speaks: Bool = false
        ) throws -> Spawned {
            try Spawned(
                "parley",
                [
                    "join", room, "--identity", identity, "--server", server, "--no-playback", "--no-tui",
                    "--duration", "\(seconds)",
                ] + (speaks ? ["--tone", "440"] : ["--listen-only"]),
                environment: ["PARLEY_API_KEY": key, "PARLEY_API_SECRET": secret])
        }

        /// A broken file, a key without its secret and a changed port are refused or kept, with the reason logged.
        @Test("SIGHUP: new keys and limits take effect while two members stay joined; bad files are refused")
        func reloadUnderLiveMembers() throws {
            let file = NSTemporaryDirectory() + "parley-reload-\(UUID().uuidString).json"
            defer { try? FileManager.default.removeItem(atPath: file) }
            func write(_ text: String) throws { try text.write(toFile: file, atomically: true, encoding: .utf8) }
            try write(#"{"api_keys": {"one": "\#(Self.firstSecret)"}, "log_level": "info"}"#)
            let (relay, server) = try Self.start(config: file)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "reload-\(UInt32.random(in: 0...UInt32.max))"
            let alice = try Self.join(
                room, "alice", server: server, key: "one", secret: Self.firstSecret, seconds: 14,
                speaks: true)
            let bob = try Self.join(room, "bob", server: server, key: "one", secret: Self.firstSecret, seconds: 14)
            #expect(bob.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(bob.stdout)\(bob.stderr)")
            #expect(alice.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(alice.stdout)\(alice.stderr)")

            // New keys, two members per room at most.
            try write(
                #"{"api_keys": {"two": "\#(Self.secondSecret)"}, "max_members_per_room": 2, "log_level": "info"}"#)
            relay.signal(SIGHUP)
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("reloaded: 1 API key") }, "\(relay.stderr)")
            let oldKey = try Self.join("other-room", "carol", server: server, key: "one", secret: Self.firstSecret)
            #expect(oldKey.wait(seconds: 10) == 3, "\(oldKey.stderr)")
            let full = try Self.join(room, "dave", server: server, key: "two", secret: Self.secondSecret)
            #expect(full.wait(seconds: 10) == 3, "\(full.stderr)")
            #expect(full.stderr.contains("full"), "\(full.stderr)")
            let newKey = try Self.join(
                "other-room", "erin", server: server, key: "two", secret: Self.secondSecret, seconds: 1)
            #expect(newKey.wait(seconds: 10) == 0, "\(newKey.stderr)")

            // A file that does not parse: refused, the running settings stay (the second key still joins).
            try write(#"{"api_keys": {"three": "\#(Self.secondSecret)"},,"#)
            relay.signal(SIGHUP)
            #expect(
                relay.waitForStderr(seconds: 5) {
                    $0.contains("reload refused, the running settings stay: config file \(file) is not valid JSON")
                }, "\(relay.stderr)")
            // A key without its secret: refused the same way.
            try write(#"{"api_key": "four"}"#)
            relay.signal(SIGHUP)
            #expect(
                relay.waitForStderr(seconds: 5) { $0.contains(#"api_key "four" is set without api_secret"#) },
                "\(relay.stderr)")
            let still = try Self.join(
                "other-room", "frank", server: server, key: "two", secret: Self.secondSecret,
                seconds: 1)
            #expect(still.wait(seconds: 10) == 0, "\(still.stderr)")
            // A changed socket setting: the rest applies, that one waits for the next start.
            try write(#"{"api_keys": {"two": "\#(Self.secondSecret)"}, "tcp": false, "log_level": "info"}"#)
            relay.signal(SIGHUP)
            #expect(
                relay.waitForStderr(seconds: 5) {
                    $0.contains("reload: tcp changed, which takes effect at the next start")
                },
                "\(relay.stderr)")

            // Through all of it both members stayed: each ends its 14 s and exits 0, never told to leave.
            #expect(alice.wait(seconds: 20) == 0, "\(alice.stderr)")
            #expect(bob.wait(seconds: 20) == 0, "\(bob.stderr)")
            for member in [alice, bob] {
                #expect(
                    !member.stderr.contains("removed") && !member.stderr.contains("going away")
                        && !member.stdout.contains("rejoin"), "\(member.stdout)\(member.stderr)")
            }
            #expect(relay.stderr.components(separatedBy: "left \(room)").count == 3, "\(relay.stderr)")  // at their end
        }

        @Test("SIGHUP with a renewed certificate: the new one is served at once, the old one no longer; a member stays")
        func renewedCertificate() throws {
            let first = try TestCertificate()
            defer { first.remove() }
            let renewed = try TestCertificate()
            defer { renewed.remove() }
            let file = NSTemporaryDirectory() + "parley-tls-\(UUID().uuidString).json"
            defer { try? FileManager.default.removeItem(atPath: file) }
            // The files the relay reads stay where they are; their contents change (as certbot renews behind a link).
            let served = first.directory + "/served"
            try FileManager.default.createDirectory(atPath: served, withIntermediateDirectories: true)
            func install(_ c: TestCertificate) throws {
                for (from, to) in [(c.certificate, served + "/cert.pem"), (c.key, served + "/key.pem")] {
                    try? FileManager.default.removeItem(atPath: to)
                    try FileManager.default.copyItem(atPath: from, toPath: to)
                    try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: to)
                }
            }
            try install(first)
            try #"{"http_tls_cert": "\#(served)/cert.pem", "http_tls_key": "\#(served)/key.pem"}"#
                .write(toFile: file, atomically: true, encoding: .utf8)
            let (relay, server) = try Self.start(config: file)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            #expect(try curl("GET", base + "/healthz", caCertificate: first.certificate).status == 200)
            #expect(try curl("GET", base + "/healthz", caCertificate: renewed.certificate).status == 0)
            let member = try Spawned(
                "parley",
                [
                    "join", "tls-reload", "--identity", "m", "--server", server, "--listen-only",
                    "--no-playback", "--no-tui", "--duration", "6",
                ])
            #expect(member.waitFor(seconds: 5) { $0.contains("joined tls-reload") }, "\(member.stdout)\(member.stderr)")

            try install(renewed)
            relay.signal(SIGHUP)
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("TLS new certificate served") }, "\(relay.stderr)")
            #expect(try curl("GET", base + "/healthz", caCertificate: renewed.certificate).status == 200)
            #expect(try curl("GET", base + "/healthz", caCertificate: first.certificate).status == 0)
            let admin = try mint(["--admin", "--identity", "ops"])
            #expect(try curl("GET", base + "/v1/rooms", token: admin, caCertificate: renewed.certificate).status == 200)
            #expect(member.wait(seconds: 10) == 0, "\(member.stderr)")

            // A key that is not the certificate's: refused, the renewed pair still served.
            try FileManager.default.removeItem(atPath: served + "/key.pem")
            try FileManager.default.copyItem(atPath: first.key, toPath: served + "/key.pem")
            relay.signal(SIGHUP)
            #expect(
                relay.waitForStderr(seconds: 5) { $0.contains("reload refused") && $0.contains("were refused") },
                "\(relay.stderr)")
            #expect(try curl("GET", base + "/healthz", caCertificate: renewed.certificate).status == 200)
        }

        /// A join's line names its room and identity; SIGTERM tells the member and exits 0.
        @Test("--log-format json: every line one JSON object with time, level, msg and node; SIGTERM drains")
        func jsonLogsAndStop() throws {
            let relay = try Spawned(
                "parley-relay",
                [
                    "--udp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "1",
                    "--log-format", "json", "--log-level", "info",
                ])
            defer { relay.signal(SIGKILL); relay.wait(seconds: 5) }
            guard relay.waitFor(seconds: 10, { $0.contains("ready on udp") }),
                let line = relay.lines.first(where: { $0.contains("ready on udp") }),
                let server = line.split(separator: " ").drop(while: { $0 != "udp" }).dropFirst().first
            else {
                throw RelayDidNotStart(output: relay.stdout + relay.stderr)
            }
            let member = try Spawned(
                "parley",
                [
                    "join", "json-room", "--identity", "jay", "--server", String(server),
                    "--listen-only", "--no-playback", "--no-tui", "--duration", "30",
                ])
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("jay joined json-room") }, "\(relay.stderr)")
            relay.signal(SIGTERM)
            #expect(relay.wait(seconds: 10) == 0)
            // The member is told (and would rejoin a restarted relay: it keeps trying until stopped).
            #expect(
                member.waitFor(seconds: 5) { $0.contains("the relay ended the session: the relay is shutting down") },
                "\(member.stdout)")
            member.signal(SIGINT)
            member.wait(seconds: 5)
            var joined = false
            for text in relay.stderr.split(separator: "\n") {
                let object = try #require(
                    try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String],
                    "not one JSON object: \(text)")
                #expect(
                    object["time"]?.hasSuffix("Z") == true && object["level"] != nil && object["msg"] != nil
                        && object["node"]?.isEmpty == false, "\(text)")
                if object["msg"]?.hasPrefix("jay joined json-room") == true {
                    joined = object["room"] == "json-room" && object["identity"] == "jay" && object["member"] != nil
                }
            }
            #expect(joined, "\(relay.stderr)")
            #expect(relay.stderr.contains("received SIGTERM: draining"), "\(relay.stderr)")
        }
    }
}
