import Foundation
import Testing

extension ProcessTests {
    /// Webhooks through a real relay and a real receiver (`Tests/Interop/webhook_receiver.py`) on loopback: the
    /// receiver is down while events happen, the relay is killed with SIGKILL while they wait and restarted on the same
    /// state directory, then the receiver answers 500, garbage, slowly, and at last 200. Every event arrives, signed,
    /// with the id it had before the kill; a member's join is not held up by a receiver that hangs.
    @Suite("Webhooks through a real relay: a receiver down, failing, slow; the relay killed while events wait")
    struct WebhookProcessTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "parley-hooks-\(UInt32.random(in: 0...UInt32.max))"
        ).path
        static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

        func parley(_ arguments: [String], seconds: Double = 15) throws -> Spawned {
            let p = try Spawned("parley", arguments)
            _ = p.wait(seconds: seconds)
            return p
        }

        func setMode(_ mode: String) throws { try mode.write(toFile: dir + "/mode", atomically: true, encoding: .utf8) }

        /// The JSON lines of one of the receiver's logs.
        func log(_ name: String) -> [[String: Any]] {
            guard let text = try? String(contentsOfFile: dir + "/" + name, encoding: .utf8) else { return [] }
            return text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }

        /// The body of a logged request, parsed.
        static func body(_ record: [String: Any]) -> [String: Any] {
            (record["body"] as? String).flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            } ?? [:]
        }

        func waitFor(seconds: Double, _ condition: () -> Bool) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                if condition() { return true }
                Thread.sleep(forTimeInterval: 0.1)
            }
            return condition()
        }

        @Test(
            "nothing lost, nothing sent twice under another id, signatures verify; joins go on while the receiver hangs"
        )
        func downFailingSlowThenFine() throws {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let port = freeTCPPort()
            let env = [
                "PARLEY_STATE_DIR": dir + "/state", "PARLEY_EMPTY_ROOM_TIMEOUT_S": "1", "PARLEY_WEBHOOK_TIMEOUT_S": "2",
                "PARLEY_WEBHOOK": "http://127.0.0.1:\(port)/hook", "PARLEY_WEBHOOK_SECRET": Self.secret,
            ]

            // 1. The receiver is down: events happen and wait in the outbox.
            var (relay, server) = try startRelay(environment: env)
            _ = try parley(["message", "bob", "are you there?", "--identity", "alice", "--server", server, "--no-tui"])
            _ = try parley(["call", "bob", "--identity", "alice", "--server", server, "--no-tui"])
            _ = try parley([
                "join", "hooks-a", "--identity", "ann", "--server", server, "--listen-only", "--no-playback",
                "--no-tui",
                "--duration", "1",
            ])
            let base = try #require(httpBase(of: relay))
            // room.started, member.joined, member.left, room.finished, text.held, call.ringing, call.missed.
            #expect(
                waitFor(seconds: 10) {
                    ((try? curl("GET", base + "/metrics").body) ?? "").contains("parley_webhook_events_stored_total 7")
                },
                "\(relay.stderr)")
            #expect(relay.stderr.contains("Couldn't connect"), "\(relay.stderr)")

            // 2. Killed while they wait; restarted on the same state directory, still without a receiver.
            relay.signal(SIGKILL)
            _ = relay.wait(seconds: 5)
            (relay, server) = try startRelay(environment: env)
            defer { relay.signal(SIGTERM); _ = relay.wait(seconds: 5) }
            #expect(
                relay.waitForStderr(seconds: 5) { $0.contains("7 deliveries wait from before the restart") },
                "\(relay.stderr)")

            // 3. The receiver comes up answering 500, then garbage, then hanging: nothing is taken, the joins go on.
            try setMode("500")
            let receiver = try Spawned(
                .python3,
                [ExternalProgram.packageRoot + "/Tests/Interop/webhook_receiver.py", "\(port)", Self.secret, dir])
            defer { receiver.signal(SIGTERM); _ = receiver.wait(seconds: 5) }
            #expect(receiver.waitFor(seconds: 5) { $0.contains("listening") })
            #expect(waitFor(seconds: 6) { log("attempts.jsonl").contains { $0["mode"] as? String == "500" } })
            try setMode("garbage")
            #expect(waitFor(seconds: 10) { log("attempts.jsonl").contains { $0["mode"] as? String == "garbage" } })
            try setMode("slow:30")
            let started = Date()
            let joined = try parley([
                "join", "hooks-b", "--identity", "bea", "--server", server, "--listen-only", "--no-playback",
                "--no-tui",
                "--duration", "1",
            ])
            #expect(joined.stdout.contains("joined hooks-b"), "\(joined.stdout) \(joined.stderr)")
            #expect(
                Date().timeIntervalSince(started) < 5,
                "a join took \(Date().timeIntervalSince(started)) s beside a hanging receiver")
            #expect(log("delivered.jsonl").isEmpty)

            // 4. The receiver is fine: everything arrives, each event once per id, with the ids of before the kill.
            try setMode("ok")
            let expected = 11  // the 7 from before the kill, and hooks-b's started, joined, left, finished
            #expect(
                waitFor(seconds: 40) {
                    Set(log("delivered.jsonl").compactMap { $0["id"] as? String }).count >= expected
                },
                "delivered: \(log("delivered.jsonl").count); relay: \(relay.stderr)")
            let attempts = log("attempts.jsonl"), delivered = log("delivered.jsonl")
            #expect(attempts.allSatisfy { $0["signature_ok"] as? Bool == true })
            let ids = Set(delivered.compactMap { $0["id"] as? String })
            #expect(ids.count == expected)
            // Every id an attempt carried was delivered: no event was sent again under another id.
            #expect(Set(attempts.compactMap { $0["id"] as? String }) == ids)
            // One id per event: the same (type, data) never under two ids.
            var seen: [String: String] = [:]
            for d in delivered {
                let body = Self.body(d)
                let data =
                    (try? JSONSerialization.data(withJSONObject: body["data"] ?? [:], options: .sortedKeys)) ?? Data()
                let key = "\(body["type"] ?? "")|" + String(decoding: data, as: UTF8.self)
                if let other = seen[key] { #expect(other == d["id"] as? String, "\(key) under two ids") }
                seen[key] = d["id"] as? String
            }
            let types = delivered.map { Self.body($0)["type"] as? String ?? "" }
            for type in [
                "room.started", "room.finished", "member.joined", "member.left", "text.held", "call.ringing",
                "call.missed",
            ] {
                #expect(types.contains(type), "\(type) missing: \(types)")
            }
            // One room's events in order.
            let roomB = delivered.map(Self.body).filter {
                ($0["data"] as? [String: Any])?["room"] as? String == "hooks-b"
            }
            var order: [String] = []
            for b in roomB where !order.contains(b["type"] as? String ?? "") {
                order.append(b["type"] as? String ?? "")
            }
            #expect(order == ["room.started", "member.joined", "member.left", "room.finished"], "\(order)")
            let missed = delivered.map(Self.body).first { $0["type"] as? String == "call.missed" }
            #expect((missed?["data"] as? [String: Any])?["reason"] as? String == "unavailable")
        }
    }
}
