/// One relay of a cluster as the directory in Redis holds it: a hash `parley:node:<id>` that lives as long as the
/// node's heartbeat renews it (`ClusterDirectory.nodeTTLMilliseconds`), and its id in the set `parley:nodes`.
public struct NodeRecord: Equatable, Sendable {
    /// The node's id (`node_id`, or random at start).
    public var id: String
    /// Where clients reach its UDP port (`advertise_udp`), and its HTTP API.
    public var udp: String
    public var http: String
    /// Its load: members (and presence sessions) connected, and rooms.
    public var members: Int
    public var rooms: Int
    /// When it started and when it last beat (Unix ms).
    public var startedAt: Int64
    public var heartbeatAt: Int64
    /// Its rooms and their member counts (at most `maxListedRooms`, the fullest first).
    public var roomMembers: [String: Int] = [:]
    /// Its workers' UDP ports (the relay-to-relay links reach the worker that owns a room), its start's random id
    /// (links from an earlier start are refused), and whether it is draining.
    public var ports: [UInt16] = []
    public var boot: UInt64 = 0
    public var draining = false

    /// The most rooms a node's record lists (its `rooms` count is exact).
    public static let maxListedRooms = 1000

    public init(id: String, udp: String, http: String, members: Int, rooms: Int, startedAt: Int64, heartbeatAt: Int64,
                roomMembers: [String: Int] = [:], ports: [UInt16] = [], boot: UInt64 = 0, draining: Bool = false) {
        self.roomMembers = roomMembers
        self.ports = ports
        self.boot = boot
        self.draining = draining
        self.id = id
        self.udp = udp
        self.http = http
        self.members = members
        self.rooms = rooms
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
    }

    /// Field, value, field, value… as HSET takes them; each listed room is a field `room:<name>` holding its members.
    public var fields: [String] {
        var out = ["udp", udp, "http", http, "members", String(members), "rooms", String(rooms), "started_at", String(startedAt),
                   "heartbeat_at", String(heartbeatAt), "ports", ports.map(String.init).joined(separator: ","), "boot", String(boot),
                   "draining", draining ? "1" : "0"]
        for (name, count) in roomMembers.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key })
            .prefix(Self.maxListedRooms) {
            out += ["room:" + name, String(count)]
        }
        return out
    }

    /// The record of `id` from HGETALL's flat field/value list; nil when it is empty (expired) or incomplete.
    public init?(id: String, hash: [String]) {
        guard hash.count % 2 == 0, !hash.isEmpty else { return nil }
        var f: [String: String] = [:]
        for i in stride(from: 0, to: hash.count, by: 2) { f[hash[i]] = hash[i + 1] }
        guard let udp = f["udp"], let http = f["http"], let members = f["members"].flatMap(Int.init), let rooms = f["rooms"].flatMap(Int.init),
              let started = f["started_at"].flatMap(Int64.init), let beat = f["heartbeat_at"].flatMap(Int64.init) else { return nil }
        var listed: [String: Int] = [:]
        for (field, value) in f where field.hasPrefix("room:") {
            if let count = Int(value) { listed[String(field.dropFirst(5))] = count }
        }
        self.init(id: id, udp: udp, http: http, members: members, rooms: rooms, startedAt: started, heartbeatAt: beat, roomMembers: listed,
                  ports: (f["ports"] ?? "").split(separator: ",").compactMap { UInt16($0) }, boot: f["boot"].flatMap { UInt64($0) } ?? 0,
                  draining: f["draining"] == "1")
    }
}

/// The keys and commands of the cluster directory in Redis (pure: the agent runs them).
public enum ClusterDirectory {
    /// The set of node ids that registered (an id whose hash expired is removed by whoever lists it).
    public static let nodesKey = "parley:nodes"
    /// A node lives this long past its last heartbeat (three beats).
    public static let nodeTTLMilliseconds = 3_000

    public static func nodeKey(_ id: String) -> String { "parley:node:" + id }
    /// A room's entry: the id of the node it lives on, as long as that node renews it (`nodeTTLMilliseconds`).
    public static func roomKey(_ name: String) -> String { "parley:room:" + name }

    /// One heartbeat, in one transaction: the node's hash replaced (rooms that closed leave it) and its lifetime
    /// renewed, its id in the set. A reader never sees the hash missing in between.
    public static func heartbeat(_ node: NodeRecord, online: [String] = []) -> [[String]] {
        var commands = [["MULTI"],
                        ["DEL", nodeKey(node.id), onlineKey(node.id)],
                        ["HSET", nodeKey(node.id)] + node.fields,
                        ["PEXPIRE", nodeKey(node.id), String(nodeTTLMilliseconds)],
                        ["SADD", nodesKey, node.id]]
        if !online.isEmpty {
            commands.append(["SADD", onlineKey(node.id)] + online.prefix(maxOnlineListed))
            commands.append(["PEXPIRE", onlineKey(node.id), String(nodeTTLMilliseconds)])
        }
        return commands + [["EXEC"]]
    }

    /// The identities online on a node (presence sessions: calls and direct texts to them are routed there), rewritten
    /// with each heartbeat and living as long as the node's record.
    public static func onlineKey(_ id: String) -> String { "parley:online:" + id }
    /// The most identities one node lists.
    public static let maxOnlineListed = 100_000

    /// The node leaves at once (a clean stop).
    public static func leave(_ id: String) -> [[String]] { [["DEL", nodeKey(id), onlineKey(id)], ["SREM", nodesKey, id]] }
}

/// `redis://HOST:PORT` (port 6379 when left out).
public struct ClusterURL: Equatable, Sendable {
    public var host: String
    public var port: Int

    public init?(_ text: String) {
        guard text.hasPrefix("redis://") else { return nil }
        let rest = text.dropFirst("redis://".count).split(separator: "/", maxSplits: 1).first.map(String.init) ?? ""
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
        guard let first = parts.first, !first.isEmpty, parts.count <= 2 else { return nil }
        host = String(first)
        if parts.count == 2 {
            guard let p = Int(parts[1]), (1...65535).contains(p) else { return nil }
            port = p
        } else {
            port = 6379
        }
    }
}
