import Foundation
import Testing

/// Debian's coturn for one test on loopback, configured as docs/operator-guide.md says (the authentication and peer
/// lines of its turnserver.conf: `use-auth-secret`, `static-auth-secret`, `realm`; peers denied but the relay's
/// address, here 127.0.0.1), with what only a test on one host needs on its command line: loopback listening and
/// relay addresses, peers on loopback allowed at all, no TLS, no CLI, its own user database, its log on stdout
/// (verbose: every allocation is logged).
struct TURNServer {
    let process: Spawned
    let port: UInt16

    /// The operator guide's turnserver.conf lines for `secret`, relaying only to `relayAddress`.
    static func configuration(secret: String, relayAddress: String) -> String {
        """
        use-auth-secret
        static-auth-secret=\(secret)
        realm=parley
        no-multicast-peers
        denied-peer-ip=0.0.0.0-255.255.255.255
        denied-peer-ip=::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff
        allowed-peer-ip=\(relayAddress)

        """
    }

    init(secret: String, directory: String) throws {
        let conf = directory + "/turnserver.conf"
        try Self.configuration(secret: secret, relayAddress: "127.0.0.1")
            .write(toFile: conf, atomically: true, encoding: .utf8)
        // Ports, not scores: a free port can be taken between the probe and coturn's bind; the next try is another port.
        for portTry in 0..<5 {
            let p = freeUDPPort()
            let s = try Spawned(.turnserver, ["-c", conf, "--listening-ip", "127.0.0.1", "--relay-ip", "127.0.0.1",
                                              "--listening-port", "\(p)", "--no-tls", "--no-dtls", "--no-cli",
                                              "--allow-loopback-peers", "--userdb", directory + "/turndb-\(portTry)",
                                              "--pidfile", directory + "/turnserver.pid", "--log-file", "stdout",
                                              "--simple-log", "--verbose"])
            // Ready once its UDP listener is bound (it prints nothing of its own for that).
            if eventually(seconds: 5, { !s.process.isRunning || udpPortIsBound(p) }), s.process.isRunning {
                process = s
                port = p
                return
            }
            s.signal(SIGKILL)
            s.wait(seconds: 2)
        }
        throw RelayDidNotStart(output: "turnserver did not start")
    }

    func stop() {
        process.signal(SIGTERM)
        process.wait(seconds: 5)
    }
}

/// `base64(HMAC-SHA1(secret, username))` by the openssl command line: the TURN REST credential computed outside Parley.
func opensslTURNCredential(secret: String, username: String) throws -> String {
    let p = Process()
    p.executableURL = try ExternalProgram.openssl.url()
    p.arguments = ["dgst", "-sha1", "-hmac", secret, "-binary"]
    let input = Pipe(), output = Pipe()
    p.standardInput = input
    p.standardOutput = output
    try p.run()
    input.fileHandleForWriting.write(Data(username.utf8))
    try input.fileHandleForWriting.close()
    let mac = output.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return mac.base64EncodedString()
}

extension ProcessTests {
    /// TURN with a real server: the relay shares coturn's `static-auth-secret` and hands out time-limited credentials
    /// (`GET /v1/ice-servers`); coturn takes them for an allocation, and refuses them altered, expired or signed
    /// with another secret.
    @Suite("TURN: credentials the relay hands out open allocations on Debian's coturn")
    struct TURNProcessTests {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-turn-\(UInt32.random(in: 0...UInt32.max))").path
        /// A fresh secret per run, as an operator would make one (`openssl rand -hex 24`).
        let secret = (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()

        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        /// The relay's environment for `turn`: the URL of its UDP listener, the secret from a file (as the operator
        /// guide says: not on the command line), credentials for 600 s.
        func relayEnvironment(_ turn: TURNServer) throws -> [String: String] {
            let file = dir + "/turn-secret"
            try (secret + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            return ["PARLEY_TURN_URLS": "turn:127.0.0.1:\(turn.port)?transport=udp", "PARLEY_TURN_SECRET_FILE": file,
                    "PARLEY_TURN_TTL_S": "600"]
        }

        /// turnutils_uclient with `username` and `password` against `turn`: an allocation, then a few messages
        /// between two of its clients through the relay addresses (-y). Its exit status and what it printed.
        /// `peer`: send to that address instead (-e), through a permission and a channel the server must grant.
        func allocate(_ turn: TURNServer, username: String, password: String,
                      peer: String? = nil) throws -> (status: Int32, output: String) {
            let target = peer.map { ["-e", $0] } ?? ["-y"]
            let client = try Spawned(.turnutilsUclient, target + ["-n", "2", "-u", username, "-w", password,
                                                                  "-p", "\(turn.port)", "127.0.0.1"])
            let status = client.wait(seconds: 30)
            return (status, client.stdout + client.stderr)
        }

        @Test("""
              a member token's credential from GET /v1/ice-servers (EXPIRY:IDENTITY, expiring in turn_ttl_s) opens an \
              allocation that carries data; openssl computes the same credential; altered, expired or foreign ones \
              are refused; no peer but the relay is reachable
              """)
        func credentialsOpenAllocations() throws {
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let turn = try TURNServer(secret: secret, directory: dir)
            defer { turn.stop() }
            let (relay, _) = try startRelay(workers: 1, environment: try relayEnvironment(turn))
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay), "\(relay.stdout)")
            let token = try mint(["--identity", "ann", "--room", "r"])

            let before = Int64(Date().timeIntervalSince1970)
            let answer = try curl("GET", base + "/v1/ice-servers", token: token)
            let after = Int64(Date().timeIntervalSince1970)
            #expect(answer.status == 200, "\(answer.body)")
            let servers = try #require(jsonObject(answer.body)["ice_servers"] as? [[String: Any]], "\(answer.body)")
            let entry = try #require(servers.first)
            #expect(servers.count == 1 && entry["urls"] as? [String] == ["turn:127.0.0.1:\(turn.port)?transport=udp"],
                    "\(answer.body)")
            let username = try #require(entry["username"] as? String)
            let password = try #require(entry["credential"] as? String)
            let parts = username.split(separator: ":", maxSplits: 1)
            let expiry = try #require(Int64(parts[0]))
            #expect(parts.count == 2 && parts[1] == "ann", "\(username)")
            #expect((before + 600...after + 600).contains(expiry),
                    "expiry \(expiry), asked between \(before) and \(after)")
            #expect(password == (try opensslTURNCredential(secret: secret, username: username)))
            #expect(!answer.body.contains(secret))

