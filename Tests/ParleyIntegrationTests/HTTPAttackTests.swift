import Foundation
import Testing

/// GET with curl, timed: (status, seconds).
func timedCurl(_ url: String, token: String? = nil) throws -> (status: Int, seconds: Double) {
    let start = Date()
    let status = try curl("GET", url, token: token).status
    return (status, Date().timeIntervalSince(start))
}

extension ProcessTests {
    /// The attacks of the HTTP API's security review, each against a real relay: what broke the API then must not now.
    @Suite("HTTP API under attack")
    struct HTTPAttackTests {
        @Test("1,100 idle connections from one address and a slowloris from another: /healthz and the API answer within a second, the relay starts no thread per connection, and it closes the idle ones and the slowloris")
        func idleConnectionsAndSlowloris() throws {
            let perAddress = 50, idleTimeout = 2.0
            let (relay, _) = try startRelay(environment: ["PARLEY_HTTP_CONNECTIONS_PER_ADDRESS": "\(perAddress)",
                                                          "PARLEY_HTTP_IDLE_TIMEOUT_S": "\(Int(idleTimeout))",
                                                          "PARLEY_HTTP_HEADER_TIMEOUT_S": "2"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let port = try #require(httpPort(of: relay))
            let base = "http://127.0.0.1:\(port)"
            let admin = try mint(["--admin", "--identity", "ops"])
            let pid = relay.process.processIdentifier
            #expect(try curl("GET", base + "/healthz").status == 200)
            let threadsBefore = processStatus(pid).threads

            // More idle connections from 127.0.0.2 than the 1,024 the relay once held in all, and a slowloris from
            // 127.0.0.3 that sends its headers a byte at a time.
            let idle = try (0..<1100).map { _ in try RawTCP(port: port, from: "127.0.0.2") }
            let slowloris = try RawTCP(port: port, from: "127.0.0.3")
            #expect(slowloris.send("GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Slow: "))

            // Probes from 127.0.0.1 while both hold: every one answers, in under a second. The slowloris sends a byte
            // between probes (~0.3 s apart), more often than the idle timeout.
            let start = Date()
            var probes = 0
            while Date().timeIntervalSince(start) < 3 {
                slowloris.send("x")
                let health = try timedCurl(base + "/healthz")
                #expect(health.status == 200 && health.seconds < 1, "/healthz: \(health.status) after \(health.seconds) s")
                let rooms = try timedCurl(base + "/v1/rooms", token: admin)
                #expect(rooms.status == 200 && rooms.seconds < 1, "/v1/rooms: \(rooms.status) after \(rooms.seconds) s")
                probes += 1
                Thread.sleep(forTimeInterval: 0.2)
            }
            #expect(probes >= 3)
            let during = processStatus(pid)
            #expect(during.threads <= threadsBefore + 4, "threads: \(threadsBefore) before, \(during.threads) with 1,101 connections")
            // One address holds at most its share; the rest were closed at once.
            #expect(idle.filter { !$0.closedByPeer }.count <= perAddress)
            // The idle ones are closed after the idle timeout; the slowloris, which never went quiet, at the header deadline.
            #expect(eventually(seconds: idleTimeout + 2) { idle.allSatisfy(\.closedByPeer) },
                    "\(idle.filter { !$0.closedByPeer }.count) idle connections still open")
            slowloris.send("x")
            #expect(eventually(seconds: 1) { slowloris.closedByPeer }, "the slowloris is still open after 3 s of headers")
            let metrics = try curl("GET", base + "/metrics").body
            #expect((metric(metrics, "parley_http_header_timeouts_total") ?? 0) >= 1)
            #expect(try curl("GET", base + "/healthz").status == 200)
        }

        @Test("an event-stream reader that stops reading is closed after the stall timeout and counted; a reader that reads stays, past the idle timeout")
        func stalledEventStream() throws {
            let (relay, _) = try startRelay(environment: ["PARLEY_EVENT_STREAM_STALL_TIMEOUT_S": "2", "PARLEY_HTTP_IDLE_TIMEOUT_S": "2",
                                                          "PARLEY_MAX_ROOMS": "2000"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let port = try #require(httpPort(of: relay))
            let base = "http://127.0.0.1:\(port)"
            let admin = try mint(["--admin", "--identity", "ops"])
            let reader = try Spawned(.curl, ["-sN", "--max-time", "60", "-H", "Authorization: Bearer \(admin)", base + "/v1/events"])
            defer { reader.signal(SIGTERM) }
            #expect(reader.waitFor(seconds: 5) { $0.contains(": parley events") })
            // The stalled reader: a 4 KB receive window, and it reads nothing after the opening comment.
            let stalled = try RawTCP(port: port, receiveBuffer: 4096)
            #expect(stalled.send("GET /v1/events HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer \(admin)\r\n\r\n"))
            #expect(stalled.read(seconds: 5) { $0.contains(": parley events") }.text.contains(": parley events"))

            // 1,200 events of ~300 bytes: far more than the stalled reader's window and the relay's send buffer.
            let api = try KeepAliveHTTP(port: port, token: admin)
            let rooms = 600
            for k in 0..<rooms {
                let name = "stall-\(k)-" + String(repeating: "x", count: 110)
                #expect(api.request("POST", "/v1/rooms", body: #"{"name":"\#(name)"}"#) == 201)
                #expect(api.request("DELETE", "/v1/rooms/\(name)") == 200)
            }
            #expect(reader.waitFor(seconds: 5) { $0.components(separatedBy: "event: room_closed").count - 1 == rooms })

            var metrics = ""
            let dropped = try eventually(seconds: 6) {
                metrics = try curl("GET", base + "/metrics").body
                return metric(metrics, "parley_http_event_streams_dropped_total") == 1
            }
            #expect(dropped, "\(metrics.split(separator: "\n").filter { $0.contains("parley_http") })")
            #expect(metric(metrics, "parley_http_event_streams") == 1)
            // Drained now, the stalled reader finds the stream ended.
            #expect(stalled.read(seconds: 5).eof)

            // The reader that reads outlives the idle timeout (it waits without a timer) and still gets what comes next.
            Thread.sleep(forTimeInterval: 3)
            #expect(try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"after-the-wait"}"#).status == 201)
            #expect(reader.waitFor(seconds: 3) { $0.contains(#""room":"after-the-wait""#) })
        }

        @Test("one member token's event-stream flood (64 from each of 16 addresses, all of http_max_connections) holds 4 streams; the rest are refused and closed; the API answers during it and at once after")
        func eventStreamFlood() throws {
            let (relay, _) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let port = try #require(httpPort(of: relay))
            let base = "http://127.0.0.1:\(port)"
            let admin = try mint(["--admin", "--identity", "ops"])
            let eve = try mint(["--identity", "eve", "--room", "lobby"])
            var flood: [RawTCP] = []
            for address in 0..<16 {
                for _ in 0..<64 {
                    let c = try RawTCP(port: port, from: "127.0.1.\(address + 1)")
                    c.send("GET /v1/rooms/lobby/events HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer \(eve)\r\n\r\n")
                    flood.append(c)
                }
            }
            // During: the backend's requests answer, every time, within 2 s even while the relay is still refusing the
            // flood's 1,020 requests on a loaded machine (before the fix they timed out).
            for _ in 0..<5 {
                let rooms = try timedCurl(base + "/v1/rooms", token: admin)
                #expect(rooms.status == 200 && rooms.seconds < 2, "/v1/rooms: \(rooms.status) after \(rooms.seconds) s")
                Thread.sleep(forTimeInterval: 0.2)
            }
            var metrics = ""
            #expect(try eventually(seconds: 5) {
                metrics = try curl("GET", base + "/metrics").body
                return metric(metrics, "parley_http_event_streams_refused_total") == 1020 && (metric(metrics, "parley_http_connections") ?? 99) <= 6
            }, "\(metrics.split(separator: "\n").filter { $0.contains("parley_http") })")
            #expect(metric(metrics, "parley_http_event_streams") == 4)
            // After: the attacker leaves; its four parked streams are noticed at once, not at their next keepalive.
            flood.removeAll()
            let left = Date()
            #expect(try eventually(seconds: 2) { metric(try curl("GET", base + "/metrics").body, "parley_http_event_streams") == 0 })
            #expect(Date().timeIntervalSince(left) < 2)
            let rooms = try timedCurl(base + "/v1/rooms", token: admin)
            #expect(rooms.status == 200 && rooms.seconds < 1)
        }

        @Test("with no keys configured, a relay on any interface but loopback refuses to start (exit 2, says why); --dev runs it, and says so")
        func devCredentialsOffLoopback() throws {
            for arguments in [["--udp", "127.0.0.1:0", "--http", "0.0.0.0:0"], ["--udp", "0.0.0.0:0", "--http", "127.0.0.1:0"]] {
                let refused = try Spawned("parley-relay", arguments + ["--workers", "1"])
                #expect(refused.wait(seconds: 10) == 2, "\(arguments): \(refused.stdout) \(refused.stderr)")
                #expect(refused.stderr.contains("not loopback") && refused.stderr.contains("--dev"), "\(refused.stderr)")
                #expect(!refused.stdout.contains("ready on udp"))
            }
            let relay = try Spawned("parley-relay", ["--udp", "127.0.0.1:0", "--http", "0.0.0.0:0", "--workers", "1", "--dev"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            #expect(relay.waitFor(seconds: 10) { $0.contains("ready on udp") }, "\(relay.stderr)")
            #expect(relay.waitForStderr(seconds: 2) { $0.contains("OFF LOOPBACK") }, "\(relay.stderr)")
        }

        @Test("/metrics needs the admin token from any address but loopback; metrics_require_auth=true asks it of loopback too")
        func metricsAuth() throws {
            let host = try #require(nonLoopbackIPv4(), "this test needs a non-loopback IPv4 address")
            let admin = try mint(["--admin", "--identity", "ops"])
            do {
                let relay = try Spawned("parley-relay", ["--udp", "127.0.0.1:0", "--http", "0.0.0.0:0", "--workers", "1", "--dev"])
                defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
                #expect(relay.waitFor(seconds: 10) { $0.contains("ready on udp") })
                let port = try #require(httpPort(of: relay))
                let remote = try curl("GET", "http://\(host):\(port)/metrics")
                #expect(remote.status == 401, "\(remote.body.prefix(200))")
                #expect(remote.body.utf8.count < 100, "an unauthenticated client gets \(remote.body.utf8.count) bytes")
                #expect(try curl("GET", "http://\(host):\(port)/metrics", token: admin).status == 200)
                #expect(try curl("GET", "http://127.0.0.1:\(port)/metrics").status == 200)
            }
            let (relay, _) = try startRelay(environment: ["PARLEY_METRICS_REQUIRE_AUTH": "true"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = "http://127.0.0.1:\(try #require(httpPort(of: relay)))"
            #expect(try curl("GET", base + "/metrics").status == 401)
            #expect(try curl("GET", base + "/metrics", token: admin).status == 200)
        }
    }
}
