import Foundation
import Testing

extension ProcessTests {
    /// Texts kept in the cluster's Redis (`RedisTextArchive`), read by every node: a text kept on one node is delivered
    /// on another, a room's history reads the same everywhere, and a chat declined on one node stops texts on another.
    @Suite("Cluster: texts every node keeps and reads in Redis")
    struct ClusterHistoryProcessTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-cluster-texts-\(UInt32.random(in: 0...UInt32.max))").path

        func parley(_ arguments: [String], env: [String: String] = [:], expect code: Int32? = 0) throws -> Spawned {
            let p = try Spawned("parley", arguments + ["--no-tui"].filter { _ in ["message", "chat", "listen"].contains(arguments.first ?? "") },
                                environment: env)
            let status = p.wait(seconds: 15)
            if let code { #expect(status == code, "parley \(arguments.joined(separator: " ")): \(p.stdout) \(p.stderr)") }
            return p
        }

        @Test("a text kept on node a reaches bob on node b with its time; a room text written on a is read on b; a chat declined on b fails texts on a")
        func sharedHistory() throws {
            let redis = try RedisServer()
            defer { redis.stop() }
            var nodes: [(relay: Spawned, udp: String, http: String)] = []
            defer { for n in nodes { n.relay.signal(SIGTERM); n.relay.wait(seconds: 5) } }
            for id in ["node-a", "node-b"] {
                // Each node its own state directory: nothing is shared but Redis.
                let (relay, udp) = try startRelay(workers: 1, environment: ["PARLEY_CLUSTER": redis.url, "PARLEY_NODE_ID": id,
                                                                            "PARLEY_STATE_DIR": "\(dir)/\(id)"])
                nodes.append((relay, udp, try #require(httpBase(of: relay))))
            }
            let (a, b) = (nodes[0], nodes[1])
            #expect(a.relay.stderr.contains("kept in the cluster's Redis"), "\(a.relay.stderr)")

            // alice on a writes to bob, who is nowhere: kept. bob comes online on b and gets it, with when it was sent.
            let before = Date()
            let sent = try parley(["message", "bob", "kept on a, read on b", "--identity", "alice", "--server", a.udp])
            #expect(sent.stdout.contains("stored"), "\(sent.stdout)")
            let bob = try Spawned("parley", ["listen", "--identity", "bob", "--server", b.udp, "--no-tui", "--duration", "3"])
            #expect(bob.waitFor(seconds: 6) { $0.contains("direct text from alice (sent ") && $0.contains("kept on a, read on b") }, "\(bob.stdout)")
            let stamp = DateFormatter()
            stamp.dateFormat = "yyyy-MM-dd HH:mm"
            #expect([before, Date()].contains { bob.stdout.contains("(sent \(stamp.string(from: $0))") }, "\(bob.stdout)")
            _ = bob.wait(seconds: 8)
            #expect(!a.relay.stderr.contains("skipped") && !b.relay.stderr.contains("skipped"))

            // A room text through a's API: b's API pages it back.
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = "shared-\(UInt32.random(in: 0...UInt32.max))"
            #expect(try curl("POST", a.http + "/v1/rooms", token: admin, body: #"{"name":"\#(room)"}"#).status == 201)
            let posted = try curl("POST", a.http + "/v1/rooms/\(room)/messages", token: admin, body: #"{"text":"written on a"}"#)
            #expect(posted.status == 200, "\(posted.body)")
            var page = (status: 0, body: "")
            #expect(try eventually(seconds: 3) {
                page = try curl("GET", b.http + "/v1/rooms/\(room)/messages?limit=5", token: admin)
                return page.status == 200 && page.body.contains("written on a")
            }, "\(page)")

            // carol on a asks dave; dave declines on b; once a has followed the chats, carol's texts fail there at once.
            _ = try parley(["message", "dave", "hi dave", "--identity", "carol", "--server", a.udp])
            var declined = ""
            #expect(try eventually(seconds: 5) {  // b learns of the request within a second or two
                declined = try parley(["chat", "decline", "carol", "--identity", "dave", "--server", b.udp], expect: nil).stdout
                return declined.contains("chat with carol: declined")
            }, "\(declined)")
            var refused = ""
            #expect(try eventually(seconds: 5) {
                refused = try parley(["message", "dave", "hi again", "--identity", "carol", "--server", a.udp], expect: nil).stdout
                return refused.contains("failed: dave declined your chat request")
            }, "\(refused)")
        }
    }
}
