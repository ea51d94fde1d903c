import ParleyCluster
import ParleyCrypto
import Testing

/// The cluster directory's pure parts: its URL, a node's record both ways (and every record a Redis writer could
/// plant refused), room claims, the heartbeat's commands.
@Suite("Cluster directory: URL, node records, room claims, heartbeat commands")
struct ClusterDirectoryTests {
    /// The directory's MAC of a test cluster, and of another cluster (another secret).
    static let mac = ClusterMAC(root: CascadeCipher.root(secret: Array("test cluster secret".utf8)), purpose: .directory)
    static let otherMAC = ClusterMAC(root: CascadeCipher.root(secret: Array("another cluster".utf8)), purpose: .directory)
    static let key = "hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHo"
    static let now: Int64 = 1_800_000_001_000

    @Test("redis://HOST:PORT, the port defaulting to 6379; anything else is refused",
          arguments: [("redis://127.0.0.1:6400", "127.0.0.1", 6400), ("redis://cache", "cache", 6379), ("redis://h:1/0", "h", 1),
                      ("redis://[::1]:6380", "::1", 6380)])
    func url(text: String, host: String, port: Int) {
        #expect(ClusterURL(text) == ClusterURL(text))
        #expect(ClusterURL(text)?.host == host && ClusterURL(text)?.port == port)
        #expect(ClusterURL(text)?.tls == false && ClusterURL(text)?.password == nil)
    }

    @Test("bad cluster URLs are refused", arguments: ["http://h:1", "redis://", "redis://:6379", "redis://h:0", "redis://h:70000", "redis://h:x",
                                                      "redis://a:1:2", "redis://nopassword@h:1", "redis://:@h:1", "redis://:%zz@h:1",
                                                      "rediss://", "redis://[::1", "redis://h h:1"])
    func badURL(text: String) {
        #expect(ClusterURL(text) == nil)
    }

    @Test("issue 33: a password (and an ACL user) for AUTH, percent-decoded; rediss:// for TLS; the password never printed")
    func credentials() throws {
        let plain = try #require(ClusterURL("redis://:s3cret@10.0.0.5:6400"))
        #expect(plain.password == "s3cret" && plain.user == nil && !plain.tls && plain.host == "10.0.0.5" && plain.port == 6400)
        let acl = try #require(ClusterURL("rediss://parley:p%40ss:w0rd@redis.internal/0"))
        #expect(acl.user == "parley" && acl.password == "p@ss:w0rd" && acl.tls && acl.host == "redis.internal" && acl.port == 6379)
        #expect(acl.description == "rediss://parley@redis.internal:6379" && plain.description == "redis://10.0.0.5:6400")
        #expect(!"\(acl) \(plain)".contains("s3cret") && !"\(acl)".contains("w0rd"))
    }

    static let node = NodeRecord(id: "n1", udp: "10.0.0.1:7400", http: "10.0.0.1:7480", members: 12, rooms: 3, startedAt: 1_800_000_000_000,
                                 heartbeatAt: now, roomMembers: ["lobby": 10, "a:b room": 2, "empty": 0],
                                 ports: [7400, 7401], boot: 0xDEAD_BEEF_0000_0001, draining: true, relayKey: key)

    @Test("a node's record survives HSET's fields and HGETALL's answer, its key and MAC with it; a partial one is nothing")
    func record() {
        let fields = Self.node.fields(mac: Self.mac)
        #expect(NodeRecord.verified(id: "n1", hash: fields, mac: Self.mac, now: Self.now) == .success(Self.node))
        #expect(fields.contains("room:a:b room") && fields.contains(Self.key) && fields[fields.count - 2] == "mac")
        #expect(NodeRecord.verified(id: "n1", hash: [], mac: Self.mac, now: Self.now) == .failure(.incomplete))
        #expect(NodeRecord.verified(id: "n1", hash: ["udp"], mac: Self.mac, now: Self.now) == .failure(.incomplete))
        #expect(NodeRecord.verified(id: "n1", hash: Array(fields.prefix(4)), mac: Self.mac, now: Self.now) == .failure(.unauthenticated))
    }

    @Test("issue 33: a record a Redis writer plants is not believed: no MAC, a made-up one, another cluster's, or a genuine record with any field changed, moved to another id, or a field added")
    func plantedRecords() {
        let genuine = Self.node.fields(mac: Self.mac)
        func verdict(_ hash: [String], id: String = "n1") -> Result<NodeRecord, NodeRecord.Refusal> {
            NodeRecord.verified(id: id, hash: hash, mac: Self.mac, now: Self.now)
        }
        // The probe's record: every field a node writes, a key of the attacker's, no MAC or a made-up one.
        let planted = ["udp", "127.0.0.1:9", "http", "127.0.0.1:1", "members", "0", "rooms", "1", "started_at", String(Self.now),
                       "heartbeat_at", String(Self.now), "ports", "9", "boot", "1", "draining", "0", "key", Self.key]
        #expect(verdict(planted, id: "evil") == .failure(.unauthenticated))
        #expect(verdict(planted + ["mac", String(repeating: "A", count: 43)], id: "evil") == .failure(.unauthenticated))
        #expect(verdict(planted + ["mac", "not even base64"], id: "evil") == .failure(.unauthenticated))
        #expect(verdict(Self.node.fields(mac: Self.otherMAC)) == .failure(.unauthenticated))
        // A genuine record, changed: each field in turn (the address, the key, the boot, a room…), or read as another id.
        for k in stride(from: 0, to: genuine.count - 2, by: 2) {
            var changed = genuine
            changed[k + 1] += "0"
            #expect(verdict(changed) == .failure(.unauthenticated), "\(genuine[k]) changed")
        }
        #expect(verdict(genuine, id: "n2") == .failure(.unauthenticated))
        #expect(verdict(genuine + ["room:planted", "1"]) == .failure(.unauthenticated))
        var noKey = Self.node
        noKey.relayKey = "short"
        #expect(verdict(noKey.fields(mac: Self.mac)) == .failure(.incomplete))  // a node without a usable key is no node
    }

