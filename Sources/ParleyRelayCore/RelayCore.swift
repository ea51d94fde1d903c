import ParleyAuth
import ParleyCrypto
import ParleyWire

/// The relay's logic for one worker loop: the rooms it owns, their members, signalling sessions and
/// forwarding. Pure: it never touches a socket or a clock. The loop feeds it each received datagram with the
/// time, calls `tick` periodically, and sends everything in `output` afterwards.
///
/// Not thread-safe: one worker thread owns it.
public final class RelayCore {
    /// Settings and relay-wide state.
    public let shared: RelayShared
    /// This worker's index.
    public let workerIndex: Int
    /// Datagrams to send after each call.
    public let output = OutputQueue()
    /// Joins and registers another worker admits: (worker, what, sender). The loop posts them there.
    public internal(set) var handoffs: [(worker: Int, handoff: Handoff, from: PeerAddress)] = []
    /// Forwarded packets for other workers to send to their share of a room's listeners (`FanOutTable.shares`): the
    /// bytes (valid until `outputSent`) and the share's addresses. The worker passes them on (`FanOutRing`).
    public internal(set) var spread: [(worker: Int, bytes: UnsafeRawBufferPointer, addresses: [PeerAddress])] = []
    /// The lines this wakeup's forwarded packets used, for the worker to prefetch at its next wakeup.
    public let hotLines = HotLines()
    /// Counters.
    public var counters: RelayCounters { outbox.counters }
    /// The SSRC the relay uses for its own RTCP on this worker.
    public var relaySSRC: UInt32 { rtcp.relaySSRC }
    /// The CNAME of the streams this worker originates (RTCP SDES and the endpoints' SDP): random, names no one.
    public var relayCNAME: String { "parley-" + String(relaySSRC, radix: 16) }
    /// Opus payload type of plain-RTP endpoints.
    public static let rtpEndpointPayloadType: UInt8 = 111

    let log: LogSink
    /// How every datagram leaves, and what is counted on the way.
    let outbox: Outbox
    var config: RelayCoreConfig { outbox.config }
    /// The rooms this worker owns.
    let rooms: RoomTable
    /// Every session (members, plain-RTP endpoints, presence) by address and connection id.
    let sessions = SessionTable()
    /// Online identities and their direct texts (worker 0 only).
    let presence: PresenceDirectory
    /// Calls between online identities (worker 0 only).
    let calls: CallRouter
    /// RTCP from and to members: reports, NACKs, the relay's receiver reports.
    let rtcp: RTCPFeedback
    /// NACKs to speakers for packets lost on their way in (forward rooms).
    let uplinkRepair: UplinkRepair
    /// Where every random number the core uses comes from.
    let random: RelayRandom
    /// Moves sessions to new addresses once those proved themselves.
    let paths: PathValidator
    var lastHousekeeping = Instant.distantPast
    var shutDown = false
    /// New joins, calls and endpoints are refused: the relay stops (`shutdown`, or `RelayShared.stopping`).
    var shuttingDown: Bool { shutDown || shared.isStopping }
    var backendMessageID: UInt32 = 0
    /// The recordings of this worker's rooms, for the recorder thread to write (`RelayCore+Recording.swift`).
    public let recordings: RecordingTap
    /// Texts to keep and chats to record, for the message store (`RelayCore+StoredTexts.swift`); off without one.
    public let history: TextLog
    /// The core's parts (`CorePart`): WebRTC members, plain-RTP endpoints, the cluster's rooms, room key changes.
    lazy var webRTCMembers = WebRTCMembers(core: self)
    lazy var rtpEndpoints = RTPEndpoints(core: self)
    lazy var cluster = ClusterRooms(core: self)
    lazy var roomKeys = RoomKeyChanges(core: self)
    /// The pass over every session each tick makes: timeouts, retransmissions, receiver reports (`SessionSweep`).
    lazy var sweep = SessionSweep(core: self)
    /// What `tick` runs, in this order, and whose deadlines set `timersDue` (`RelayCore+Timers.swift`).
    lazy var timedParts: [any TimedWork] = [sweep, calls, rooms, roomKeys, cluster]
    /// The one way in: joins and registers, the join budget, the handshake (`Admission`).
    lazy var admission = Admission(core: self)
    /// Messaging: what the message store answers, web pages online for calls (`Messaging`).
    public private(set) lazy var messaging = Messaging(core: self)
    /// The earliest monotonic time at which `tick` has work (see `RelayCore+Timers.swift`).
    public internal(set) var timersDue = Instant.distantPast

