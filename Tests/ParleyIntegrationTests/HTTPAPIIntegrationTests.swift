import Foundation
import Testing

/// The API's base URL a relay started by `startRelay` reported ("http 127.0.0.1:PORT", or "https 127.0.0.1:PORT"
/// with a TLS certificate, in its ready line): "http://127.0.0.1:PORT" or "https://127.0.0.1:PORT".
func httpBase(of relay: Spawned) -> String? {
    guard let line = relay.lines.first(where: { $0.contains("ready on udp") }),
          let range = line.range(of: #"https? 127\.0\.0\.1:[0-9]+"#, options: .regularExpression) else { return nil }
    let found = line[range].split(separator: " ")
    return "\(found[0])://\(found[1])"
}

/// Runs curl as a user would; returns (status, body). `caCertificate`: the PEM file curl trusts for https (`--cacert`);
/// status 0 when no HTTP answer came (refused, reset, or a TLS failure).
@discardableResult
func curl(_ method: String, _ url: String, token: String? = nil, body: String? = nil,
          caCertificate: String? = nil) throws -> (status: Int, body: String) {
    let p = Process()
    p.executableURL = try ExternalProgram.curl.url()
    var args = ["-s", "-X", method, "-w", "\n%{http_code}", "--max-time", "5", url]
    if let caCertificate { args += ["--cacert", caCertificate] }
    if let token { args += ["-H", "Authorization: Bearer \(token)"] }
    if let body { args += ["-H", "Content-Type: application/json", "--data-binary", body] }
    p.arguments = args
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    let status = Int(text.split(separator: "\n").last ?? "") ?? 0
    return (status, text.split(separator: "\n").dropLast().joined(separator: "\n"))
}

func mint(_ arguments: [String]) throws -> String {
    let t = try Spawned("parley", ["token"] + arguments)
    t.wait(seconds: 5)
    return t.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

extension ProcessTests {
    @Suite("HTTP API with a real relay and curl")
    struct HTTPAPIIntegrationTests {
        @Test("auth 401/403, create/list/get/delete rooms, healthz, metrics as Prometheus text")
        func roomsAndAuth() throws {
            let (relay, _) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay), "\(relay.stdout)")
            let admin = try mint(["--admin", "--identity", "ops"])
            let user = try mint(["--identity", "u", "--room", "x"])

            #expect(try curl("GET", base + "/healthz").status == 200)
            let missing = try curl("GET", base + "/v1/rooms")
            #expect(missing.status == 401 && missing.body.contains(#""code":"unauthorized""#))
            #expect(try curl("GET", base + "/v1/rooms", token: "garbage").status == 401)
            #expect(try curl("GET", base + "/v1/rooms", token: user).status == 403)

            for k in 0..<5 { #expect(try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"r\#(k)","mode":"mix"}"#).status == 201) }
            #expect(try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"r0"}"#).status == 409)
            #expect(try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"#).status == 400)
            let list = try curl("GET", base + "/v1/rooms", token: admin)
            #expect((0..<5).allSatisfy { list.body.contains(#""name":"r\#($0)""#) }, "\(list.body)")
            #expect(try curl("GET", base + "/v1/rooms/r3", token: admin).body.contains(#""mode":"mix""#))
            #expect(try curl("DELETE", base + "/v1/rooms/r3", token: admin).status == 200)
            #expect(try curl("GET", base + "/v1/rooms/r3", token: admin).status == 404)

            let metrics = try curl("GET", base + "/metrics")
            #expect(metrics.status == 200)
            for family in ["parley_rooms", "parley_members", "parley_packets_in_total", "parley_bytes_in_total", "parley_packets_out_total",
                           "parley_bytes_out_total", "parley_drops_total", "parley_nacks_answered_total", "parley_joins_refused_total",
                           "parley_signalling_retransmissions_total", "parley_worker_busy_seconds_total", "parley_mix_seconds",
                           "parley_packets_queued_total", "parley_send_failures_total", "parley_send_queue_drops_total",
                           "parley_receive_failures_total"] {
                #expect(metrics.body.contains("# TYPE \(family) "), "\(family)")
            }
            #expect(metrics.body.contains("parley_rooms 4\n"))
            for line in metrics.body.split(separator: "\n") where !line.hasPrefix("#") {
                #expect(line.split(separator: " ").count == 2 && Double(line.split(separator: " ")[1]) != nil, "\(line)")
            }
        }

        @Test("a real client is listed, muted (the room sees it), sent a text and kicked (it is told why); the event stream shows the join")
        func membersMuteKickEvents() throws {
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let admin = try mint(["--admin", "--identity", "ops"])
            let events = try Spawned(.curl, ["-sN", "--max-time", "12", "-H", "Authorization: Bearer \(admin)", base + "/v1/events"])
            defer { events.signal(SIGTERM) }
            // The stream opens with a comment line: once curl printed it, the reader is registered.
            #expect(events.waitFor(seconds: 5) { $0.contains(": parley events") }, "\(events.stdout)")
            let room = "api-\(UInt32.random(in: 0...UInt32.max))"
            let alice = try Spawned("parley", ["join", room, "--identity", "alice", "--server", server, "--listen-only", "--no-playback", "--no-tui", "--duration", "10"])
            let bob = try Spawned("parley", ["join", room, "--identity", "bob", "--server", server, "--tone", "440", "--no-playback", "--no-tui", "--duration", "10"])
            #expect(alice.waitFor(seconds: 5) { $0.contains("bob joined") || $0.contains("members: bob") })
            #expect(bob.waitFor(seconds: 5) { $0.contains("joined \(room)") })
            // API reads come from snapshots up to 200 ms old: ask until both show (or the deadline passes).
            var members = (status: 0, body: "")
            let listed = try eventually(seconds: 3) {
                members = try curl("GET", base + "/v1/rooms/\(room)/members", token: admin)
                return members.status == 200 && members.body.contains(#""identity":"alice""#) && members.body.contains(#""identity":"bob""#)
            }
            #expect(listed, "\(members.body)")
            // In pages: the query reaches the route through libmicrohttpd.
            let first = try curl("GET", base + "/v1/rooms/\(room)/members?limit=1", token: admin)
            let named = [#""identity":"alice""#, #""identity":"bob""#].filter { first.body.contains($0) }
            #expect(first.status == 200 && named.count == 1, "\(first.body)")  // one member: whoever joined first
            #expect(first.body.contains(#""total":2"#) && first.body.contains(#""next":""#), "\(first.body)")
            #expect(try curl("GET", base + "/v1/rooms/\(room)/members?limit=0", token: admin).status == 400)

            // Datagrams out are what the kernel took from the workers' sockets; on loopback none is refused.
            let metrics = try curl("GET", base + "/metrics").body
            func sample(_ name: String) -> Double? {
                metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
            }
            #expect((sample("parley_packets_out_total") ?? 0) > 0 && (sample("parley_bytes_out_total") ?? 0) > 0, "\(metrics)")
            #expect(metrics.split(separator: "\n").filter { $0.hasPrefix("parley_send_failures_total{") }.allSatisfy { $0.hasSuffix(" 0") })

            #expect(try curl("POST", base + "/v1/rooms/\(room)/members/bob/mute", token: admin, body: #"{"muted":true}"#).status == 200)
            #expect(alice.waitFor(seconds: 3) { $0.contains("bob muted") }, "\(alice.stdout)")
            #expect(try curl("POST", base + "/v1/rooms/\(room)/messages", token: admin, body: #"{"text":"hello from ops"}"#).status == 200)
            #expect(alice.waitFor(seconds: 3) { $0.contains("text from backend: hello from ops") })
            #expect(try curl("DELETE", base + "/v1/rooms/\(room)/members/bob", token: admin).status == 200)
            #expect(bob.waitFor(seconds: 3) { $0.contains("the relay ended the session: kicked by the backend") }, "\(bob.stdout)")
            #expect(alice.waitFor(seconds: 3) { $0.contains("bob left: kicked by the backend") })
            #expect(bob.wait(seconds: 5) == 4)
            #expect(try curl("DELETE", base + "/v1/rooms/\(room)/members/bob", token: admin).status == 404)
            #expect(try curl("DELETE", base + "/v1/rooms/\(room)", token: admin).status == 200)
            #expect(alice.waitFor(seconds: 3) { $0.contains("the relay ended the session: closed by the backend") })
            #expect(events.waitFor(seconds: 3) { $0.contains("event: room_closed") }, "\(events.stdout)")
            let stream = events.stdout
            #expect(stream.contains(#""identity":"alice""#) && stream.contains("event: member_joined"))
            #expect(stream.contains("event: member_muted") && stream.contains("event: member_left"))
            alice.wait(seconds: 5)
        }

        @Test("parley rooms/members/kick over the API; a refusal exits 3 and an unreachable relay 5, each with one clear line")
        func cli() throws {
            let (relay, _) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let env = ["PARLEY_URL": try #require(httpBase(of: relay))]
            let create = try Spawned("parley", ["rooms", "create", "cli-room", "--mode", "mix"], environment: env)
            #expect(create.wait(seconds: 5) == 0)
            let list = try Spawned("parley", ["rooms"], environment: env)
            #expect(list.wait(seconds: 5) == 0)
            #expect(list.stdout.contains("cli-room\tmode mix\tmembers 0"))
            let kick = try Spawned("parley", ["kick", "cli-room", "nobody"], environment: env)
            #expect(kick.wait(seconds: 5) == 3)
            #expect(kick.stderr.contains("404 not_found"))
            let mute = try Spawned("parley", ["mute", "no-such-room", "nobody"], environment: env)
            #expect(mute.wait(seconds: 5) == 3)
            let down = try Spawned("parley", ["members", "x"], environment: ["PARLEY_URL": "http://127.0.0.1:1"])
            #expect(down.wait(seconds: 5) == 5)
            #expect(down.stderr.hasPrefix("parley: cannot reach the relay at http://127.0.0.1:1"))
            #expect(down.stderr.split(separator: "\n").count == 1)
        }
    }
}
