import Foundation
import Synchronization

/// A relay's member of the cluster: on a thread of its own (Redis calls block; no worker ever waits on them), it
/// registers the node with a heartbeat every `interval` (its address and load, `ClusterDirectory.heartbeat`) and reads
/// the live nodes back for the API. Redis going away changes nothing on the media path: the agent keeps trying to
/// reconnect, registers again once it can, and meanwhile shows the nodes it last saw.
public final class ClusterAgent: Sendable {
    /// What the agent knows of the cluster.
    public struct View: Equatable, Sendable {
        /// Live nodes as last read (this one included once registered), by id.
        public var nodes: [NodeRecord] = []
        /// Whether the last heartbeat reached Redis.
        public var connected = false
        /// Why it did not, when it did not.
        public var problem: String?
        /// Rooms of the cluster: name → the id of the node it lives on.
        public var rooms: [String: String] = [:]
        /// Rooms this node has that the directory gives to another node (opened on both at once).
        public var conflicts: [String] = []
    }

    /// This node's id.
    public let nodeID: String
    public let url: ClusterURL
    private let address: @Sendable () -> (udp: String, http: String)
    private let startedAt: Int64
    private let interval: Double
    private let load: @Sendable () -> (members: Int, rooms: [String: Int])
    private let placement: @Sendable ([String: String], [NodeRecord], [String: String]) -> Void
    private let online: @Sendable () -> [String]
    private let ports: [UInt16]
    private let boot: UInt64
    private let draining: @Sendable () -> Bool
    private let log: @Sendable (String) -> Void
    private let state = Mutex(View())
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    /// An agent for the node `nodeID`; `address` (where clients reach its UDP port and its HTTP API) and `load` (its
    /// members and its rooms' member counts) are read at every beat, from the agent's thread; `placement` gets, after each beat, the
    /// directory (room → node id) and the live nodes. `ports` and `boot` go in the node's record for the relay-to-relay
    /// links; `draining` is read at every beat.
    public init(url: ClusterURL, nodeID: String, interval: Double = 1, address: @escaping @Sendable () -> (udp: String, http: String),
                ports: [UInt16] = [], boot: UInt64 = 0, draining: @escaping @Sendable () -> Bool = { false },
                load: @escaping @Sendable () -> (members: Int, rooms: [String: Int]),
                online: @escaping @Sendable () -> [String] = { [] },
                placement: @escaping @Sendable ([String: String], [NodeRecord], [String: String]) -> Void = { _, _, _ in },
                log: @escaping @Sendable (String) -> Void) {
        self.online = online
        self.ports = ports
        self.boot = boot
        self.draining = draining
        self.url = url
        self.nodeID = nodeID
        self.address = address
        self.placement = placement
        self.interval = interval
        self.load = load
        self.log = log
        startedAt = Int64(Date().timeIntervalSince1970 * 1000)
    }

    /// What it knows now.
    public var view: View { state.withLock { $0 } }

    /// Starts the heartbeat thread.
    public func start() {
        let t = Thread { [self] in run() }
        t.name = "parley-cluster"
        t.start()
    }

