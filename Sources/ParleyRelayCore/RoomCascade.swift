import ParleyCrypto
import ParleyWire

/// One worker's end of the relay-to-relay links: the sealer for what it sends, the opener for what it receives, and
/// scratch space for bodies built on the packet path.
final class CascadeLink {
    let identity: ClusterIdentity
    let sealer: CascadeSealer
    let opener: CascadeOpener
    /// A body being built (media and mix: prefix and packet), sealed once per peer into the output arena.
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)

    init(identity: ClusterIdentity, worker: Int) {
        self.identity = identity
        sealer = CascadeSealer(root: identity.root, node: identity.key, boot: identity.boot, worker: UInt8(truncatingIfNeeded: worker))
        opener = CascadeOpener(root: identity.root, worker: UInt8(truncatingIfNeeded: worker))
    }

    deinit { scratch.deallocate() }
}

/// A room's part in a cluster: the other nodes that have members in it (its peers), what each said it has, and
/// where this node's speakers go.
///
/// A room spans nodes by cascading. Every node with members of the room sends each of its own speakers' packets once to
/// every peer with members (forward mode) and fans out locally what it receives: its listeners hear the loudest
/// `max_forwarded_speakers` of the whole room, because each node sends every speaker that is among the loudest of what
/// it sees, and every node then sees at least the room's loudest. A mix room mixes on one node (the highest rendezvous
/// hash of room and node among the nodes with members, which they all work out alike); the others send it their
/// speakers and receive one mix for all their members that are not heard in it, plus a minus-one mix for each of
/// their members who is.
///
/// Rosters carry each node's members (the announced ones; an audience is counted) at least once a second and within
/// 100 ms of a change. A peer silent for `peerTimeout` is gone, and its members with it.
final class RoomCascade {
    final class Peer {
        let key: UInt64
        /// Where the worker owning the room on that node is.
        var address: PeerAddress
        var worker: UInt8
        /// When its last roster part arrived (nil: not heard yet, only named by the directory or a peer).
        var heardAt: Instant?
        /// When the directory or a peer last named it (a peer never heard is dropped `peerTimeout` after that).
        var namedAt: Instant
        /// The roster epoch being assembled, its parts so far and how many it has.
        var epoch: UInt32?
        var parts: [UInt8: CascadeRoster] = [:]
        /// Its members here, by their id there; its audience count.
        var members: [UInt32: Member] = [:]
        var audience = 0

        init(key: UInt64, address: PeerAddress, worker: UInt8, now: Instant) {
            self.key = key
            self.address = address
            self.worker = worker
            self.namedAt = now
        }

        var hasMembers: Bool { !members.isEmpty || audience > 0 }
    }

    var peers: [UInt64: Peer] = [:]
    /// Where this node's speakers' packets go: every peer with members (forward mode), or the mixing node (mix mode,
    /// when it is not this one).
    private(set) var mediaTargets: [(address: PeerAddress, worker: UInt8)] = []
    /// Peers that receive this node's mix (mix mode, when this node mixes): those with members.
    private(set) var mixTargets: [Peer] = []
    /// The node that mixes (mix mode): this node's key when it is this one.
    private(set) var mixer: UInt64
    var mixesHere: Bool { mixer == selfKey }
    let selfKey: UInt64
    /// A roster is owed (a member joined, left or changed here, or a new peer appeared).
    var dirty = true
    var lastRoster = Instant.distantPast
    var lastDiscovery = Instant.distantPast
    var epoch: UInt32 = 0

    static let peerTimeout = Interval.milliseconds(3_500)
    static let rosterInterval = Interval.seconds(1)

    init(selfKey: UInt64) {
        self.selfKey = selfKey
        mixer = selfKey
    }

    /// Recomputes where media goes after peers or this node's members changed.
    func retarget(room: Room) {
        let live = peers.values.filter { $0.heardAt != nil && $0.hasMembers }.sorted { $0.key < $1.key }
        var candidates = live.map(\.key)
        if room.hasLocalMembers { candidates.append(selfKey) }
        mixer = candidates.max { Self.score(room.name, $0) < Self.score(room.name, $1) } ?? selfKey
        if room.forwards {
            mediaTargets = live.map { ($0.address, $0.worker) }
            mixTargets = []
        } else if mixesHere {
            mediaTargets = []
            mixTargets = live
        } else {
            mediaTargets = live.filter { $0.key == mixer }.map { ($0.address, $0.worker) }
            mixTargets = []
        }
    }

    /// FNV-1a 64 of room name and node key: where a mix room mixes.
    static func score(_ room: String, _ node: UInt64) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in room.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        for i in 0..<8 { h = (h ^ (node >> (8 * UInt64(i)) & 0xFF)) &* 0x100_0000_01b3 }
        return h
    }
}
