import ParleyCluster
import Testing

/// The cluster directory's pure parts: its URL, a node's record both ways, the heartbeat's commands.
@Suite("Cluster directory: URL, node records, heartbeat commands")
struct ClusterDirectoryTests {
    @Test("redis://HOST:PORT, the port defaulting to 6379; anything else is refused",
          arguments: [("redis://127.0.0.1:6400", "127.0.0.1", 6400), ("redis://cache", "cache", 6379), ("redis://h:1/0", "h", 1)])
    func url(text: String, host: String, port: Int) {
        #expect(ClusterURL(text) == ClusterURL(text))
        #expect(ClusterURL(text)?.host == host && ClusterURL(text)?.port == port)
    }

    @Test("bad cluster URLs are refused", arguments: ["http://h:1", "redis://", "redis://:6379", "redis://h:0", "redis://h:70000", "redis://h:x", "redis://a:1:2"])
    func badURL(text: String) {
        #expect(ClusterURL(text) == nil)
    }

    @Test("a node's record survives HSET's fields and HGETALL's answer; an expired (empty) or partial one is nothing")
    func record() {
        let node = NodeRecord(id: "n1", udp: "10.0.0.1:7400", http: "10.0.0.1:7480", members: 12, rooms: 3, startedAt: 1_800_000_000_000,
                              heartbeatAt: 1_800_000_001_000, roomMembers: ["lobby": 10, "a:b room": 2, "empty": 0],
                              ports: [7400, 7401], boot: 0xDEAD_BEEF_0000_0001, draining: true)
        #expect(NodeRecord(id: "n1", hash: node.fields) == node)
        #expect(node.fields.contains("room:a:b room"))
        #expect(NodeRecord(id: "n1", hash: []) == nil)
        #expect(NodeRecord(id: "n1", hash: Array(node.fields.prefix(4))) == nil)
        #expect(NodeRecord(id: "n1", hash: ["udp"]) == nil)
    }

    @Test("a heartbeat replaces the hash and the online list, renews their lifetime (three beats) and names the node in the set, in one transaction")
    func heartbeat() {
        let node = NodeRecord(id: "n1", udp: "u", http: "h", members: 0, rooms: 0, startedAt: 1, heartbeatAt: 2)
        let commands = ClusterDirectory.heartbeat(node)
        #expect(commands.map(\.first) == ["MULTI", "DEL", "HSET", "PEXPIRE", "SADD", "EXEC"])
        #expect(commands[1] == ["DEL", "parley:node:n1", "parley:online:n1"] && commands[2][1] == "parley:node:n1")
        #expect(commands[3] == ["PEXPIRE", "parley:node:n1", "3000"])
        #expect(commands[4] == ["SADD", "parley:nodes", "n1"])
        #expect(ClusterDirectory.leave("n1") == [["DEL", "parley:node:n1", "parley:online:n1"], ["SREM", "parley:nodes", "n1"]])
        // With identities online: listed in the node's online set, with the record's lifetime.
        let online = ClusterDirectory.heartbeat(node, online: ["ann", "bob"])
        #expect(online.map(\.first) == ["MULTI", "DEL", "HSET", "PEXPIRE", "SADD", "SADD", "PEXPIRE", "EXEC"])
        #expect(online[5] == ["SADD", "parley:online:n1", "ann", "bob"] && online[6] == ["PEXPIRE", "parley:online:n1", "3000"])
    }
}
