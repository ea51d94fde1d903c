import Foundation
import Testing

/// Real processes on loopback: `parley-relay` and `parley join` test clients.
extension ProcessTests {
    @Suite("Relay and clients as real processes on loopback")
    struct RelayIntegrationTests {
        @Test("two speak, one listens: the listener gets exactly the two streams; a killed client is timed out and announced")
        func roomOfFour() throws {
            // A short member timeout, so dave's is seen within the clients' 7 s, with room for a client starved of CPU
            // for a moment by the tests running beside this one (with 2 s, alice once missed "carol left: left" in a
            // full run; not reproduced alone).
            let (relay, server) = try startRelay(environment: ["PARLEY_MEMBER_TIMEOUT_S": "4"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "it-\(UInt32.random(in: 0...UInt32.max))"
            let dave = try Spawned("parley", ["join", room, "--identity", "dave", "--server", server, "--duration", "30", "--listen-only", "--no-playback"])
            #expect(dave.waitFor(seconds: 5) { $0.contains("joined \(room)") })
            let alice = try Spawned("parley", ["join", room, "--identity", "alice", "--server", server, "--tone", "440", "--duration", "7", "--no-playback"])
            #expect(alice.waitFor(seconds: 5) { $0.contains("joined \(room)") })
            let bob = try Spawned("parley", ["join", room, "--identity", "bob", "--server", server, "--tone", "660",
                                             "--amplitude", "0.1", "--duration", "7", "--say", "hello from bob", "--no-playback"])
            #expect(alice.waitFor(seconds: 5) { $0.contains("joined \(room)") })
            #expect(bob.waitFor(seconds: 5) { $0.contains("joined \(room)") })
            let carol = try Spawned("parley", ["join", room, "--identity", "carol", "--server", server, "--listen-only",
                                               "--duration", "3", "--no-playback", "--verbose"])
            #expect(carol.waitFor(seconds: 5) { $0.contains("joined \(room)") })
            dave.signal(SIGKILL)  // no leave: the relay must notice the silence

            #expect(carol.wait(seconds: 10) == 0)
            let received = carol.lines.filter { $0.hasPrefix("received ssrc") }
            #expect(received.count == 2, "carol heard: \(received)")
            for who in ["alice", "bob"] {
                let line = received.first { $0.contains("from \(who):") } ?? ""
                let packets = Int(line.split(separator: " ").drop(while: { !$0.hasSuffix(":") }).dropFirst().first ?? "") ?? 0
                #expect(packets >= 100, "carol got \(packets) packets from \(who) in ~3 s (50/s sent)")
            }
            #expect(carol.stdout.contains("members: "))
            #expect(carol.stdout.contains("speaking: "))

            #expect(alice.waitFor(seconds: 8) { $0.contains("dave left: timed out") }, "alice saw: \(alice.stdout)")
            #expect(alice.stdout.contains("carol joined") && alice.stdout.contains("carol left: left"), "alice saw: \(alice.stdout)")
            #expect(alice.stdout.contains("text from bob: hello from bob"))
            #expect(bob.stdout.contains("delivered"))
            #expect(alice.wait(seconds: 10) == 0)
            #expect(bob.wait(seconds: 10) == 0)
            #expect(relay.stderr.contains("dave left \(room): timed out"))
            // The relay's key and the statistics at exit wait for --verbose (carol's).
            for quiet in [alice, bob] {
                let summary = ["relay key", "received ssrc", "longest gap"]
                #expect(summary.allSatisfy { !quiet.stdout.contains($0) }, "\(quiet.stdout)")
            }
            #expect(carol.stdout.contains("encrypted; relay key "), "\(carol.stdout)")
            #expect(carol.stdout.contains("longest gap between received packets"), "\(carol.stdout)")
        }

        @Test("mix mode: a listener receives one mixed stream at 50 packets a second while two members speak")
        func mixRoom() throws {
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "mix-\(UInt32.random(in: 0...UInt32.max))"
            let a = try Spawned("parley", ["join", room, "--mode", "mix", "--identity", "a", "--server", server,
                                           "--tone", "440", "--duration", "5", "--no-playback", "--verbose"])
            let b = try Spawned("parley", ["join", room, "--mode", "mix", "--identity", "b", "--server", server, "--tone", "700", "--duration", "5", "--no-playback"])
            #expect(a.waitFor(seconds: 5) { $0.contains("mode mix") })
            #expect(b.waitFor(seconds: 5) { $0.contains("mode mix") })
            let c = try Spawned("parley", ["join", room, "--identity", "c", "--server", server, "--listen-only",
                                           "--duration", "3", "--no-playback", "--verbose"])
            #expect(c.wait(seconds: 10) == 0)
            let received = c.lines.filter { $0.hasPrefix("received ssrc") }
            #expect(received.count == 1, "\(received)")
            let line = received.first ?? ""
            #expect(line.contains("from the room mix"))
            let packets = Int(line.split(separator: " ").drop(while: { !$0.hasSuffix(":") }).dropFirst().first ?? "") ?? 0
            #expect(packets >= 130, "\(packets) mixed packets in ~3 s")
            #expect(a.wait(seconds: 8) == 0 && b.wait(seconds: 8) == 0)
            // Each speaker hears a mix too (the other one), from the same mixer SSRC.
            #expect(a.lines.contains { $0.contains("from the room mix") })
        }

        @Test("hybrid mode: two speakers hear each other's own streams, a listen-only member one mixed stream")
        func hybridRoom() throws {
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "hybrid-\(UInt32.random(in: 0...UInt32.max))"
            let a = try Spawned("parley", ["join", room, "--mode", "hybrid", "--identity", "a", "--server", server,
                                           "--tone", "440", "--duration", "5", "--no-playback", "--verbose"])
            let b = try Spawned("parley", ["join", room, "--mode", "hybrid", "--identity", "b", "--server", server,
                                           "--tone", "700", "--duration", "5", "--no-playback", "--verbose"])
            #expect(a.waitFor(seconds: 5) { $0.contains("mode hybrid") })
            #expect(b.waitFor(seconds: 5) { $0.contains("mode hybrid") })
            let c = try Spawned("parley", ["join", room, "--identity", "c", "--server", server, "--listen-only",
                                           "--duration", "3", "--no-playback", "--verbose"])
            #expect(c.wait(seconds: 10) == 0)
            let heard = c.lines.filter { $0.hasPrefix("received ssrc") }
            #expect(heard.count == 1 && heard.first?.contains("from the room mix") == true, "\(heard)")
            let packets = Int(heard.first?.split(separator: " ").drop(while: { !$0.hasSuffix(":") }).dropFirst().first ?? "") ?? 0
            #expect(packets >= 130, "\(packets) mixed packets in ~3 s")
            #expect(a.wait(seconds: 8) == 0 && b.wait(seconds: 8) == 0)
            // The speakers hear each other by name (the speaker's own SSRC), and no mix.
            let aHeard = a.lines.filter { $0.hasPrefix("received ssrc") }, bHeard = b.lines.filter { $0.hasPrefix("received ssrc") }
            #expect(aHeard.count == 1 && aHeard.first?.contains("from b:") == true, "\(aHeard)")
            #expect(bHeard.count == 1 && bHeard.first?.contains("from a:") == true, "\(bHeard)")
        }

        @Test("SIGTERM: members are told the relay is going away, the relay exits 0, the client reconnects")
        func shutdown() throws {
            let (relay, server) = try startRelay(workers: 1)
            let alice = try Spawned("parley", ["join", "bye", "--identity", "alice", "--server", server, "--duration", "20", "--listen-only", "--no-playback"])
            #expect(alice.waitFor(seconds: 5) { $0.contains("joined bye") })
            relay.signal(SIGTERM)
            #expect(relay.wait(seconds: 5) == 0)
            // The client is told, then tries to come back by itself.
            #expect(alice.waitFor(seconds: 5) { $0.contains("reconnecting in 1 s") }, "\(alice.stdout)")
            #expect(alice.stdout.contains("the relay ended the session: the relay is shutting down"))
            // The test runner's threads block SIGINT and SIGTERM, and children inherit the mask: the client unblocks them.
            alice.signal(SIGINT)
            #expect(alice.wait(seconds: 5) == 0, "\(alice.stdout)\(alice.stderr)")
        }

        @Test("a refused token is shown with the relay's reason and a non-zero exit")
        func refusedToken() throws {
            let (relay, server) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let token = try Spawned("parley", ["token", "--identity", "mallory", "--room", "elsewhere"],
                                    environment: ["PARLEY_API_SECRET": "not-the-relays-secret-at-all"])
            #expect(token.wait(seconds: 5) == 0)
            let jwt = token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(jwt.split(separator: ".").count == 3)
            let join = try Spawned("parley", ["join", "elsewhere", "--identity", "mallory", "--server", server, "--token", jwt, "--listen-only", "--no-playback"])
            #expect(join.wait(seconds: 8) == 3)
            #expect(join.stderr.contains("refused"))
            #expect(join.stderr.contains("signature"))
        }

        @Test("a token minted for bob, used with --identity alice, is refused before anything is sent")
        func tokenForSomeoneElse() throws {
            let token = try Spawned("parley", ["token", "--identity", "bob", "--room", "lobby"])
            #expect(token.wait(seconds: 5) == 0)
            let jwt = token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            // No relay runs: the refusal must come from the client's own check, at once.
            for command in [["join", "lobby"], ["listen"]] {
                let client = try Spawned("parley", command + ["--identity", "alice", "--server", "127.0.0.1:9", "--token", jwt, "--no-tui"])
                #expect(client.wait(seconds: 5) == 2, "\(command): \(client.stderr)")
                #expect(client.stderr.contains("--token is for bob, not alice"), "\(client.stderr)")
            }
            let garbage = try Spawned("parley", ["join", "lobby", "--identity", "alice", "--server", "127.0.0.1:9", "--token", "not-a-jwt"])
            #expect(garbage.wait(seconds: 5) == 2)
            #expect(garbage.stderr.contains("--token is not a Parley token"))
        }

        @Test("bad command lines get one clear line and exit 2")
        func badArguments() throws {
            let relay = try Spawned("parley-relay", ["--udp", "nonsense"])
            #expect(relay.wait(seconds: 5) == 2)
            #expect(relay.stderr.contains("udp must be HOST:PORT"))
            let client = try Spawned("parley", ["join"])
            #expect(client.wait(seconds: 5) == 2)
            #expect(client.stderr.contains("join needs a ROOM"))
        }

        @Test("an API key without its secret (or a secret without its key) is a configuration error: the relay does not start")
        func keyWithoutSecret() throws {
            let keyOnly = try Spawned("parley-relay", ["--udp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--api-key", "prod"])
            #expect(keyOnly.wait(seconds: 5) == 2)
            #expect(keyOnly.stderr.contains("api_key \"prod\" is set without api_secret"), "\(keyOnly.stderr)")
            #expect(!keyOnly.stdout.contains("ready on"))
            let secretOnly = try Spawned("parley-relay", ["--udp", "127.0.0.1:0", "--http", "127.0.0.1:0"],
                                         environment: ["PARLEY_API_SECRET": "a-secret-of-enough-bytes"])
            #expect(secretOnly.wait(seconds: 5) == 2)
            #expect(secretOnly.stderr.contains("api_secret is set without api_key"), "\(secretOnly.stderr)")
        }

        @Test("a port in use is a failure to start (exit 1), not a usage error")
        func portInUse() throws {
            let (relay, server) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let second = try Spawned("parley-relay", ["--udp", server, "--http", "127.0.0.1:0", "--workers", "1"])
            #expect(second.wait(seconds: 5) == 1, "\(second.stderr)")
            #expect(second.stderr.split(separator: "\n").count == 1, "\(second.stderr)")
        }

        @Test("--version: both programs print one version, which the relay's ready line repeats")
        func version() throws {
            let client = try Spawned("parley", ["--version"])
            #expect(client.wait(seconds: 5) == 0)
            let relayVersion = try Spawned("parley-relay", ["--version"])
            #expect(relayVersion.wait(seconds: 5) == 0)
            let version = try #require(client.stdout.split(separator: " ").last).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(client.stdout == "parley \(version)\n")
            #expect(relayVersion.stdout == "parley-relay \(version)\n")
            let (relay, _) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            #expect(relay.lines.contains { $0.hasPrefix("parley-relay \(version) ready on udp") })
            let devices = try Spawned("parley", ["devices", "--help"])
            #expect(devices.wait(seconds: 5) == 0)
            #expect(devices.stdout.hasPrefix("usage: parley devices"))
            let help = try Spawned("parley", ["--help"])
            #expect(help.wait(seconds: 5) == 0)
            #expect(help.stdout.contains("exit codes:") && help.stdout.contains("PARLEY_API_KEY") && help.stdout.contains("PARLEY_URL"))
            let relayHelp = try Spawned("parley-relay", ["--help"])
            #expect(relayHelp.wait(seconds: 5) == 0)
            #expect(relayHelp.stdout.contains("127.0.0.1:7480") && relayHelp.stdout.contains("Samples/parley-relay.json"))
        }

        @Test("the ready line counts workers in good English and names the web page's address when it serves one")
        func readyLine() throws {
            let web = ExternalProgram.packageRoot + "/Samples/web"
            let (one, _) = try startRelay(workers: 1, environment: ["PARLEY_WEB_ROOT": web])
            defer { one.signal(SIGTERM); one.wait(seconds: 5) }
            let base = try #require(httpBase(of: one))
            let line = try #require(one.lines.first { $0.contains("ready on udp") })
            #expect(line.contains("(1 worker on port ") && !line.contains("workers"), "\(line)")
            #expect(line.contains("; web page: \(base)/; join with: parley join"), "\(line)")
            let (two, _) = try startRelay(workers: 2, environment: ["PARLEY_WEB_ROOT": ""])
            defer { two.signal(SIGTERM); two.wait(seconds: 5) }
            let second = try #require(two.lines.first { $0.contains("ready on udp") })
            #expect(second.contains("(2 workers on ports ") && !second.contains("web page"), "\(second)")
        }
    }
}

extension ProcessTests {
    /// The relay's long-term identity key (issue 15): made once in the state directory, shown, and named by tokens.
    @Suite("Relay identity key: in the ready line and at GET /v1/relay, the same after a restart, named by tokens")
    struct RelayIdentityProcessTests {
        static func relayKey(in relay: Spawned) -> String? {
            guard let line = relay.lines.first(where: { $0.contains("ready on udp") }),
                  let range = line.range(of: #"relay key [A-Za-z0-9_-]{43},"#, options: .regularExpression) else { return nil }
            return String(line[range].dropFirst("relay key ".count).dropLast())
        }

        @Test("the ready line shows the key; a restart on the same state directory shows the same key; another directory another key")
        func sameKeyAfterRestart() throws {
            let directory = NSTemporaryDirectory() + "parley-identity-\(getpid())-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var keys: [String] = []
            for _ in 0..<2 {
                let (relay, _) = try startRelay(workers: 1, environment: ["PARLEY_STATE_DIR": directory])
                keys.append(try #require(Self.relayKey(in: relay), "\(relay.stdout)"))
                // The API serves the same key, without a token.
                let answer = try curl("GET", try #require(httpBase(of: relay)) + "/v1/relay")
                #expect(answer.status == 200)
                #expect(answer.body.contains(#""public_key":"\#(keys.last!)""#), "\(answer.body)")
                relay.signal(SIGTERM)
                #expect(relay.wait(seconds: 5) == 0)
            }
            #expect(keys[0] == keys[1])
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/relay-key")
            #expect(attributes[.posixPermissions] as? Int == 0o600)
            #expect(attributes[.size] as? Int == 32)
            let (other, _) = try startRelay(workers: 1, environment: ["PARLEY_STATE_DIR": directory + "/other"])
            defer { other.signal(SIGTERM); other.wait(seconds: 5) }
            #expect(Self.relayKey(in: other) != keys[0])
        }

        @Test("a key file others may read is a configuration error (exit 2) naming the file; the relay does not start")
        func looseKeyFile() throws {
            let directory = NSTemporaryDirectory() + "parley-identity-\(getpid())-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            #expect(FileManager.default.createFile(atPath: directory + "/relay-key", contents: Data(repeating: 1, count: 32),
                                                   attributes: [.posixPermissions: 0o644]))
            let relay = try Spawned("parley-relay", ["--udp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--state-dir", directory])
            #expect(relay.wait(seconds: 5) == 2)
            #expect(relay.stderr.contains("\(directory)/relay-key may be read by group or others"), "\(relay.stderr)")
            #expect(!relay.stdout.contains("ready on"))
        }

        @Test("a token minted for another relay: the client refuses this relay (exit 11, the keys named); told to trust it anyway, the relay refuses the token (exit 3)")
        func tokenForAnotherRelay() throws {
            let (relay, server) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let ours = try #require(Self.relayKey(in: relay))
            let theirs = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
            // (token's relay key, --relay-key given, expected exit)
            for (key, pinned, exit) in [(theirs, nil, 11), (theirs, ours, 3), (ours, nil, 0)] as [(String, String?, Int32)] {
                let token = try Spawned("parley", ["token", "--identity", "alice", "--room", "lobby", "--relay-key", key])
                #expect(token.wait(seconds: 5) == 0)
                let jwt = token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                let client = try Spawned("parley", ["join", "lobby", "--identity", "alice", "--server", server, "--token", jwt,
                                                    "--no-tui", "--listen-only", "--no-playback", "--duration", "1",
                                                    "--verbose"]
                                                    + (pinned.map { ["--relay-key", $0] } ?? []))
                #expect(client.wait(seconds: 10) == exit, "\(client.stderr)")
                switch exit {
                case 11:
                    // The token pins their key; this relay presents ours: the client stops before the token leaves.
                    #expect(client.stderr.contains("presented key \(ours), not the expected \(theirs)"), "\(client.stderr)")
                case 3:
                    #expect(client.stderr.contains("token is for another relay"), "\(client.stderr)")
                default:
                    // The token pins this relay's key: the client says the relay proved it.
                    #expect(client.stdout.contains("encrypted; relay key \(ours) (proven, as expected)"), "\(client.stdout)")
                }
            }
            let bad = try Spawned("parley", ["token", "--identity", "alice", "--room", "lobby", "--relay-key", "short"])
            #expect(bad.wait(seconds: 5) == 2)
        }
    }
}
