import Foundation
import ParleyAudioIO
import Testing

/// A Redis for one test on a port of its own, nothing saved to disk.
struct RedisServer {
    let process: Spawned
    let port: Int

    init(port: Int? = nil) throws {
        for _ in 0..<5 {
            let p = port ?? Int.random(in: 20_000...60_000)
            let s = try Spawned(.redisServer, ["--port", "\(p)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            if s.waitFor(seconds: 5, { $0.contains("Ready to accept connections") }) {
                process = s
                self.port = p
                return
            }
            s.signal(SIGKILL)
            s.wait(seconds: 2)
        }
        throw RelayDidNotStart(output: "redis-server did not start")
    }

    var url: String { "redis://127.0.0.1:\(port)" }

    func stop() {
        process.signal(SIGKILL)
        process.wait(seconds: 3)
    }
}

extension ProcessTests {
    /// Relays as nodes of a cluster on one Redis: registration with a heartbeat and load, the live nodes through the
    /// API, a node killed dropping out, Redis restarted and the nodes back.
    @Suite("Cluster: nodes register with Redis")
    struct ClusterProcessTests {
        func nodes(_ base: String, token: String) throws -> (connected: Bool, ids: [String], body: String) {
            let r = try curl("GET", base + "/v1/cluster", token: token)
            let object = jsonObject(r.body)
            let ids = (object["nodes"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            return (object["connected"] as? Bool ?? false, ids, r.body)
        }

        @Test("two relays on one Redis list each other with their addresses and load; one killed drops out within its 3 s lifetime; Redis restarted, the other registers again")
        func registry() throws {
            var redis = try RedisServer()
            defer { redis.stop() }
            let (a, _) = try startRelay(workers: 1, environment: ["PARLEY_CLUSTER": redis.url, "PARLEY_NODE_ID": "node-a"])
            defer { a.signal(SIGTERM); a.wait(seconds: 5) }
            let (b, _) = try startRelay(workers: 1, environment: ["PARLEY_CLUSTER": redis.url, "PARLEY_NODE_ID": "node-b"])
            let base = try #require(httpBase(of: a))
            let admin = try mint(["--admin", "--identity", "ops"])
            var seen = (connected: false, ids: [String](), body: "")
            #expect(try eventually(seconds: 5) {
                seen = try nodes(base, token: admin)
                return seen.connected && seen.ids == ["node-a", "node-b"]
            }, "\(seen.body)")
            #expect(seen.body.contains(#""udp":"127.0.0.1:"#) && seen.body.contains(#""members":0"#), "\(seen.body)")

            b.signal(SIGKILL)
            b.wait(seconds: 5)
            #expect(try eventually(seconds: 6) {
                seen = try nodes(base, token: admin)
                return seen.ids == ["node-a"]
            }, "\(seen.body)")