    /// A core for worker `workerIndex`. `random` supplies connection ids, session secrets, SSRCs and call room names:
    /// production passes `SystemRandomNumberGenerator` (the default; getrandom on Linux), tests a
    /// `SeededRandomNumberGenerator`, which makes the core deterministic.
    public init(shared: RelayShared, workerIndex: Int, log: LogSink,
                random: any RandomNumberGenerator = SystemRandomNumberGenerator()) {
        self.shared = shared
        self.workerIndex = workerIndex
        self.log = log
        self.outbox = Outbox(output: output, config: shared.config, log: log)
        let random = RelayRandom(random)
        self.random = random
        self.rtcp = RTCPFeedback(relaySSRC: random.ssrc(), sessions: sessions, outbox: outbox)
        self.uplinkRepair = UplinkRepair(rtcp: rtcp, outbox: outbox)
        let history = TextLog()
        self.history = history
        self.presence = PresenceDirectory(outbox: outbox, history: history, chats: ChatBook(shared.chats.map {
            ChatBook.Chat(requester: $0.requester, recipient: $0.recipient, state: $0.state)
        }))
        let recordings = RecordingTap()
        self.recordings = recordings
        self.rooms = RoomTable(shared: shared, workerIndex: workerIndex, outbox: outbox, random: random, recordings: recordings)
        rooms.history = history
        history.enabled = shared.keepsHistory
        // In a cluster a call room may open on any node: its tokens name no one relay.
        self.calls = CallRouter(outbox: outbox, directory: presence, signer: { [shared] in shared.callSigner },
                                relayKey: shared.cluster == nil ? shared.verifier.relayKey : nil,
                                random: random)
        paths = PathValidator(sessions: sessions, outbox: outbox, challenges: shared.pathChallenges)
        calls.sipStandIn = { [presence, shared] identity, stream in
            let p = Presence(id: shared.nextMemberID(), webStream: stream, identity: identity, name: identity,
                             registeredAt: 0)
            p.isSIPStandIn = true
            presence.add(p)
            return p
        }
        cluster.start()
    }

    /// The worker that holds every presence session (the owner of the public port).
    static let presenceWorker = 0

    /// A join or register another worker passed here because this worker admits it (`Admission.handleHandoff`).
    public func handleHandoff(_ handoff: Handoff, from: PeerAddress, now: Moment) {
        admission.handleHandoff(handoff, from: from, now: now)
    }

    /// A fresh SSRC for a new member: in 1…2³¹−1, not the relay's and not another member's of this worker.
    func newMemberSSRC() -> UInt32 {
        var ssrc: UInt32
        repeat { ssrc = random.ssrc() } while ssrc == relaySSRC || sessions.bySSRC[ssrc] != nil
        return ssrc
    }

    /// Members on this worker.
    public var memberCount: Int { sessions.memberCount }
    /// Rooms on this worker.
    public var roomCount: Int { rooms.count }
    /// Members and presence sessions on this worker.
    public var sessionCount: Int { sessions.count }
    /// Whether any member or presence session is connected (the loop ticks often only then).
    public var hasMembers: Bool { sessions.count > 0 }

    /// Clears `output` and `handoffs` after the loop sent them.
    public func outputSent() {
        output.reset()
        handoffs.removeAll(keepingCapacity: true)
        spread.removeAll(keepingCapacity: true)
    }

    // MARK: Datagram dispatch

