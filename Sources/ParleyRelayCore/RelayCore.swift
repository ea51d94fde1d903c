import ParleyAuth
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
    /// Joins that belong to another worker's room: (worker, datagram, sender). The loop posts them there.
    public internal(set) var handoffs: [(worker: Int, datagram: [UInt8], from: PeerAddress)] = []
    /// Counters.
    public internal(set) var counters = RelayCounters()
    /// The SSRC the relay uses for its own RTCP on this worker.
    public let relaySSRC: UInt32

    let log: LogSink
    var config: RelayCoreConfig { shared.config }
    var rooms: [String: Room] = [:]
    /// The mix-mode rooms among `rooms` (kept apart so the loop's deadline scan touches only them).
    var mixRooms: [Room] = []
    /// Every session (members, plain-RTP endpoints, presence) by address and connection id.
    let sessions = SessionTable()
    /// Members by SSRC (RTCP and NACKs name streams by SSRC).
    var bySSRC: [UInt32: Member] = [:]
    /// Online identities and their calls (used on worker 0 only; see `Presence*.swift`, `Call*.swift`).
    let presence: PresenceDirectory
    /// Where every random number the core uses comes from.
    let random: RelayRandom
    var joinBucket: TokenBucket
    var retryBucket: TokenBucket
    var lastHousekeeping: Int64 = .min / 2
    var dropLogWindow = [Int64](repeating: .min / 2, count: DropReason.allCases.count)
    var shuttingDown = false
    /// Room, member and mute events for the HTTP API's event stream (see `RelayCore+Admin.swift`).
    var events = RelayEventLog(capacity: 1024)
    var backendMessageID: UInt32 = 0
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    /// The earliest monotonic time at which `tick` has work (see `RelayCore+Timers.swift`).
    public internal(set) var timersDue: Int64 = .min

    /// A core for worker `workerIndex`. `random` supplies connection ids, session secrets, SSRCs and call room names:
    /// production passes `SystemRandomNumberGenerator` (the default; getrandom on Linux), tests a
    /// `SeededRandomNumberGenerator`, which makes the core deterministic.
    public init(shared: RelayShared, workerIndex: Int, log: LogSink,
                random: any RandomNumberGenerator = SystemRandomNumberGenerator()) {
        self.shared = shared
        self.workerIndex = workerIndex
        self.log = log
        let random = RelayRandom(random)
        self.random = random
        self.relaySSRC = random.ssrc()
        self.presence = PresenceDirectory(eventCapacity: shared.config.callEventCapacity)
        joinBucket = TokenBucket(ratePerSecond: shared.config.joinsPerSecond, burst: shared.config.joinsPerSecond * 2)
        retryBucket = TokenBucket(ratePerSecond: shared.config.retriesPerSecond, burst: shared.config.retriesPerSecond)
    }

    deinit { scratch.deallocate() }

    /// A fresh SSRC for a new member: in 1…2³¹−1, not the relay's and not another member's of this worker.
    func newMemberSSRC() -> UInt32 {
        var ssrc: UInt32
        repeat { ssrc = random.ssrc() } while ssrc == relaySSRC || bySSRC[ssrc] != nil
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
    }

    // MARK: Datagram dispatch

    /// Handles one received datagram. `viaPublicPort` is true when it arrived on the relay's public port
    /// (or was handed over from the worker that owns that port).
    public func handle(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment, viaPublicPort: Bool = false) {
        counters.packetsIn &+= 1
        counters.bytesIn &+= UInt64(bytes.count)
        guard bytes.count > 0 else { return drop(.unknownProtocol, from: from, now: now) }
        guard bytes.count <= config.maxDatagramSize else { return drop(.oversize, from: from, now: now) }
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
            handleRTCP(bytes, from: from, now: now)
        } else {
            drop(.unknownProtocol, from: from, now: now)
        }
    }

    func drop(_ reason: DropReason, from: PeerAddress, now: Moment) {
        counters.drops[reason.rawValue] &+= 1
        // At most one line per reason every 10 s, so a flood cannot flood the log.
        if log.threshold <= .info, now.monotonic - dropLogWindow[reason.rawValue] >= 10_000_000_000 {
            dropLogWindow[reason.rawValue] = now.monotonic
            log.write(.info, "dropped \(reason.label) from \(from) (count \(counters.drops[reason.rawValue]); further drops of this kind logged at most every 10 s)")
        }
    }

    // MARK: Sending

    /// Sends one unreliable signalling message to `address`; `limit` caps its size (anti-amplification).
    func sendSignal(_ message: SignalMessage, to address: PeerAddress, connectionID: UInt32, ack: UInt32 = 0,
                    viaPublicPort: Bool, limit: Int = Signalling.maxDatagramSize) {
        sendDatagram(SignalDatagram(connectionID: connectionID, sequence: 0, ack: ack, message: message),
                     to: address, viaPublicPort: viaPublicPort, limit: limit)
    }

    /// Sends a refusal in at most `limit` bytes (the size of the request it answers: no refusal amplifies). A reason
    /// too long for that is cut on a UTF-8 boundary; the code always goes out.
    func sendRefusal(_ code: RefusalCode, _ reason: String, to address: PeerAddress, connectionID: UInt32, viaPublicPort: Bool,
                     limit: Int) {
        func datagram(_ reason: String) -> SignalDatagram {
            SignalDatagram(connectionID: connectionID, sequence: 0, ack: 0, message: .refused(code: code, reason: reason))
        }
        var fitted = reason
        if let whole = try? datagram(reason).serialize(into: scratch), whole > limit {
            fitted = reason.prefix(utf8Bytes: reason.utf8.count - (whole - limit))
        }
        // Only a request smaller than a refusal with no reason at all (none parses) goes unanswered.
        sendDatagram(datagram(fitted), to: address, viaPublicPort: viaPublicPort, limit: limit)
    }

    func sendDatagram(_ datagram: SignalDatagram, to address: PeerAddress, viaPublicPort: Bool, limit: Int = Signalling.maxDatagramSize) {
        let space = output.reserve(Signalling.maxDatagramSize)
        guard let n = try? datagram.serialize(into: space) else {
            log.write(.error, "could not serialize \(datagram.message.typeCode) for \(address)")
            return
        }
        guard n <= limit else { return }
        output.commit(space, length: n, to: address, viaPublicPort: viaPublicPort)
        counters.packetsQueued &+= 1
        counters.bytesQueued &+= UInt64(n)
    }

    /// The reliable channel settings of members and presence sessions: `signallingQueueLimit` bounds each queue, and
    /// a member's queue holds at least two events per place in its room plus a margin, so a join storm that fills the
    /// room (an event per join and per leave, before the member could acknowledge them) never removes a member that
    /// keeps up. Joins are rate-limited, so that bound is not an attacker's to grow; texts have their own, smaller one.
    func signallingLimits(roomCapacity: Int = 0) -> ReliableChannel.Limits {
        var limits = ReliableChannel.Limits()
        limits.maxPending = max(config.signallingQueueLimit, 2 * roomCapacity + 64)
        return limits
    }

    /// Queues a reliable message to a session (sent by the next `pump`). A speaker list or mute event replaces an
    /// older one still waiting (a member that acknowledges slowly gets the newest state, not a backlog). A message
    /// that does not fit the session's full queue marks its channel `overflowed`, and the next `tick` removes it.
    func enqueue(_ message: SignalMessage, to session: SignallingSession) {
        guard session.signals else { return }  // plain RTP: no signalling
        if message.replacesOlderCopies {
            let replaced = session.channel.dropWaiting { message.supersedes($0) }
            counters.signallingDrops[SignallingDropReason.superseded.rawValue] &+= UInt64(replaced)
        }
        session.channel.enqueue(message)
    }

    /// The reason (and goodbye) a session whose signalling queue overflowed is removed with.
    static let notKeepingUp = "not keeping up with signalling"

    /// Counts a session removed because its queue overflowed, and the messages it could not take.
    func countSlowSession(_ channel: ReliableChannel) {
        counters.slowSessionsRemoved &+= 1
        counters.signallingDrops[SignallingDropReason.queueFull.rawValue] &+= UInt64(channel.refused)
    }

    /// Whether a recipient can take a text of `fragments` fragments now (`textQueueLimit`); counts a refusal.
    func canTakeText(_ channel: ReliableChannel, fragments: Int) -> Bool {
        guard channel.hasRoom(for: fragments, within: config.textQueueLimit) else {
            counters.signallingDrops[SignallingDropReason.textRefused.rawValue] &+= 1
            return false
        }
        return true
    }

    /// Sends what the session's reliable channel has due, or a bare ack if one is owed.
    func pump(_ session: SignallingSession, now: Moment) {
        guard session.signals else { return }
        let due = session.channel.transmissions(now: now.monotonic)
        for t in due {
            if t.isRetransmission { counters.signallingRetransmissions &+= 1 }
            sendDatagram(SignalDatagram(connectionID: session.connectionID, sequence: t.sequence, ack: session.channel.ackNumber,
                                        message: t.message), to: session.address, viaPublicPort: session.viaPublicPort)
        }
        if !due.isEmpty {
            session.channel.ackSent()
        } else if session.channel.ackOwed {
            sendSignal(.ack, to: session.address, connectionID: session.connectionID, ack: session.channel.ackNumber,
                       viaPublicPort: session.viaPublicPort)
            session.channel.ackSent()
        }
    }

    /// Queues a reliable message to a session and sends it.
    func send(_ message: SignalMessage, to session: SignallingSession, now: Moment) {
        enqueue(message, to: session)
        pump(session, now: now)
    }

    /// Tells a session it is being removed and why (unreliable: nothing will retransmit it).
    func sayGoodbye(_ code: GoodbyeCode, _ reason: String, to session: SignallingSession) {
        guard session.signals else { return }
        sendSignal(.goodbye(code: code, reason: reason), to: session.address, connectionID: session.connectionID,
                   ack: session.channel.ackNumber, viaPublicPort: session.viaPublicPort)
    }

    /// Queues a message to every member of a room except `except` (and those `including` leaves out), and pumps them.
    func broadcast(_ message: SignalMessage, in room: Room, except: Member? = nil, including: (Member) -> Bool = { _ in true },
                   now: Moment) {
        for m in room.members where m !== except && including(m) {
            send(message, to: m.session, now: now)
        }
    }

    // MARK: Snapshots

    /// Rooms and members as they stand (for the HTTP API and tests).
    public func snapshot() -> [RoomSnapshot] {
        rooms.values.sorted { $0.name < $1.name }.map { room in
            room.fanOut.foldCounters()
            return RoomSnapshot(name: room.name, mode: room.mode, createdAtUnixMilliseconds: room.createdAtUnixMilliseconds,
                                members: room.members.map { m in
                                    let s = room.selector.state(of: m.id)
                                    return MemberSnapshot(id: m.id, identity: m.identity, name: m.name, ssrc: m.ssrc, address: m.address,
                                                          muted: m.muted, forwarded: s.forwarded,
                                                          level: UInt8(max(0, min(127, (127 - s.loudness).rounded()))),
                                                          joinedAtUnixMilliseconds: m.joinedAtUnixMilliseconds, stats: m.stats,
                                                          packetsLost: m.receiveStats.cumulativeLost, jitter: m.receiveStats.jitter)
                                },
                                forwardedSpeakers: room.selector.forwarded)
        }
    }
}

/// A token bucket: `take()` succeeds while tokens remain, refilled at `ratePerSecond` up to `burst`.
struct TokenBucket {
    let ratePerSecond: Double
    let burst: Double
    var tokens: Double
    var last: Int64 = 0

    init(ratePerSecond: Double, burst: Double) {
        self.ratePerSecond = ratePerSecond
        self.burst = max(1, burst)
        self.tokens = max(1, burst)
    }

    mutating func take(now: Int64) -> Bool {
        let elapsed = Double(max(0, now - last)) / 1e9
        last = now
        tokens = min(burst, tokens + elapsed * ratePerSecond)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
