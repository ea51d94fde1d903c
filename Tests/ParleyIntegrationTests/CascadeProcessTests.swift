import Foundation
import ParleyAudioIO
import Testing

extension ProcessTests {
    /// One room over three relays by cascading (`RelayCore+Cascade.swift`): every node takes the joins that reach it
    /// (`cascade_after` 0), each hears everyone through the relay-to-relay links, in forward and in mix rooms.
    @Suite("Cluster: a room across three nodes")
    struct CascadeProcessTests {
        /// Three nodes on one Redis that have seen each other, with their UDP addresses and HTTP bases.
        func threeNodes(_ redis: RedisServer, extra: [String: String] = [:]) throws -> [(relay: Spawned, udp: String, http: String)] {
            var nodes: [(relay: Spawned, udp: String, http: String)] = []
            for id in ["node-a", "node-b", "node-c"] {
                let env = ["PARLEY_CLUSTER": redis.url, "PARLEY_NODE_ID": id, "PARLEY_CASCADE_AFTER": "0"].merging(extra) { $1 }
                let (relay, udp) = try startRelay(workers: 2, environment: env)
                nodes.append((relay, udp, try #require(httpBase(of: relay))))
            }
            let admin = try mint(["--admin", "--identity", "ops"])
            #expect(try eventually(seconds: 6) {
                try nodes.allSatisfy { n in
                    let body = try curl("GET", n.http + "/v1/cluster", token: admin).body
                    return ["node-a", "node-b", "node-c"].allSatisfy { body.contains(#""id":"\#($0)""#) }
                }
            })
            return nodes
        }

        /// Members with a tone each, one per node, each recording what it hears; every recording must hold the other
        /// two tones and not its own.
        func everyoneHearsEveryone(mode: String) throws {
            let redis = try RedisServer()
            defer { redis.stop() }
            let nodes = try threeNodes(redis)
            defer { for n in nodes { n.relay.signal(SIGTERM); n.relay.wait(seconds: 5) } }
            let room = "cascade-\(mode)-\(UInt32.random(in: 0...UInt32.max))"
            let tones = [440.0, 660.0, 880.0]
            let names = ["ann", "bob", "cat"]
            let dir = FileManager.default.temporaryDirectory.path
            var members: [Spawned] = []
            defer { for m in members { m.signal(SIGTERM); m.wait(seconds: 5) } }
            for k in 0..<3 {
                let m = try Spawned("parley", ["join", room, "--identity", names[k], "--server", nodes[k].udp, "--mode", mode,
                                               "--tone", "\(Int(tones[k]))", "--output", "\(dir)/\(room)-\(names[k]).wav",
                                               "--no-tui", "--duration", "9"])
                members.append(m)
                #expect(m.waitFor(seconds: 8) { $0.contains("joined \(room)") }, "\(m.stdout)\(m.stderr)")
                // Each stays on the node it reached.
                #expect(!m.stdout.contains("joining it at"), "\(m.stdout)")
            }
            // Each learns of the other two through its node's cascade.
            for k in 0..<3 {
                let others = names.filter { $0 != names[k] }
                #expect(members[k].waitFor(seconds: 6) { out in others.allSatisfy { out.contains("\($0) joined") || out.contains("members: ") && out.contains($0) } },
                        "\(names[k]): \(members[k].stdout)")
            }
            // A text through node a's API reaches every member, on every node.
            let admin = try mint(["--admin", "--identity", "ops"])
            let sent = try curl("POST", nodes[0].http + "/v1/rooms/\(room)/messages", token: admin, body: #"{"text":"hello all nodes"}"#)
            #expect(sent.status == 200 || sent.status == 202, "\(sent.body)")
            for k in 0..<3 {
                #expect(members[k].waitFor(seconds: 4) { $0.contains("text from backend: hello all nodes") }, "\(names[k]): \(members[k].stdout)")
            }
            // The API of each node lists the room's members of the other nodes as `cascade`.
            let listed = try curl("GET", nodes[1].http + "/v1/rooms/\(room)/members", token: admin).body
            #expect(listed.contains("ann") && listed.contains("cat") && listed.contains(#""transport":"cascade""#), "\(listed)")
            for k in 0..<3 { #expect(members[k].wait(seconds: 20) == 0, "\(members[k].stdout)\(members[k].stderr)") }
            for k in 0..<3 {
                let heard = try WAVReader(path: "\(dir)/\(room)-\(names[k]).wav").readAllMono48k()
                let tail = heard.count > 48_000 * 4 ? Array(heard[(heard.count - 48_000 * 4)...]) : heard
                // Second by second (the median of seven one-second windows): one stretch or concealed frame shifts a
                // tone's phase, and a single transform over the 4 s then reads a tone that is there as absent (0.04
                // where every second read 0.5, in one full `make test`).
                for j in 0..<3 where j != k {
                    let share = toneShares(tail, frequency: tones[j]).median
                    #expect(share > 0.15, "\(names[k]) hears \(names[j]) (\(tones[j]) Hz): share \(share)")
                }
                #expect(toneShares(tail, frequency: tones[k]).median < 0.1, "\(names[k]) does not hear itself")
            }
            for n in nodes { #expect(n.relay.process.isRunning) }
        }

        @Test("forward room: one member on each of three nodes, everyone hears the other two, and a room text reaches every node")
        func forward() throws { try everyoneHearsEveryone(mode: "forward") }

        @Test("mix room: one node mixes, the others send it their speakers and each member hears the other two")
        func mix() throws { try everyoneHearsEveryone(mode: "mix") }
    
        @Test("parley-relay drain: the node takes no new joins, its member moves to another node at once and the others hear it again with no gap over 200 ms")
        func drain() throws {
            let redis = try RedisServer()
            defer { redis.stop() }
            let nodes = try threeNodes(redis)
            defer { for n in nodes { n.relay.signal(SIGTERM); n.relay.wait(seconds: 5) } }
            let room = "drain-\(UInt32.random(in: 0...UInt32.max))"
            let speaker = try Spawned("parley", ["join", room, "--identity", "talker", "--server", nodes[0].udp, "--tone", "440",
                                                 "--no-playback", "--no-tui", "--duration", "10"])
            defer { speaker.signal(SIGTERM); speaker.wait(seconds: 5) }
            #expect(speaker.waitFor(seconds: 8) { $0.contains("joined \(room)") }, "\(speaker.stdout)\(speaker.stderr)")
            var ears: [Spawned] = []
            defer { for e in ears { e.signal(SIGTERM); e.wait(seconds: 5) } }
            for k in 1...2 {
                let ear = try Spawned("parley", ["join", room, "--identity", "ear\(k)", "--server", nodes[k].udp, "--listen-only",
                                                 "--no-playback", "--no-tui", "--duration", "7", "--verbose"])
                ears.append(ear)
                #expect(ear.waitFor(seconds: 8) { $0.contains("joined \(room)") }, "\(ear.stdout)\(ear.stderr)")
            }
            for ear in ears { #expect(ear.waitFor(seconds: 6) { $0.contains("talker joined") || $0.contains("members: talker") }, "\(ear.stdout)") }
            Thread.sleep(forTimeInterval: 1.5)
            let http = nodes[0].http.replacingOccurrences(of: "http://", with: "")
            let drain = try Spawned("parley-relay", ["drain", "--http", http])
            #expect(drain.wait(seconds: 10) == 0, "\(drain.stdout)\(drain.stderr)")
            #expect(drain.stdout.contains("draining: 1 members moving to other nodes, 0 staying"), "\(drain.stdout)")
            // The mover is told in a sentence (where to, and which node drains), not shown the relay's pointer.
            #expect(speaker.waitFor(seconds: 5) { $0.contains("because the node at \(nodes[0].udp) is draining") },
                    "\(speaker.stdout)")
            #expect(speaker.stdout.contains("moving to the node at "), "\(speaker.stdout)")
            #expect(!speaker.stdout.contains("the relay ended the session"), "\(speaker.stdout)")
            let rejoined = { (out: String) in
                out.components(separatedBy: "is draining").last?.contains("joined \(room)") == true
            }
            #expect(rejoined(speaker.stdout) || speaker.waitFor(seconds: 3, rejoined), "\(speaker.stdout)")
            // A new join through the drained node is sent to another.
            let late = try Spawned("parley", ["join", room, "--identity", "late", "--server", nodes[0].udp, "--listen-only", "--no-playback",
                                              "--no-tui", "--duration", "1"])
            #expect(late.wait(seconds: 10) == 0, "\(late.stdout)\(late.stderr)")
            #expect(late.stdout.contains("joining it at"), "\(late.stdout)")
            // Each node's API lists the talker once, though for a moment it is a member there and in the roster of the
            // node it left.
            let admin = try mint(["--admin", "--identity", "ops"])
            for n in nodes.dropFirst() {
                let listed = try curl("GET", n.http + "/v1/rooms/\(room)/members", token: admin).body
                #expect(listed.components(separatedBy: #""identity":"talker""#).count == 2, "\(listed)")
            }
            // The listeners never went more than 200 ms without the talker's audio.
            for ear in ears {
                #expect(ear.wait(seconds: 15) == 0, "\(ear.stdout)\(ear.stderr)")
                let gap = ear.stdout.components(separatedBy: "longest gap between received packets: ").last.flatMap { Int($0.prefix { $0.isNumber }) }
                #expect(gap != nil && gap! <= 200, "\(ear.stdout)")
            }
        }
    
        @Test("a call between users online on different nodes: the callee's node rings and runs it, both hear each other, the hang-up reaches the other node; a direct text crosses nodes too")
        func callAcrossNodes() throws {
            let redis = try RedisServer()
            defer { redis.stop() }
            let nodes = try threeNodes(redis, extra: ["PARLEY_CASCADE_AFTER": "500"])
            defer { for n in nodes { n.relay.signal(SIGTERM); n.relay.wait(seconds: 5) } }
            let dir = FileManager.default.temporaryDirectory.path
            let bob = "bob\(UInt32.random(in: 0...UInt32.max))", alice = "alice\(UInt32.random(in: 0...UInt32.max))"
            let callee = try Spawned("parley", ["listen", "--identity", bob, "--server", nodes[2].udp, "--auto-answer", "--tone", "660",
                                                "--output", "\(dir)/\(bob).wav", "--no-tui", "--duration", "20"])
            defer { callee.signal(SIGTERM); callee.wait(seconds: 5) }
            #expect(callee.waitFor(seconds: 5) { $0.contains("waiting for calls") }, "\(callee.stdout)\(callee.stderr)")
            // Node a learns that bob is online on node c with its next reading of the directory.
            Thread.sleep(forTimeInterval: 2.5)
            let text = try Spawned("parley", ["message", bob, "hello from node a", "--identity", alice, "--server", nodes[0].udp])
            #expect(text.wait(seconds: 10) == 0, "\(text.stdout)\(text.stderr)")
            #expect(callee.waitFor(seconds: 4) { $0.contains("direct text from \(alice): hello from node a") }, "\(callee.stdout)")
            let caller = try Spawned("parley", ["call", bob, "--identity", alice, "--server", nodes[0].udp, "--tone", "440",
                                                "--output", "\(dir)/\(alice).wav", "--hangup-after", "4", "--no-tui"])
            #expect(caller.wait(seconds: 20) == 0, "\(caller.stdout)\(caller.stderr)")
            #expect(caller.stdout.contains("ringing") && caller.stdout.contains("answered") && caller.stdout.contains("you hung up"), "\(caller.stdout)")
            #expect(caller.stdout.contains("joined the call with \(bob) as \(alice)"), "\(caller.stdout)")
            #expect(callee.waitFor(seconds: 5) { $0.contains("call ended: hung up by \(alice)") }, "\(callee.stdout)")
            #expect(callee.stdout.contains("incoming call from \(alice)"), "\(callee.stdout)")
            let heardByAlice = try WAVReader(path: "\(dir)/\(alice).wav").readAllMono48k()
            #expect(goertzelShare(loudestSecond(heardByAlice), frequency: 660) > 0.5, "alice hears bob")
            callee.signal(SIGINT)
            callee.wait(seconds: 5)
            let heardByBob = try WAVReader(path: "\(dir)/\(bob).wav").readAllMono48k()
            #expect(goertzelShare(loudestSecond(heardByBob), frequency: 440) > 0.5, "bob hears alice")
        }
    
        @Test("a node of a cascaded room killed with kill -9: its member rejoins through another node and the others hear it again; the dead node's entry leaves the others")
        func nodeKilled() throws {
            let redis = try RedisServer()
            defer { redis.stop() }
            let nodes = try threeNodes(redis, extra: ["PARLEY_MEMBER_TIMEOUT_S": "3", "PARLEY_KEEPALIVE_INTERVAL_S": "1"])
            defer { for n in nodes { n.relay.signal(SIGKILL); n.relay.wait(seconds: 5) } }
            let room = "killed-\(UInt32.random(in: 0...UInt32.max))"
            let dir = FileManager.default.temporaryDirectory.path
            let talker = try Spawned("parley", ["join", room, "--identity", "talker", "--server", nodes[2].udp, "--tone", "440",
                                                "--no-playback", "--no-tui", "--duration", "16"])
            defer { talker.signal(SIGTERM); talker.wait(seconds: 5) }
            #expect(talker.waitFor(seconds: 8) { $0.contains("joined \(room)") }, "\(talker.stdout)")
            let ear = try Spawned("parley", ["join", room, "--identity", "ear", "--server", nodes[0].udp, "--listen-only",
                                             "--output", "\(dir)/\(room).wav", "--no-tui", "--duration", "13"])
            defer { ear.signal(SIGTERM); ear.wait(seconds: 5) }
            #expect(ear.waitFor(seconds: 8) { $0.contains("talker joined") || $0.contains("members: talker") }, "\(ear.stdout)")
            Thread.sleep(forTimeInterval: 1.5)
            nodes[2].relay.signal(SIGKILL)
            nodes[2].relay.wait(seconds: 5)
            // The talker's node is gone: it rejoins through the next node its welcome named, which has (or opens) the room.
            #expect(talker.waitFor(seconds: 10) { $0.components(separatedBy: "rejoining through another node").count > 1
                && $0.components(separatedBy: "rejoining through another node").last!.contains("joined \(room)") }, "\(talker.stdout)")
            // Node a forgets the dead node's talker (its rosters stopped) and keeps the one that came back.
            let admin = try mint(["--admin", "--identity", "ops"])
            var listed = ""
            #expect(try eventually(seconds: 6) {
                listed = try curl("GET", nodes[0].http + "/v1/rooms/\(room)/members", token: admin).body
                return listed.components(separatedBy: #""identity":"talker""#).count == 2
            }, "\(listed)")
            #expect(ear.wait(seconds: 20) == 0, "\(ear.stdout)\(ear.stderr)")
            // The ear hears the talker again at the end (after the failover), not only before.
            let heard = try WAVReader(path: "\(dir)/\(room).wav").readAllMono48k()
            let last = Array(heard.suffix(48_000 * 2))
            #expect(goertzelShare(last[...], frequency: 440) > 0.5, "the talker is heard again after its node died")
        }
    
        @Test("Redis stopped while a room spans nodes: the members keep hearing each other (no gap over 200 ms); Redis back, the nodes register again")
        func redisRestart() throws {
            var redis = try RedisServer()
            defer { redis.stop() }
            let nodes = try threeNodes(redis)
            defer { for n in nodes { n.relay.signal(SIGTERM); n.relay.wait(seconds: 5) } }
            let room = "redis-\(UInt32.random(in: 0...UInt32.max))"
            let talker = try Spawned("parley", ["join", room, "--identity", "talker", "--server", nodes[0].udp, "--tone", "440",
                                                "--no-playback", "--no-tui", "--duration", "12"])
            defer { talker.signal(SIGTERM); talker.wait(seconds: 5) }
            #expect(talker.waitFor(seconds: 8) { $0.contains("joined \(room)") }, "\(talker.stdout)")
            let ear = try Spawned("parley", ["join", room, "--identity", "ear", "--server", nodes[1].udp, "--listen-only",
                                             "--no-playback", "--no-tui", "--duration", "9", "--verbose"])
            defer { ear.signal(SIGTERM); ear.wait(seconds: 5) }
            #expect(ear.waitFor(seconds: 8) { $0.contains("talker joined") || $0.contains("members: talker") }, "\(ear.stdout)")
            Thread.sleep(forTimeInterval: 1)
            redis.stop()
            let admin = try mint(["--admin", "--identity", "ops"])
            #expect(try eventually(seconds: 5) { !(try curl("GET", nodes[1].http + "/v1/cluster", token: admin).body.contains(#""connected":true"#)) })
            Thread.sleep(forTimeInterval: 3)  // longer than a node record lives
            redis = try RedisServer(port: redis.port)
            #expect(try eventually(seconds: 8) {
                let body = try curl("GET", nodes[1].http + "/v1/cluster", token: admin).body
                return body.contains(#""connected":true"#) && ["node-a", "node-b", "node-c"].allSatisfy { body.contains(#""id":"\#($0)""#) }
            })
            #expect(ear.wait(seconds: 15) == 0, "\(ear.stdout)\(ear.stderr)")
            let gap = ear.stdout.components(separatedBy: "longest gap between received packets: ").last.flatMap { Int($0.prefix { $0.isNumber }) }
            #expect(gap != nil && gap! <= 200, "\(ear.stdout)")
            for n in nodes { #expect(n.relay.process.isRunning) }
        }
    }
}