    @Test("issue 33: a genuine record replayed later (its heartbeat older than its lifetime and the clocks' tolerance) or dated in the future is not believed",
          arguments: [(Int64(0), true), (Int64(-8_000), true), (Int64(-8_001), false), (Int64(5_000), true), (Int64(5_001), false)])
    func freshness(offset: Int64, believed: Bool) {
        let fields = Self.node.fields(mac: Self.mac)
        let verdict = NodeRecord.verified(id: "n1", hash: fields, mac: Self.mac, now: Self.now - offset)
        #expect(((try? verdict.get()) != nil) == believed, "\(verdict)")
        if !believed { #expect(verdict == .failure(offset < 0 ? .stale : .future)) }
    }

    @Test("issue 33: a room claim is the node, its start and a MAC over the room: a bare node id, another room's claim, another cluster's, or a changed one is nobody's")
    func roomClaims() {
        let claim = RoomClaim(node: "node-a", boot: 77)
        let value = claim.value(room: "lobby", mac: Self.mac)
        #expect(value.hasPrefix("node-a 77 ") && value.count == "node-a 77 ".count + 43)
        #expect(RoomClaim(room: "lobby", value: value, mac: Self.mac) == claim)
        #expect(RoomClaim(room: "lobby", value: "evil", mac: Self.mac) == nil)              // the probe's SET parley:room:ROOM evil
        #expect(RoomClaim(room: "other", value: value, mac: Self.mac) == nil)              // copied to another room
        #expect(RoomClaim(room: "lobby", value: claim.value(room: "lobby", mac: Self.otherMAC), mac: Self.mac) == nil)
        #expect(RoomClaim(room: "lobby", value: value.replacingOccurrences(of: "node-a", with: "node-b"), mac: Self.mac) == nil)
        #expect(RoomClaim(room: "lobby", value: value.replacingOccurrences(of: " 77 ", with: " 78 "), mac: Self.mac) == nil)
        #expect(RoomClaim(room: "lobby", value: value.replacingOccurrences(of: " 77 ", with: " 077 "), mac: Self.mac) == nil)
        #expect(RoomClaim(room: "lobby", value: value + " ", mac: Self.mac) == nil)
        #expect(RoomClaim(room: "lobby", value: "", mac: Self.mac) == nil)
    }

    @Test("a MAC made for one purpose never verifies for another, and parts cannot be shifted between fields")
    func macParts() {
        let root = CascadeCipher.root(secret: Array("test cluster secret".utf8))
        let texts = ClusterMAC(root: root, purpose: .texts)
        let tag = Self.mac.mac(["room", "lobby", "node-a", "1"])
        #expect(Self.mac.verifies(tag, ["room", "lobby", "node-a", "1"]))
        #expect(!texts.verifies(tag, ["room", "lobby", "node-a", "1"]))
        #expect(!Self.mac.verifies(tag, ["room", "lobbynode-a", "", "1"]))
        #expect(!Self.mac.verifies(tag, ["room", "lobby", "node-a1"]))
        #expect(!Self.mac.verifies(String(tag.dropLast()) + "B", ["room", "lobby", "node-a", "1"]))
    }

    @Test("a heartbeat replaces the hash and the online list, renews their lifetime (three beats) and names the node in the set, in one transaction")
    func heartbeat() {
        let node = NodeRecord(id: "n1", udp: "u", http: "h", members: 0, rooms: 0, startedAt: 1, heartbeatAt: 2)
        let commands = ClusterDirectory.heartbeat(node, mac: Self.mac)
        #expect(commands.map(\.first) == ["MULTI", "DEL", "HSET", "PEXPIRE", "SADD", "EXEC"])
        #expect(commands[1] == ["DEL", "parley:node:n1", "parley:online:n1"] && commands[2][1] == "parley:node:n1")
        #expect(Array(commands[2].dropFirst(2)) == node.fields(mac: Self.mac))
        #expect(commands[3] == ["PEXPIRE", "parley:node:n1", "3000"])
        #expect(commands[4] == ["SADD", "parley:nodes", "n1"])
        #expect(ClusterDirectory.leave("n1") == [["DEL", "parley:node:n1", "parley:online:n1"], ["SREM", "parley:nodes", "n1"]])
        // With identities online: listed in the node's online set, with the record's lifetime.
        let online = ClusterDirectory.heartbeat(node, online: ["ann", "bob"], mac: Self.mac)
        #expect(online.map(\.first) == ["MULTI", "DEL", "HSET", "PEXPIRE", "SADD", "SADD", "PEXPIRE", "EXEC"])
        #expect(online[5] == ["SADD", "parley:online:n1", "ann", "bob"] && online[6] == ["PEXPIRE", "parley:online:n1", "3000"])
    }
}