    /// Handles one received datagram. `viaPublicPort` is true when it arrived on the relay's public port
    /// (or was handed over from the worker that owns that port).
    public func handle(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment, viaPublicPort: Bool = false) {
        outbox.counters.packetsIn &+= 1
        outbox.counters.bytesIn &+= UInt64(bytes.count)
        guard bytes.count > 0 else { return outbox.drop(.unknownProtocol, from: from, now: now) }
        guard bytes.count <= config.maxDatagramSize else { return outbox.drop(.oversize, from: from, now: now) }
        let first = bytes[0]
        if first & 0xC0 == 0x80, !isRTCP(bytes) {
            // The media path marks the timers itself, only when it creates work for `tick`.
            return handleRTP(bytes, from: from, now: now)
        }
        if first == Signalling.magic {
            // Marks the timers itself: an ack or ping from a member only moves that member's channel.
            handleSignalling(bytes, from: from, now: now, viaPublicPort: viaPublicPort)
        } else if first & 0xC0 == 0x80 {
            // RTCP creates no work for `tick`: it answers NACKs at once and only moves `lastHeard` later.
            rtcp.handle(bytes, from: from, now: now)
        } else if first <= 3 {
            webRTCMembers.handleSTUN(bytes, from: from, now: now)  // RFC 7983: 0–3 STUN
        } else if first >= 20 && first <= 63 {
            webRTCMembers.handleDTLS(bytes, from: from, now: now)  // 20–63 DTLS
        } else if first == CascadeCipher.type {
            cluster.handle(bytes, from: from, now: now)  // another node of the cluster
        } else {
            outbox.drop(.unknownProtocol, from: from, now: now)
        }
    }

    // MARK: Snapshots

    /// Rooms and members as they stand (for the HTTP API and tests). A member moving between nodes (a drain) is, for
    /// a moment, a member here and still in the roster of the node it left (or in two other nodes' rosters): listed
    /// once, by identity, as a member here when it is one.
    public func snapshot() -> [RoomSnapshot] {
        rooms.values.sorted { $0.name < $1.name }.map { room in
            room.fanOut.foldCounters()
            var listed = Set(room.members.lazy.filter(\.isLocal).map(\.identity))
            let members = room.members.filter { $0.isLocal || listed.insert($0.identity).inserted }
            var snapshot = RoomSnapshot(name: room.name, mode: room.mode, createdAtUnixMilliseconds: room.createdAtUnixMilliseconds,
                                members: members.map { m in
                                    let s = room.selector.state(of: m.id)
                                    return MemberSnapshot(id: m.id, identity: m.identity, name: m.name, ssrc: m.ssrc, address: m.address,
                                                          muted: m.muted, mutedByRoom: m.mutedByRoom, forwarded: s.forwarded,
                                                          level: AudioLevel.level(loudness: s.loudness),
                                                          joinedAtUnixMilliseconds: m.joinedAtUnixMilliseconds, stats: m.stats,
                                                          packetsLost: m.uplink.receiveStats.cumulativeLost, jitter: m.uplink.receiveStats.jitter,
                                                          roundTrip: m.rtcp.roundTrip,
                                                          transport: !m.isLocal ? "cascade" : m.webrtc != nil ? "webrtc" : m.isRTPEndpoint ? "rtp" : "parley",
                                                          audience: m.traits.isAudience)
                                },
                                forwardedSpeakers: room.selector.forwarded, audienceMode: room.roster.audienceMode,
                                audience: room.roster.audienceCount)
            snapshot.recording = room.recording?.name
            return snapshot
        }
    }

    /// Online identities on this worker (only worker 0 has any): one entry per presence session (device), by
    /// identity, each identity's sessions oldest first.
    public func presenceSnapshot() -> [PresenceSnapshot] {
        presence.byIdentity.keys.sorted().flatMap { identity in
            let devices = presence.sessions(of: identity)
            return devices.map {
                PresenceSnapshot(identity: $0.identity, name: $0.name, address: $0.session?.address ?? PeerAddress(ipv4: 0, port: 0),
                                 registeredAtUnixMilliseconds: $0.registeredAtUnixMilliseconds, callID: $0.call?.id,
                                 presenceID: $0.id, sessions: devices.count, transport: $0.session == nil ? "web" : "parley")
            }
        }
    }

    /// Calls ringing or answered, oldest first.
    public func callSnapshot() -> [CallSnapshot] {
        calls.snapshot()
    }

    /// The recent call events, oldest first, without removing them (at most `callEventCapacity`).
    public var recentCallEvents: [CallEvent] { calls.events.events }

    /// Takes the recent call events, oldest first, and empties the log.
    public func drainCallEvents() -> [CallEvent] { calls.events.drain() }

    /// Call events overwritten in the log before they were drained.
    public var callEventsOverwritten: UInt64 { calls.events.overwritten }
}
