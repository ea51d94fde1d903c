import ParleyAuth
import ParleyCrypto
import ParleyWebRTC
import Synchronization

/// What every worker of one relay shares: configuration, the token verifier, the cookie secret, the
/// relay-wide room budget and id counters. Immutable apart from atomics, so it is safely `Sendable`.
public final class RelayShared: Sendable {
    /// Core settings.
    public let config: RelayCoreConfig
    /// Verifies join tokens (the API keys in force: a reload replaces them, `replaceKeys`).
    public var verifier: TokenVerifier { keys.withLock { $0.verifier } }
    /// The verifier and the call signer, replaced together.
    private let keys: Mutex<(verifier: TokenVerifier, callSigner: TokenSigner?)>
    /// Mints and checks join cookies.
    public let cookies: JoinCookie
    /// Mints and checks the challenges that validate a session's new address.
    public let pathChallenges: PathChallenge
    /// Number of worker loops.
    public let workerCount: Int
    /// The UDP port of each worker, by index (index 0 is the public port).
    public let workerPorts: [UInt16]
    /// The relay's long-term key pair: members' handshakes prove the relay holds it. Nil only in tests of the
    /// cleartext protocol; then every version 2 handshake is dropped.
    public let identity: X25519KeyPair?
    /// Mints the join tokens of call rooms with `config.callTokenKey` (or the first configured key); nil when
    /// the verifier has no such key, and then calls fail at the answer.
    public var callSigner: TokenSigner? { keys.withLock { $0.callSigner } }
    /// In a cluster: where the rooms of other nodes live (kept by the cluster agent); empty alone.
    public let placement = RoomPlacement()
    /// The relay's DTLS certificate and context for WebRTC members (made at start by the runtime, which has the
    /// clock its validity needs; the SDP answers carry its fingerprint). Nil: WebRTC offers are refused.
    public let dtls: DTLSContext?
    /// In a cluster: this node's identity on the relay-to-relay links (cascading); nil alone.
    public let cluster: ClusterIdentity?
    /// Whether a message store keeps texts (the relay opened its database): texts to identities away are kept for
    /// them, and chats are requested, accepted and declined (`TextLog`).
    public let keepsHistory: Bool
    /// The chats the store held at start (worker 0's `ChatBook` begins with them).
    public let chats: [ChatBook.Chat]
    /// Draining (`parley-relay drain`): new joins go to other nodes and members here are asked to move.
    public let draining = Atomic<Bool>(false)
    public var isDraining: Bool { draining.load(ordering: .relaxed) }
    /// Stopping (SIGTERM): no new joins, calls or endpoints, while the members here are told or moved.
    public let stopping = Atomic<Bool>(false)
    /// Whether `stopping` is set.
    public var isStopping: Bool { stopping.load(ordering: .relaxed) }
    private let roomCount = Atomic<Int>(0)
    /// Rooms open per identity that opened them by joining (join path only, never the packet path).
    private let roomsByCreator = Mutex<[String: Int]>([:])
    private let memberIDs = Atomic<UInt32>(0)

    /// Shared state for `workerCount` workers.
    public init(config: RelayCoreConfig, verifier: TokenVerifier, cookieSecret: [UInt8], workerPorts: [UInt16],
                identity: X25519KeyPair? = nil, dtls: DTLSContext? = nil, cluster: ClusterIdentity? = nil,
                keepsHistory: Bool = false, chats: [ChatBook.Chat] = []) {
        self.keepsHistory = keepsHistory
        self.chats = chats
        self.cluster = cluster
        self.config = config
        self.identity = identity
        keys = Mutex((verifier, Self.callSigner(verifier, key: config.callTokenKey)))
        maxRooms = Atomic(config.maxRooms)
        maxRoomsPerIdentity = Atomic(config.maxRoomsPerIdentity)
        self.cookies = JoinCookie(secret: cookieSecret, lifetimeSeconds: config.cookieLifetimeSeconds)
        self.pathChallenges = PathChallenge(secret: Crypto.hmacSHA256(key: cookieSecret, message: Array("parley path challenges".utf8)))
        self.workerCount = max(1, workerPorts.count)
        self.workerPorts = workerPorts.isEmpty ? [0] : workerPorts
        self.dtls = dtls
    }

    /// Replaces the API keys (a reload, SIGHUP): joins and calls from now on are checked and signed with these;
    /// members already in stay.
    public func replaceKeys(_ verifier: TokenVerifier) {
        keys.withLock { $0 = (verifier, Self.callSigner(verifier, key: config.callTokenKey)) }
    }

    /// The signer of call rooms' tokens: `call_token_key`'s, else the first key's.
    private static func callSigner(_ verifier: TokenVerifier, key: String?) -> TokenSigner? {
        (key ?? verifier.keyIDs.first).flatMap { verifier.signer(forKey: $0) }
    }

    /// The relay-wide room limits in force: `config`'s, until a reload replaces them (`replaceRoomLimits`).
    private let maxRooms: Atomic<Int>
    private let maxRoomsPerIdentity: Atomic<Int>

    /// New relay-wide room limits (a reload): rooms open beyond them stay; new ones wait until there is room.
    public func replaceRoomLimits(_ new: RelayCoreConfig) {
        maxRooms.store(new.maxRooms, ordering: .relaxed)
        maxRoomsPerIdentity.store(new.maxRoomsPerIdentity, ordering: .relaxed)
    }

    /// Reserves a room against `maxRooms`; false when the relay is full.
    public func tryReserveRoom() -> Bool {
        let limit = maxRooms.load(ordering: .relaxed)
        while true {
            let current = roomCount.load(ordering: .relaxed)
            guard current < limit else { return false }
            if roomCount.compareExchange(expected: current, desired: current + 1, ordering: .relaxed).exchanged { return true }
        }
    }

    /// Returns a room's reservation.
    public func releaseRoom() { roomCount.subtract(1, ordering: .relaxed) }

    /// Reserves a room opened by `creator`'s join against `maxRoomsPerIdentity` and `maxRooms`; the failure says which.
    func tryReserveRoom(creator: String) -> OpenRoomFailure? {
        let perIdentity = maxRoomsPerIdentity.load(ordering: .relaxed)
        let mine = roomsByCreator.withLock { counts -> Bool in
            let n = counts[creator, default: 0]
            guard n < perIdentity else { return false }
            counts[creator] = n + 1
            return true
        }
        guard mine else {
            return OpenRoomFailure(code: .tooManyRooms,
                reason: "\(creator) already has \(perIdentity) rooms open, the most one identity may open")
        }
        guard tryReserveRoom() else {
            releaseCreator(creator)
            return OpenRoomFailure(code: .tooManyRooms, reason: "the relay has reached its room limit")
        }
        return nil
    }

    /// Returns a room's reservation and its creator's.
    func releaseRoom(creator: String?) {
        releaseRoom()
        if let creator { releaseCreator(creator) }
    }

    private func releaseCreator(_ creator: String) {
        roomsByCreator.withLock { counts in
            let n = counts[creator, default: 1] - 1
            counts[creator] = n > 0 ? n : nil
        }
    }

    /// Rooms open on the relay.
    public var openRooms: Int { roomCount.load(ordering: .relaxed) }

    /// A member id unique for the relay's lifetime.
    public func nextMemberID() -> UInt32 { memberIDs.add(1, ordering: .relaxed).newValue }

    /// The worker that owns a room: FNV-1a of its name, modulo the worker count.
    public func worker(forRoom name: String) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(hash % UInt64(workerCount))
    }
}
