import ParleyCrypto
import ParleyWire
import Synchronization

/// This node in a cluster: its id, the key other nodes know it by on the relay-to-relay links (FNV-1a 64 of the id),
/// this start's random `boot`, and the root of the links' keys (from the API secret every node shares; see
/// `CascadeCipher`).
public struct ClusterIdentity: Sendable {
    public let nodeID: String
    public let key: UInt64
    public let boot: UInt64
    public let root: [UInt8]

    public init(nodeID: String, secret: [UInt8], boot: UInt64) {
        self.nodeID = nodeID
        self.key = Self.key(of: nodeID)
        self.boot = boot
        self.root = CascadeCipher.root(secret: secret)
    }

    /// FNV-1a 64 of a node id.
    public static func key(of id: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in id.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }
}

/// One live node as the directory last showed it (a record whose MAC verified: `NodeRecord.verified`).
public struct ClusterNode: Sendable, Equatable {
    public var id: String
    /// Where clients reach it (`host:port`).
    public var udp: String { didSet { host = PeerAddress(parsing: udp) } }
    /// `udp` parsed (the links' sender check reads it without parsing again).
    private(set) var host: PeerAddress?
    /// Its workers' UDP ports (worker 0's is `udp`'s), for the relay-to-relay links.
    public var ports: [UInt16]
    /// Its current start (`ClusterIdentity.boot`).
    public var boot: UInt64
    /// Its rooms and their members (the fullest `NodeRecord.maxListedRooms`).
    public var roomMembers: [String: Int]
    /// Draining: it takes no new joins and its members are moving away.
    public var draining: Bool
    /// Its load: members connected to it.
    public var members: Int
    /// Its relay key (base64url), from its record: a client sent there insists on it.
    public var relayKey: String

    public init(id: String, udp: String, ports: [UInt16] = [], boot: UInt64 = 0, roomMembers: [String: Int] = [:], draining: Bool = false,
                members: Int = 0, relayKey: String) {
        self.members = members
        self.id = id
        self.udp = udp
        self.host = PeerAddress(parsing: udp)
        self.ports = ports
        self.boot = boot
        self.roomMembers = roomMembers
        self.draining = draining
        self.relayKey = relayKey
    }

    /// Where a client is sent to reach this node: its address and its key (nil when either is unusable: no client
    /// is ever sent there).
    public var pointer: NodePointer? { host.flatMap { NodePointer(address: $0, relayKey: relayKey) } }

    var key: UInt64 { ClusterIdentity.key(of: id) }

    /// The address of the worker that owns `room` on this node (its rooms spread over its workers as ours do).
    func address(forRoom room: String) -> (address: PeerAddress, worker: UInt8)? {
        guard let host, !ports.isEmpty else { return nil }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in room.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let w = Int(hash % UInt64(ports.count))
        var a = host
        a.port = ports[w]
        return (a, UInt8(w))
    }
}

/// In a cluster, where a room that is not open here belongs, and which nodes share a room with this one. A join for a
/// room that lives elsewhere is refused with `roomElsewhere` and that node's pointer (its UDP address and relay key,
/// `NodePointer`), and the client joins there,
/// unless the room's node already holds `cascade_after` of its members (or is draining): then this node takes the
/// join and cascades (`RelayCore+Cascade.swift`). A room open on a live node belongs there (the directory); a new room
/// belongs to the live node that rendezvous hashing picks for its name (the highest FNV-1a hash of room and node id),
/// which every node works out alike from the same node list, so a burst of joins through several nodes opens it on
/// one. Written by the cluster agent's thread, read on the join path and by the workers' housekeeping (never per
/// packet).
public final class RoomPlacement: Sendable {
    private struct State {
        /// Room → the id of the node the directory gives it to.
        var rooms: [String: String] = [:]
        var nodes: [String: ClusterNode] = [:]
        var selfID = ""
        /// Identities online on other nodes → that node's id.
        var online: [String: String] = [:]
    }
    private let state = Mutex(State())

    public init() {}

