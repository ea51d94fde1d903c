/// One relay of a cluster as the directory in Redis holds it: a hash `parley:node:<id>` that lives as long as the
/// node's heartbeat renews it (`ClusterDirectory.nodeTTLMilliseconds`), and its id in the set `parley:nodes`.
///
/// Anyone who can write to Redis could write a hash there, so a record carries a `mac` field (`ClusterMAC`, the
/// directory's key) over its id and every other field; a node believes a record only when that MAC verifies and its
/// heartbeat is recent (`verified`). The record names the node's relay key: a client sent to the node pins it.
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
    /// Its relay identity key (X25519 public key, unpadded base64url): what a client sent to this node insists on.
    public var relayKey = ""

    /// The most rooms a node's record lists (its `rooms` count is exact).
    public static let maxListedRooms = 1000
    /// How far apart two nodes' clocks may be: a heartbeat further in the future than this, or older than the record's
    /// lifetime plus this, is not believed (a record copied from an earlier beat replays for at most that long).
    public static let clockToleranceMilliseconds: Int64 = 5_000

    public init(id: String, udp: String, http: String, members: Int, rooms: Int, startedAt: Int64, heartbeatAt: Int64,
                roomMembers: [String: Int] = [:], ports: [UInt16] = [], boot: UInt64 = 0, draining: Bool = false, relayKey: String = "") {
        self.roomMembers = roomMembers
        self.ports = ports
        self.boot = boot
        self.draining = draining
        self.relayKey = relayKey
        self.id = id
        self.udp = udp
        self.http = http
        self.members = members
        self.rooms = rooms
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
    }

    /// Field, value, field, value… as HSET takes them, the `mac` field last; each listed room is a field
    /// `room:<name>` holding its members.
    public func fields(mac: ClusterMAC) -> [String] {
        var out = ["udp", udp, "http", http, "members", String(members), "rooms", String(rooms), "started_at", String(startedAt),
                   "heartbeat_at", String(heartbeatAt), "ports", ports.map(String.init).joined(separator: ","), "boot", String(boot),
                   "draining", draining ? "1" : "0", "key", relayKey]
        for (name, count) in roomMembers.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key })
            .prefix(Self.maxListedRooms) {
            out += ["room:" + name, String(count)]
        }
        return out + ["mac", mac.mac(Self.macParts(id: id, pairs: Self.pairs(out)))]
    }

    /// Why a record read back is not believed.
    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        /// A field is missing or is not a value a node writes.
        case incomplete
        /// Its MAC is missing or does not verify: not written by a node of this cluster (or by one with another secret).
        case unauthenticated
        /// Its heartbeat is too old (a record copied from an earlier beat), or too far in the future.
        case stale, future

        public var description: String {
            switch self {
            case .incomplete: "a field is missing or malformed"
            case .unauthenticated: "its MAC does not verify (not written by a node sharing this cluster's secret)"
            case .stale: "its heartbeat is too old"
            case .future: "its heartbeat is in the future (are the nodes' clocks in step?)"
            }
        }
    }

    /// The record of `id` from HGETALL's flat field/value list, when its MAC verifies under `mac` and its heartbeat
    /// is within `clockToleranceMilliseconds` of `now` (Unix ms) and no older than the record's lifetime.
    public static func verified(id: String, hash: [String], mac: ClusterMAC, now: Int64) -> Result<NodeRecord, Refusal> {
        guard hash.count % 2 == 0, !hash.isEmpty, hash.count <= 2 * (maxListedRooms + 16) else { return .failure(.incomplete) }
        var f: [String: String] = [:]
        for i in stride(from: 0, to: hash.count, by: 2) { f[hash[i]] = hash[i + 1] }
        guard let tag = f.removeValue(forKey: "mac"),
              mac.verifies(tag, macParts(id: id, pairs: f.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })) else {
            return .failure(.unauthenticated)
        }
        guard let udp = f["udp"], let http = f["http"], let members = f["members"].flatMap(Int.init), let rooms = f["rooms"].flatMap(Int.init),
              let started = f["started_at"].flatMap(Int64.init), let beat = f["heartbeat_at"].flatMap(Int64.init),
              let key = f["key"], key.utf8.count == ClusterMAC.textLength else { return .failure(.incomplete) }
        guard beat <= now + clockToleranceMilliseconds else { return .failure(.future) }
        guard beat >= now - Int64(ClusterDirectory.nodeTTLMilliseconds) - clockToleranceMilliseconds else { return .failure(.stale) }
        var listed: [String: Int] = [:]
        for (field, value) in f where field.hasPrefix("room:") {
            if let count = Int(value) { listed[String(field.dropFirst(5))] = count }
        }
        return .success(NodeRecord(id: id, udp: udp, http: http, members: members, rooms: rooms, startedAt: started, heartbeatAt: beat,
                                   roomMembers: listed, ports: (f["ports"] ?? "").split(separator: ",").compactMap { UInt16($0) },
                                   boot: f["boot"].flatMap { UInt64($0) } ?? 0, draining: f["draining"] == "1", relayKey: key))
    }

    /// A flat field/value list as pairs, sorted by field.
    static func pairs(_ flat: [String]) -> [(String, String)] {
        stride(from: 0, to: flat.count - 1, by: 2).map { (flat[$0], flat[$0 + 1]) }.sorted { $0.0 < $1.0 }
    }

    /// What a record's MAC covers: what it is, its id, then every field and value in field order.
    static func macParts(id: String, pairs: [(String, String)]) -> [String] {
        ["node", id] + pairs.flatMap { [$0.0, $0.1] }
    }
}
