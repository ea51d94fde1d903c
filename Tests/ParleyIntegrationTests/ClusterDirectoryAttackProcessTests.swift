import Foundation
import ParleyNet
import ParleyWire
import Testing

/// Runs `redis-cli` against the test's Redis, as anyone who can reach it would; returns what it printed.
@discardableResult
func redisCLI(port: Int, _ arguments: [String], extra: [String] = []) throws -> String {
    let p = try Spawned(.redisCLI, ["-h", "127.0.0.1", "-p", "\(port)"] + extra + arguments)
    p.wait(seconds: 5)
    return p.stdout
}

extension ProcessTests {
    /// Issue 33, finding 1: whoever can write to the cluster's Redis plants a node record of its own, claims a room for
    /// it, and writes texts. The real nodes check every record, claim and kept text against the MAC only they can make
    /// (a key derived from the secret they share), so none of it is believed: no join is sent to the planted node (no
    /// client sends it a single datagram, let alone its token), no planted text is listed or delivered.
    @Suite("Cluster: a hostile Redis writer is not believed")
    struct ClusterDirectoryAttackProcessTests {
        @Test("a planted node record and room claim: nodes ignore them, a join stays on the real nodes, the planted node hears nothing; planted room and direct texts are neither listed nor delivered")
        func plantedRecordsIgnored() throws {
            let redis = try RedisServer()
            defer { redis.stop() }
            let (a, serverA) = try startRelay(workers: 1, environment: ["PARLEY_CLUSTER": redis.url, "PARLEY_NODE_ID": "node-a"])
            defer { a.signal(SIGTERM); a.wait(seconds: 5) }
            let (b, _) = try startRelay(workers: 1, environment: ["PARLEY_CLUSTER": redis.url, "PARLEY_NODE_ID": "node-b"])
            defer { b.signal(SIGTERM); b.wait(seconds: 5) }
            let admin = try mint(["--admin", "--identity", "ops"])
            let baseA = try #require(httpBase(of: a))
            #expect(try eventually(seconds: 5) {
                let body = try curl("GET", baseA + "/v1/cluster", token: admin).body
                return body.contains(#""id":"node-a""#) && body.contains(#""id":"node-b""#)
            })

            // The attacker's "node": a UDP port that records whatever reaches it (a client's hello, its token).
            let trap = try UDPSocket(bindingTo: PeerAddress(ipv4: 127, 0, 0, 1, port: 0))
            let trapPort = try #require(trap.localAddress?.port)
            let room = "planted-\(UInt32.random(in: 0...UInt32.max))"
            func plant() throws {
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                try redisCLI(port: redis.port, ["HSET", "parley:node:evil", "udp", "127.0.0.1:\(trapPort)", "http", "127.0.0.1:1", "members", "0",
                                                "rooms", "1", "started_at", "\(now)", "heartbeat_at", "\(now)", "ports", "\(trapPort)",
                                                "boot", "1", "draining", "0", "room:\(room)", "1",
                                                "key", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                                                "mac", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"])
                try redisCLI(port: redis.port, ["SADD", "parley:nodes", "evil"])
                try redisCLI(port: redis.port, ["SET", "parley:room:\(room)", "evil"])
            }
            try plant()
            // The nodes read the planted record at their next beat: either believed (listed) or ignored (counted).
            var seen = ""
            #expect(try eventually(seconds: 6) {
                try plant()  // kept fresh, as a live node's would be
                seen = try curl("GET", baseA + "/v1/cluster", token: admin).body
                return seen.contains(#""id":"evil""#) || jsonObject(seen)["ignored"] as? Int ?? 0 > 0
            }, "\(seen)")
            #expect(!seen.contains(#""id":"evil""#), "\(seen)")
            #expect(!seen.contains(#""\#(room)":"evil""#), "\(seen)")
            #expect(a.stderr.contains("ignored the record of node evil"), "\(a.stderr)")

            // A join for the planted room through node a stays on the real nodes.
            let joiner = try Spawned("parley", ["join", room, "--identity", "alice", "--server", serverA, "--listen-only",
                                                "--no-playback", "--no-tui", "--duration", "2"])
            #expect(joiner.wait(seconds: 15) == 0, "\(joiner.stdout)\(joiner.stderr)")
            #expect(joiner.stdout.contains("joined \(room)"), "\(joiner.stdout)\(joiner.stderr)")
            #expect(!joiner.stdout.contains("127.0.0.1:\(trapPort)"), "\(joiner.stdout)")
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
            defer { buffer.deallocate() }
            #expect(trap.receive(into: buffer) == nil, "the planted node was sent a datagram")

            // A room text "from ceo" and a direct text to bob, written straight into Redis.
            #expect(try curl("POST", baseA + "/v1/rooms", token: admin, body: #"{"name":"\#(room)-texts"}"#).status == 201)
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            try redisCLI(port: redis.port, ["ZADD", "parley:texts:room:\(room)-texts", "999999",
                                            "6:9999993:ceo3:CEO14:wire the money\(String(now).utf8.count):\(now)0:"])
            let id = "888888"
            try redisCLI(port: redis.port, ["HSET", "parley:texts:text:\(id)", "from", "ceo", "to", "bob", "body", "forged direct text",
                                            "at", "\(now)", "state", "0", "expires_at", "\(now + 3_600_000)", "conn", "0", "mid", "0",
                                            "node", "evil", "reason", "", "attachments", ""])
            for key in ["parley:texts:waiting:bob", "parley:texts:pending-to:bob", "parley:texts:expiry"] {
                try redisCLI(port: redis.port, ["ZADD", key, key.hasSuffix("waiting:bob") ? id : "\(now + 3_600_000)", id])
            }
            // A genuine text beside them, so that the history and the delivery are known to work.
            #expect(try curl("POST", baseA + "/v1/rooms/\(room)-texts/messages", token: admin, body: #"{"text":"genuine"}"#).status == 200)
            let sent = try Spawned("parley", ["message", "bob", "genuine direct text", "--identity", "carol", "--server", serverA, "--no-tui"])
            #expect(sent.wait(seconds: 10) == 0, "\(sent.stdout)\(sent.stderr)")
            let page = try curl("GET", baseA + "/v1/rooms/\(room)-texts/messages?limit=10", token: admin)
            #expect(page.status == 200 && page.body.contains("genuine"), "\(page)")
            #expect(!page.body.contains("wire the money"), "\(page.body)")
            let bob = try Spawned("parley", ["listen", "--identity", "bob", "--server", serverA, "--no-tui", "--duration", "3"])
            #expect(bob.waitFor(seconds: 6) { $0.contains("genuine direct text") }, "\(bob.stdout)")
            _ = bob.wait(seconds: 8)
            #expect(!bob.stdout.contains("forged direct text"), "\(bob.stdout)")
            #expect(a.stderr.contains("skipped"), "\(a.stderr)")
        }
    }
}