            // Redis goes away: the relay keeps running and says so; Redis back on the same port: registered again.
            redis.stop()
            #expect(try eventually(seconds: 5) { try !nodes(base, token: admin).connected })
            redis = try RedisServer(port: redis.port)
            #expect(try eventually(seconds: 8) {
                seen = try nodes(base, token: admin)
                return seen.connected && seen.ids == ["node-a"]
            }, "\(seen.body)")
            #expect(a.process.isRunning)
        }

        @Test("a join to any node reaches the room: the node that does not have it answers with the one that does, and the client joins there")
        func placement() throws {
            let redis = try RedisServer()
            defer { redis.stop() }
            let (a, serverA) = try startRelay(workers: 2, environment: ["PARLEY_CLUSTER": redis.url, "PARLEY_NODE_ID": "node-a"])
            defer { a.signal(SIGTERM); a.wait(seconds: 5) }
            let (b, serverB) = try startRelay(workers: 2, environment: ["PARLEY_CLUSTER": redis.url, "PARLEY_NODE_ID": "node-b"])
            defer { b.signal(SIGTERM); b.wait(seconds: 5) }
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = "cluster-\(UInt32.random(in: 0...UInt32.max))"
            let speaker = try Spawned("parley", ["join", room, "--identity", "host", "--server", serverA, "--tone", "440",
                                                 "--no-playback", "--no-tui", "--duration", "12"])
            defer { speaker.signal(SIGTERM); speaker.wait(seconds: 5) }
            #expect(speaker.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(speaker.stdout)\(speaker.stderr)")
            // Node b learns where the room lives from the directory (within a heartbeat or two).
            let baseB = try #require(httpBase(of: b))
            var seen = ""
            #expect(try eventually(seconds: 5) {
                seen = try curl("GET", baseB + "/v1/cluster", token: admin).body
                return seen.contains(#""\#(room)":"node-a""#)
            }, "\(seen)")
            let listener = try Spawned("parley", ["join", room, "--identity", "far", "--server", serverB, "--listen-only",
                                                  "--output", "\(FileManager.default.temporaryDirectory.path)/\(room).wav", "--no-tui", "--duration", "5"])
            #expect(listener.wait(seconds: 15) == 0, "\(listener.stdout)\(listener.stderr)")
            #expect(listener.stdout.contains("joining it at \(serverA)"), "\(listener.stdout)")
            #expect(listener.stdout.contains("members: host"), "\(listener.stdout)")
            let heard = try WAVReader(path: "\(FileManager.default.temporaryDirectory.path)/\(room).wav").readAllMono48k()
            #expect(goertzelShare(loudestSecond(heard), frequency: 440) > 0.5)
            #expect(speaker.stdout.contains("far joined"), "\(speaker.stdout)")
            // Any node lists the cluster's rooms with their members.
            #expect(try eventually(seconds: 4) {
                seen = try curl("GET", baseB + "/v1/cluster", token: admin).body
                return seen.contains(#""room_members":{"\#(room)":"#)  // 1 or 2: the listener has left, or is leaving
            }, "\(seen)")
        }

        @Test("the room's node killed with kill -9: its members rejoin through the other node (the welcome named it) and hear each other again there")
        func failover() throws {
            let redis = try RedisServer()
            defer { redis.stop() }
            let fast = ["PARLEY_CLUSTER": redis.url, "PARLEY_MEMBER_TIMEOUT_S": "3", "PARLEY_KEEPALIVE_INTERVAL_S": "1"]
            let (a, serverA) = try startRelay(workers: 1, environment: fast.merging(["PARLEY_NODE_ID": "node-a"]) { $1 })
            let (b, serverB) = try startRelay(workers: 1, environment: fast.merging(["PARLEY_NODE_ID": "node-b"]) { $1 })
            defer { a.signal(SIGKILL); a.wait(seconds: 5); b.signal(SIGTERM); b.wait(seconds: 5) }
            let admin = try mint(["--admin", "--identity", "ops"])
            let baseA = try #require(httpBase(of: a)), baseB = try #require(httpBase(of: b))
            // Both nodes know each other before anyone joins (placement agrees; a welcome names the other node).
            #expect(try eventually(seconds: 5) {
                try [baseA, baseB].allSatisfy { base in
                    let body = try curl("GET", base + "/v1/cluster", token: admin).body
                    return body.contains(#""id":"node-a""#) && body.contains(#""id":"node-b""#)
                }
            })
            let room = "failover-\(UInt32.random(in: 0...UInt32.max))"
            let out = "\(FileManager.default.temporaryDirectory.path)/\(room).wav"
            let speaker = try Spawned("parley", ["join", room, "--identity", "host", "--server", serverA, "--tone", "440",
                                                 "--no-playback", "--no-tui", "--duration", "30"])
            defer { speaker.signal(SIGTERM); speaker.wait(seconds: 5) }
            let listener = try Spawned("parley", ["join", room, "--identity", "ear", "--server", serverB, "--listen-only",
                                                  "--output", out, "--no-tui", "--duration", "30"])
            defer { listener.signal(SIGTERM); listener.wait(seconds: 5) }
            #expect(speaker.waitFor(seconds: 8) { $0.contains("joined \(room)") }, "\(speaker.stdout)")
            #expect(listener.waitFor(seconds: 8) { $0.contains("members: host") || $0.contains("host joined") }, "\(listener.stdout)")
            // Kill the node the room lives on; the members go to the other one.
            var owner = ""
            #expect(try eventually(seconds: 5) {
                let body = try curl("GET", baseB + "/v1/cluster", token: admin).body
                owner = body.contains(#""\#(room)":"node-a""#) ? "node-a" : body.contains(#""\#(room)":"node-b""#) ? "node-b" : ""
                return !owner.isEmpty
            })
            let (dead, survivor, survivorAddress) = owner == "node-a" ? (a, b, serverB) : (b, a, serverA)
            dead.signal(SIGKILL)
            dead.wait(seconds: 5)
            /// What a member printed after it started failing over.
            func afterFailover(_ text: String) -> Substring? {
                text.range(of: "rejoining through another node of the cluster at \(survivorAddress)").map { text[$0.upperBound...] }
            }
            let port = survivorAddress.split(separator: ":").last.map(String.init) ?? ""
            for member in [speaker, listener] {
                #expect(member.waitFor(seconds: 25) { afterFailover($0)?.contains("joined \(room) as") == true && afterFailover($0)?.contains("port \(port),") == true },
                        "\(member.stdout)")
            }
            // Back together: the listener has the host again on the surviving node.
            #expect(listener.waitFor(seconds: 10) { afterFailover($0).map { $0.contains("members: host") || $0.contains("host joined") } == true },
                    "\(listener.stdout)")
            #expect(survivor.process.isRunning)
        }

        @Test("without --cluster the relay runs alone: GET /v1/cluster is 404")
        func alone() throws {
            let (relay, _) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            #expect(try curl("GET", base + "/v1/cluster", token: try mint(["--admin", "--identity", "ops"])).status == 404)
        }
    }
}
