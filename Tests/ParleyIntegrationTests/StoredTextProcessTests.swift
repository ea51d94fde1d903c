import Foundation
import Testing

extension ProcessTests {
    /// Kept texts and chats through real relays and clients: a text to someone away survives a relay restart and is
    /// delivered when they come online; a declined chat request stops further texts; room texts page through history.
    @Suite("Kept texts, chat requests and history through a real relay")
    struct StoredTextProcessTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-texts-\(UInt32.random(in: 0...UInt32.max))").path

        func parley(_ arguments: [String], env: [String: String] = [:], expect code: Int32 = 0) throws -> Spawned {
            let p = try Spawned("parley", arguments + ["--no-tui"].filter { _ in ["message", "chat", "listen"].contains(arguments.first ?? "") },
                                environment: env)
            #expect(p.wait(seconds: 15) == code, "parley \(arguments.joined(separator: " ")): \(p.stdout) \(p.stderr)")
            return p
        }

        @Test("a text to someone away is kept across a relay restart and delivered when they come online; a declined request stops texts")
        func keptAcrossRestartAndDeclined() throws {
            let env = ["PARLEY_STATE_DIR": "\(dir)/state"]
            var (relay, server) = try startRelay(environment: env)
            let sent = try parley(["message", "bob", "hello bob, are you there?", "--identity", "alice", "--server", server])
            #expect(sent.stdout.contains("stored"), "\(sent.stdout)")
            let held = try parley(["message", "bob", "second text, waits for bob's answer", "--identity", "alice", "--server", server])
            #expect(held.stdout.contains("stored"), "\(held.stdout)")

            // Restart the relay: what it kept is on disk.
            relay.signal(SIGTERM)
            #expect(relay.wait(seconds: 10) == 0)
            (relay, server) = try startRelay(environment: env)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }

            let bob = try Spawned("parley", ["listen", "--identity", "bob", "--server", server, "--no-tui", "--duration", "4"])
            #expect(bob.waitFor(seconds: 5) { $0.contains("direct text from alice") && $0.contains("hello bob, are you there?") }, "\(bob.stdout)")
            #expect(bob.waitFor(seconds: 2) { $0.contains("alice asks to chat with you") }, "\(bob.stdout)")
            #expect(!bob.stdout.contains("second text"))  // held until bob answers
            let accepted = try parley(["chat", "accept", "alice", "--identity", "bob", "--server", server])
            #expect(accepted.stdout.contains("chat with alice: accepted"), "\(accepted.stdout)")
            #expect(bob.waitFor(seconds: 3) { $0.contains("second text, waits for bob's answer") }, "bob: \(bob.stdout); chat: \(accepted.stdout)")
            _ = bob.wait(seconds: 10)

            // A declined request: the requester is told, and later texts fail at once.
            _ = try parley(["message", "dave", "hi dave", "--identity", "carol", "--server", server])
            let declined = try parley(["chat", "decline", "carol", "--identity", "dave", "--server", server])
            #expect(declined.stdout.contains("chat with carol: declined"), "\(declined.stdout)")
            let refused = try parley(["message", "dave", "hi again", "--identity", "carol", "--server", server], expect: 10)
            #expect(refused.stdout.contains("failed: dave declined your chat request"), "\(refused.stdout)")
        }

        @Test("parley message --wait: the sender sees stored, then delivered when the recipient comes online")
        func storedThenDelivered() throws {
            let (relay, server) = try startRelay(environment: ["PARLEY_STATE_DIR": "\(dir)/state-w"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let sender = try Spawned("parley", ["message", "erin", "see you soon", "--identity", "frank", "--server", server, "--no-tui",
                                                "--wait", "15"])
            #expect(sender.waitFor(seconds: 5) { $0.contains("stored") }, "\(sender.stdout)")
            let erin = try Spawned("parley", ["listen", "--identity", "erin", "--server", server, "--no-tui", "--duration", "3"])
            #expect(erin.waitFor(seconds: 5) { $0.contains("direct text from frank") && $0.contains("see you soon") }, "\(erin.stdout)")
            #expect(sender.wait(seconds: 10) == 0, "\(sender.stdout) \(sender.stderr)")
            let lines = sender.stdout.split(separator: "\n").map(String.init)
            let storedAt = lines.firstIndex { $0.hasPrefix("stored") }, deliveredAt = lines.firstIndex { $0 == "delivered" }
            #expect(storedAt != nil && deliveredAt != nil && storedAt! < deliveredAt!, "\(sender.stdout)")
            _ = erin.wait(seconds: 10)
        }

        @Test("room texts are kept and paged through the API, newest first, for the backend and the room's members")
        func roomHistory() throws {
            let (relay, server) = try startRelay(environment: ["PARLEY_STATE_DIR": "\(dir)/state-h"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let env = ["PARLEY_URL": base]
            _ = try parley(["rooms", "create", "chatter"], env: env)
            let ann = try Spawned("parley", ["join", "chatter", "--identity", "ann", "--server", server, "--listen-only", "--no-playback",
                                             "--no-tui", "--duration", "3", "--say", "first from ann"])
            #expect(ann.wait(seconds: 10) == 0, "\(ann.stderr)")
            // Alone in the room, ann's text reached nobody now, but the room keeps it: said so, not as a failure.
            let kept = "text 1 kept in the room's history; nobody else is here now"
            #expect(ann.stdout.contains(kept) && !ann.stdout.contains("failed"), "\(ann.stdout)")
            let admin = try parley(["token", "--identity", "ops", "--admin"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            for k in 1...3 {
                let (status, _) = try curl("POST", "\(base)/v1/rooms/chatter/messages", token: admin, body: #"{"text":"backend \#(k)"}"#)
                #expect(status == 200)
            }
            let page = try parley(["history", "chatter", "--limit", "2"], env: env).stdout
            let lines = page.split(separator: "\n")
            #expect(lines.count == 3 && lines[0].hasSuffix("backend 3") && lines[1].hasSuffix("backend 2"), "\(page)")
            let next = try #require(lines.last?.split(separator: " ").last.map(String.init))
            let older = try parley(["history", "chatter", "--before", next], env: env).stdout
            #expect(older.contains("backend 1") && older.contains("ann\tfirst from ann") && !older.contains("backend 2"), "\(older)")
            // A member joining asks for the last two (its own token, through the API), oldest first.
            let joiner = try Spawned("parley", ["join", "chatter", "--identity", "joe", "--server", server, "--listen-only", "--no-playback",
                                                "--no-tui", "--duration", "1", "--history", "2"], environment: env)
            #expect(joiner.wait(seconds: 10) == 0, "\(joiner.stderr)")
            let earlier = joiner.stdout.split(separator: "\n").filter { $0.hasPrefix("earlier") }
            #expect(earlier.count == 2 && earlier[0].hasSuffix("backend: backend 2") && earlier[1].hasSuffix("backend: backend 3"), "\(joiner.stdout)")
            // A member of the room reads it with its own token; another room's member may not.
            let member = try parley(["token", "--identity", "zed", "--room", "chatter"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let (ok, body) = try curl("GET", "\(base)/v1/rooms/chatter/messages?limit=1", token: member)
            #expect(ok == 200 && body.contains("backend 3") && body.contains("\"next\""), "\(body)")
            let stranger = try parley(["token", "--identity", "zed", "--room", "elsewhere"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(try curl("GET", "\(base)/v1/rooms/chatter/messages", token: stranger).0 == 403)
        }
    }
}