            // coturn takes them: an allocation, and data between two clients through their relay addresses.
            let good = try allocate(turn, username: username, password: password)
            #expect(good.status == 0, "\(good.output)\n\(turn.process.stdout.suffix(3000))")
            #expect(good.output.contains("tot_recv_msgs") && !good.output.contains("Cannot complete Allocation"),
                    "\(good.output)")
            #expect(turn.process.stdout.contains("<\(username)>"),
                    "coturn did not log the user:\n\(turn.process.stdout.suffix(3000))")

            // And refuses what the relay did not sign: another identity under the same password, an expired
            // username signed with the right secret, a password from another secret.
            let expired = "\(before - 60):ann"
            let refusals = [
                ("another identity", "\(expiry):bob", password),
                ("expired", expired, try opensslTURNCredential(secret: secret, username: expired)),
                ("another secret", username,
                 try opensslTURNCredential(secret: "another-shared-secret-0123456789", username: username)),
            ]
            for (why, user, pass) in refusals {
                let refused = try allocate(turn, username: user, password: pass)
                #expect(refused.status != 0 && refused.output.contains("Cannot complete Allocation"),
                        "\(why): \(refused.output)")
            }
            // The server relays to the relay's address only: good credentials do not open a way to anywhere else.
            let elsewhere = try allocate(turn, username: username, password: password, peer: "192.0.2.1")
            #expect(elsewhere.status != 0 && elsewhere.output.contains("403"), "\(elsewhere.output)")
            #expect(turn.process.stdout.contains("Forbidden IP"), "\(turn.process.stdout.suffix(3000))")
            // The secret never left the relay: not in its log, nor in the ready line.
            relay.signal(SIGTERM)
            relay.wait(seconds: 5)
            #expect(!relay.stdout.contains(secret) && !relay.stderr.contains(secret))
            #expect(relay.stderr.contains("TURN credentials valid 600 s"), "\(relay.stderr)")
        }

        @Test("""
              Chromium with iceTransportPolicy "relay" (the sample page's &relay=1) hears a parley join through \
              coturn: its candidate pair's local side is a TURN relay candidate, allocated with the credentials the \
              page got
              """)
        func browserThroughTURN() throws {
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let turn = try TURNServer(secret: secret, directory: dir)
            defer { turn.stop() }
            var environment = try relayEnvironment(turn)
            environment["PARLEY_WEB_ROOT"] = ProcessTests.BrowserTests.webRoot
            let (relay, server) = try startRelay(environment: environment)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay), "\(relay.stdout)")
            let room = "turn-\(UInt32.random(in: 0...UInt32.max))"
            let token = try mint(["--identity", "web", "--room", room])
            let speaker = try Spawned("parley", ["join", room, "--identity", "tone", "--server", server,
                                                 "--tone", "660", "--mode", "forward", "--no-playback", "--no-tui",
                                                 "--duration", "14"])
            defer { speaker.signal(SIGINT); speaker.wait(seconds: 5) }
            #expect(speaker.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(speaker.stdout)\(speaker.stderr)")
            let browser = try Browser(base: base, room: room, token: token, listen: true, seconds: 6, fakeAudio: nil,
                                      profile: "\(dir)/chromium", query: "&relay=1")
            defer { browser.stop() }
            let result = try #require(browser.result(seconds: 25), """
                no result from the page:
                \(browser.log)
                \(relay.stderr)
                \(turn.process.stdout.suffix(3000))
                """)
            #expect(result["state"] as? String == "connected", "\(result)")
            #expect(result["localCandidateType"] as? String == "relay" && result["relayProtocol"] as? String == "udp",
                    "\(result)")
            #expect((result["packetsReceived"] as? Int ?? 0) > 200, "\(result)")
            #expect((result["maxAudioLevel"] as? Double ?? 0) > 0.01, "\(result)")
            // coturn allocated for the page's identity, with a username the relay signed (EXPIRY:web).
            let allocated = #"user <[0-9]+:web>: incoming packet ALLOCATE processed, success"#
            #expect(turn.process.stdout.range(of: allocated, options: .regularExpression) != nil,
                    "\(turn.process.stdout.suffix(3000))")
        }
    }
}