    /// Replaces what the directory said: each room's node (room → node id), the live nodes (this one included) and
    /// this node's id.
    public func update(rooms: [String: String], nodes: [ClusterNode], selfID: String, online: [String: String] = [:]) {
        state.withLock {
            $0 = State(rooms: rooms, nodes: Dictionary(nodes.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }), selfID: selfID,
                       online: online)
        }
    }

    /// The key of the live node (not this one) `identity` is online on, if any.
    func node(online identity: String) -> UInt64? {
        state.withLock { s in
            guard let id = s.online[identity], id != s.selfID, let n = s.nodes[id] else { return nil }
            return n.key
        }
    }

    /// The address of worker 0 (presence) of node `key`.
    func presenceAddress(ofNode key: UInt64) -> PeerAddress? {
        state.withLock { s in
            guard let n = s.nodes.values.first(where: { $0.key == key }), var a = n.host, let port = n.ports.first else { return nil }
            a.port = port
            return a
        }
    }

    /// The same from rooms placed by UDP address alone (tests): each address stands for a node of that id, all with
    /// `relayKey`.
    public func update(_ elsewhere: [String: String], nodes: [(id: String, udp: String)] = [], selfID: String = "", relayKey: String) {
        var all = nodes.map { ClusterNode(id: $0.id, udp: $0.udp, relayKey: relayKey) }
        for udp in Set(elsewhere.values) where !all.contains(where: { $0.udp == udp }) { all.append(ClusterNode(id: udp, udp: udp, relayKey: relayKey)) }
        let byUDP = Dictionary(all.map { ($0.udp, $0.id) }, uniquingKeysWith: { a, _ in a })
        update(rooms: elsewhere.mapValues { byUDP[$0] ?? $0 }, nodes: all, selfID: selfID)
    }

    /// The other live nodes that take joins (a welcome's alternates), by id: where a client goes and the key it
    /// insists on there.
    public func otherNodes() -> [NodePointer] {
        state.withLock { s in s.nodes.values.filter { $0.id != s.selfID && !$0.draining }.sorted { $0.id < $1.id }.compactMap(\.pointer) }
    }

    /// The node a room belongs to, when that is another node (nil: here).
    public func node(for room: String) -> NodePointer? { node(for: room, cascadeAfter: Int.max) }

    /// Where a join for `room` goes: nil to take it here, else the node it belongs to (its address and key). Only a
    /// node a client can be sent to (`ClusterNode.pointer`) is ever picked. A room's
    /// node is the one the directory names (while it is live and not draining), else the rendezvous hash's pick among
    /// the nodes that take joins and are not much fuller than the emptiest (`acceptsNewRooms`): placement by load,
    /// which every node works out alike from the same directory. A join stays here when that is this node, or when that node already holds
    /// `cascadeAfter` of the room's members (this node then cascades). A draining node sends every join away: to a
    /// node that has members of the room, else to the pick among the others (nil: there is none).
    public func node(for room: String, cascadeAfter: Int, draining: Bool = false) -> NodePointer? {
        state.withLock { s in
            let others = s.nodes.values.filter { $0.id != s.selfID && !$0.draining && $0.pointer != nil }
            if draining {
                if let sharing = others.filter({ ($0.roomMembers[room] ?? 0) > 0 }).max(by: { ($0.roomMembers[room] ?? 0, $1.id) < ($1.roomMembers[room] ?? 0, $0.id) }) {
                    return sharing.pointer
                }
                return others.max { Self.score(room, $0.id) < Self.score(room, $1.id) }?.pointer
            }
            let owner: ClusterNode?
            if let id = s.rooms[room], let n = s.nodes[id], (!n.draining && n.pointer != nil) || id == s.selfID {
                owner = id == s.selfID ? nil : n
            } else {
                guard !others.isEmpty else { return nil }
                let me = s.nodes[s.selfID]
                let least = (others + (me.map { [$0] } ?? [])).map(\.members).min() ?? 0
                let open = others.filter { Self.acceptsNewRooms($0.members, least: least) }
                let meOpen = Self.acceptsNewRooms(me?.members ?? 0, least: least)
                guard let pick = open.max(by: { Self.score(room, $0.id) < Self.score(room, $1.id) }) else { return nil }
                owner = meOpen && Self.score(room, s.selfID) > Self.score(room, pick.id) ? nil : pick
            }
            guard let owner, (owner.roomMembers[room] ?? 0) < cascadeAfter else { return nil }
            return owner.pointer
        }
    }

    /// Whether a node with `members` takes new rooms, the emptiest live node having `least`: within a quarter (and 50
    /// members) of it. While loads are even every node does, and rooms spread by hash.
    static func acceptsNewRooms(_ members: Int, least: Int) -> Bool { members <= least + least / 4 + 50 }

    /// The id of the live node `pointer` names (the sentence a drained member's room hears names it).
    func nodeID(of pointer: NodePointer) -> String? {
        state.withLock { s in s.nodes.values.first { $0.pointer == pointer }?.id }
    }

    /// Where a client reaches node `key` (a drained member goes there): its address and relay key.
    func pointer(toNode key: UInt64) -> NodePointer? {
        state.withLock { s in s.nodes.values.first { $0.key == key && !$0.draining }?.pointer }
    }

    /// The other nodes that have `room` (the directory lists it in their records) or that it belongs to: where this
    /// node's part of the room goes. Each with the address of the worker that owns the room there, and the node's key.
    func cascadeTargets(for room: String) -> [(key: UInt64, address: PeerAddress, worker: UInt8)] {
        state.withLock { s in
            // The rendezvous node: the hash's pick among all live nodes (this one included), as every node works it out.
            let pick = s.nodes.values.max { Self.score(room, $0.id) < Self.score(room, $1.id) }?.id
            return s.nodes.values.compactMap { n -> (UInt64, PeerAddress, UInt8)? in
                guard n.id != s.selfID, n.roomMembers[room] != nil || s.rooms[room] == n.id || n.id == pick,
                      let a = n.address(forRoom: room) else { return nil }
                return (n.key, a.address, a.worker)
            }
        }
    }

    /// The worker address of node `key` for `room` (a peer another node named), when that node is live.
    func address(ofNode key: UInt64, room: String) -> (address: PeerAddress, worker: UInt8)? {
        state.withLock { s in s.nodes.values.first { $0.key == key && $0.id != s.selfID }?.address(forRoom: room) }
    }

    /// Whether node `key` is live in its start `boot` and `from` is one of its workers' addresses.
    func isLive(node key: UInt64, boot: UInt64, from: PeerAddress) -> Bool {
        state.withLock { s in
            guard let n = s.nodes.values.first(where: { $0.key == key }), n.boot == boot, var host = n.host else { return false }
            host.port = from.port
            return host == from && n.ports.contains(from.port)
        }
    }

    /// FNV-1a 64 of room, a zero byte and node id: the same in every process (Swift's `Hasher` is seeded per process).
    static func score(_ room: String, _ node: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in room.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        h = (h ^ 0) &* 0x100_0000_01b3
        for b in node.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }
}