    /// Leaves the cluster (the node's entry is removed at once, if Redis answers) and stops the thread.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        done.wait()
    }

    private func run() {
        var redis: RedisConnection?
        while true {
            if stopping.load(ordering: .acquiring) {
                if let redis { for c in ClusterDirectory.leave(nodeID) { _ = try? redis.command(c) } }
                done.signal()
                return
            }
            do throws(ClusterError) {
                if redis == nil {
                    redis = try RedisConnection(host: url.host, port: url.port)
                    log("cluster: connected to Redis at \(url.host):\(url.port) as node \(nodeID)")
                }
                try beat(redis!)
            } catch {
                if redis != nil || view.problem == nil { log("cluster: \(error.description); retrying every \(interval) s") }
                redis = nil
                state.withLock {
                    $0.connected = false
                    $0.problem = error.description
                }
            }
            Thread.sleep(forTimeInterval: interval)
        }
    }

    /// One heartbeat, then the live nodes read back (ids whose hash expired are dropped from the set).
    private func beat(_ redis: RedisConnection) throws(ClusterError) {
        let (members, rooms) = load()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let (udp, http) = address()
        let me = NodeRecord(id: nodeID, udp: udp, http: http, members: members, rooms: rooms.count, startedAt: startedAt, heartbeatAt: now,
                            roomMembers: rooms, ports: ports, boot: boot, draining: draining())
        // Every command of the beat and the reads that follow in as few round trips as Redis allows: the heartbeat's
        // transaction in one, the room claims in one (two when some need their lifetime renewed), the reads in two.
        let beatCommands = ClusterDirectory.heartbeat(me, online: online())
        for (c, reply) in zip(beatCommands, try redis.pipeline(beatCommands)) {
            if case .error(let why) = reply { throw ClusterError("Redis refused \(c[0]): \(why)") }
        }
        guard case .array(let ids) = try redis.command(["SMEMBERS", ClusterDirectory.nodesKey]) else {
            throw ClusterError("Redis: SMEMBERS did not answer a set")
        }
        var nodes: [NodeRecord] = []
        let listed = ids.compactMap { if case .string(let id) = $0 { id } else { nil } }
        for (id, reply) in zip(listed, try redis.pipeline(listed.map { ["HGETALL", ClusterDirectory.nodeKey($0)] })) {
            guard case .array(let hash) = reply else { continue }
            if let node = NodeRecord(id: id, hash: hash.compactMap(\.text)) {
                nodes.append(node)
            } else {
                _ = try redis.command(["SREM", ClusterDirectory.nodesKey, id])  // gone: its hash expired
            }
        }
        nodes.sort { $0.id < $1.id }
        // This node's rooms: claimed for it (the first node to open a room keeps it), their lifetimes renewed.
        var conflicts: [String] = []
        let names = rooms.keys.sorted()
        let ttl = String(ClusterDirectory.nodeTTLMilliseconds)
        let claims = try redis.pipeline(names.flatMap { [["SET", ClusterDirectory.roomKey($0), nodeID, "NX", "PX", ttl], ["GET", ClusterDirectory.roomKey($0)]] })
        var renew: [[String]] = []
        for (k, room) in names.enumerated() {
            if case .status = claims[2 * k] { continue }
            if claims[2 * k + 1].text == nodeID { renew.append(["PEXPIRE", ClusterDirectory.roomKey(room), ttl]) } else { conflicts.append(room) }
        }
        if !renew.isEmpty { _ = try redis.pipeline(renew) }
        // The directory: every room's node; the others' rooms go to the workers, with their nodes' addresses.
        var directory: [String: String] = [:]
        if case .array(let keys) = try redis.command(["KEYS", ClusterDirectory.roomKey("*")]), !keys.isEmpty {
            let names = keys.compactMap(\.text)
            if case .array(let owners) = try redis.command(["MGET"] + names) {
                for (key, owner) in zip(names, owners) {
                    if let owner = owner.text { directory[String(key.dropFirst(ClusterDirectory.roomKey("").count))] = owner }
                }
            }
        }
        // Who is online where (the other nodes' presence): identity → node id.
        var onlineElsewhere: [String: String] = [:]
        let others = nodes.filter { $0.id != nodeID }
        for (node, reply) in zip(others, try redis.pipeline(others.map { ["SMEMBERS", ClusterDirectory.onlineKey($0.id)] })) {
            if case .array(let ids) = reply {
                for case .string(let identity) in ids { onlineElsewhere[identity] = node.id }
            }
        }
        let live = Set(nodes.map(\.id))
        placement(directory.filter { live.contains($0.value) }, nodes, onlineElsewhere)
        state.withLock {
            $0.nodes = nodes
            $0.connected = true
            $0.problem = nil
            $0.rooms = directory
            $0.conflicts = conflicts.sorted()
        }
    }
}
