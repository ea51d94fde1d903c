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
        /// Node records and room claims the last read did not believe (no valid MAC, a stale heartbeat, a node not
        /// live): written by something other than a node of this cluster, or left from an earlier start.
        public var ignored = 0
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
    private let relayKey: String
    private let mac: ClusterMAC
    private let draining: @Sendable () -> Bool
    private let log: @Sendable (String) -> Void
    private let state = Mutex(View())
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    /// What was ignored and logged already (each said once; at most `maxLoggedIgnored`).
    private let loggedIgnored = Mutex(Set<String>())
    static let maxLoggedIgnored = 1_000

    /// An agent for the node `nodeID`; `address` (where clients reach its UDP port and its HTTP API) and `load` (its
    /// members and its rooms' member counts) are read at every beat, from the agent's thread; `placement` gets, after each beat, the
    /// directory (room → node id) and the live nodes. `ports` and `boot` go in the node's record for the relay-to-relay
    /// links, `relayKey` (the relay's public key, base64url) for the clients sent here; `draining` is read at every
    /// beat. `mac` (the directory's, from the secret every node shares) signs this node's record and claims, and is
    /// what every record and claim read back must carry to be believed.
    public init(url: ClusterURL, nodeID: String, interval: Double = 1, address: @escaping @Sendable () -> (udp: String, http: String),
                ports: [UInt16] = [], boot: UInt64 = 0, relayKey: String, mac: ClusterMAC, draining: @escaping @Sendable () -> Bool = { false },
                load: @escaping @Sendable () -> (members: Int, rooms: [String: Int]),
                online: @escaping @Sendable () -> [String] = { [] },
                placement: @escaping @Sendable ([String: String], [NodeRecord], [String: String]) -> Void = { _, _, _ in },
                log: @escaping @Sendable (String) -> Void) {
        self.online = online
        self.ports = ports
        self.boot = boot
        self.relayKey = relayKey
        self.mac = mac
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
                    redis = try RedisConnection(url: url)
                    log("cluster: connected to Redis at \(url) as node \(nodeID)")
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

    /// Logs that `what` was ignored and why, once per `what` (at most `maxLoggedIgnored` different ones).
    private func logIgnored(_ what: String, _ why: String) {
        let first = loggedIgnored.withLock { seen -> Bool in
            guard seen.count < Self.maxLoggedIgnored, !seen.contains(what) else { return false }
            seen.insert(what)
            return true
        }
        if first { log("cluster: ignored \(what): \(why)") }
    }

    /// One heartbeat, then the live nodes read back: only records whose MAC verifies and whose heartbeat is recent
    /// (ids whose hash expired are dropped from the set), only room claims that verify and name a live node's start.
    private func beat(_ redis: RedisConnection) throws(ClusterError) {
        let (members, rooms) = load()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let (udp, http) = address()
        let me = NodeRecord(id: nodeID, udp: udp, http: http, members: members, rooms: rooms.count, startedAt: startedAt, heartbeatAt: now,
                            roomMembers: rooms, ports: ports, boot: boot, draining: draining(), relayKey: relayKey)
        // Every command of the beat and the reads that follow in as few round trips as Redis allows: the heartbeat's
        // transaction in one, the room claims in one (two when some need their lifetime renewed or a claim replaced),
        // the reads in a few (SCAN pages the rooms).
        let beatCommands = ClusterDirectory.heartbeat(me, online: online(), mac: mac)
        for (c, reply) in zip(beatCommands, try redis.pipeline(beatCommands)) {
            if case .error(let why) = reply { throw ClusterError("Redis refused \(c[0]): \(why)") }
        }
        guard case .array(let ids) = try redis.command(["SMEMBERS", ClusterDirectory.nodesKey]) else {
            throw ClusterError("Redis: SMEMBERS did not answer a set")
        }
        var nodes: [NodeRecord] = []
        var ignored = 0
        let listed = ids.compactMap { if case .string(let id) = $0 { id } else { nil } }.prefix(ClusterDirectory.maxNodesRead)
        for (id, reply) in zip(listed, try redis.pipeline(listed.map { ["HGETALL", ClusterDirectory.nodeKey($0)] })) {
            guard case .array(let hash) = reply else { continue }
            guard !hash.isEmpty else {
                _ = try redis.command(["SREM", ClusterDirectory.nodesKey, id])  // gone: its hash expired
                continue
            }
            switch NodeRecord.verified(id: id, hash: hash.compactMap(\.text), mac: mac, now: now) {
            case .success(let node): nodes.append(node)
            case .failure(let refusal):
                ignored += 1
                logIgnored("the record of node \(id)", refusal.description)
            }
        }
        nodes.sort { $0.id < $1.id }
        let live = Dictionary(nodes.map { ($0.id, $0.boot) }, uniquingKeysWith: { a, _ in a })
        // This node's rooms: claimed for it (the first node to open a room keeps it), their lifetimes renewed. An entry
        // that is not a live node's valid claim (forged, or left by a node gone) is replaced by ours.
        var conflicts: [String] = []
        let names = rooms.keys.sorted()
        let ttl = String(ClusterDirectory.nodeTTLMilliseconds)
        let mine = RoomClaim(node: nodeID, boot: boot)
        let claims = try redis.pipeline(names.flatMap {
            [["SET", ClusterDirectory.roomKey($0), mine.value(room: $0, mac: mac), "NX", "PX", ttl], ["GET", ClusterDirectory.roomKey($0)]]
        })
        var renew: [[String]] = []
        for (k, room) in names.enumerated() {
            if case .status = claims[2 * k] { continue }
            let value = claims[2 * k + 1].text ?? ""
            if value == mine.value(room: room, mac: mac) {
                renew.append(["PEXPIRE", ClusterDirectory.roomKey(room), ttl])
            } else if let other = RoomClaim(room: room, value: value, mac: mac), other.node != nodeID, live[other.node] == other.boot {
                conflicts.append(room)
            } else {
                renew.append(["SET", ClusterDirectory.roomKey(room), mine.value(room: room, mac: mac), "PX", ttl])
            }
        }
        if !renew.isEmpty { _ = try redis.pipeline(renew) }
        // The directory: every room's node; the others' rooms go to the workers, with their nodes' addresses.
        var directory: [String: String] = [:]
        let keys = try scan(redis, match: ClusterDirectory.roomPattern, limit: ClusterDirectory.maxRoomsRead)
        let prefix = ClusterDirectory.roomKey("").count
        var chunks: [[String]] = []
        for start in stride(from: 0, to: keys.count, by: 1_000) { chunks.append(Array(keys[start..<min(keys.count, start + 1_000)])) }
        for (chunk, reply) in zip(chunks, try redis.pipeline(chunks.map { ["MGET"] + $0 })) {
            guard case .array(let owners) = reply else { continue }
            for (key, owner) in zip(chunk, owners) {
                guard let value = owner.text else { continue }  // expired between SCAN and MGET
                let room = String(key.dropFirst(prefix))
                if let claim = RoomClaim(room: room, value: value, mac: mac), live[claim.node] == claim.boot {
                    directory[room] = claim.node
                } else if RoomClaim(room: room, value: value, mac: mac) == nil {
                    ignored += 1
                    logIgnored("the claim on room \(room)", "its MAC does not verify (not written by a node sharing this cluster's secret)")
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
        placement(directory, nodes, onlineElsewhere)
        state.withLock {
            $0.nodes = nodes
            $0.connected = true
            $0.problem = nil
            $0.rooms = directory
            $0.conflicts = conflicts.sorted()
            $0.ignored = ignored
        }
    }

    /// The keys matching `pattern`, by SCAN (never KEYS, which blocks Redis while it walks every key), at most `limit`
    /// of them (a directory planted with more is read only that far, and the log says so once).
    private func scan(_ redis: RedisConnection, match pattern: String, limit: Int) throws(ClusterError) -> [String] {
        var keys = Set<String>()
        var cursor = "0"
        repeat {
            guard case .array(let page) = try redis.command(["SCAN", cursor, "MATCH", pattern, "COUNT", "1000"]), page.count == 2,
                  let next = page[0].text, case .array(let found) = page[1] else { throw ClusterError("Redis: SCAN did not answer a page") }
            for key in found { if let k = key.text { keys.insert(k) } }
            cursor = next
        } while cursor != "0" && keys.count < limit
        if keys.count >= limit { logIgnored("room entries past the first \(limit)", "the directory holds more than a node reads") }
        return Array(keys.prefix(limit))
    }
}
