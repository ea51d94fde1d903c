import ParleyCrypto
import ParleyWire

/// How every datagram a core sends leaves it, and what is counted on the way: unreliable signals and refusals (each
/// capped in size against amplification), the reliable channel of each session (queue, pump, goodbye), dropped
/// datagrams (logged at most once per reason every 10 s) and the core's counters. Media is appended to `output` by
/// the forwarding loop directly. Owned by one `RelayCore` (one thread); its parts share it.
final class Outbox {
    /// Datagrams to send after each call into the core (the core's `output`).
    let output: OutputQueue
    /// Counters.
    var counters = RelayCounters()
    /// The worker's core settings: the start's, until a reload replaces them (`RelayCore.reconfigure`).
    var config: RelayCoreConfig
    let log: LogSink
    /// Answers to addresses not yet verified (cookies, path challenges) this worker sends per second.
    private var unverifiedAnswers: TokenBucket
    private var dropLogWindow = [Instant](repeating: .distantPast, count: DropReason.allCases.count)
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    /// Where a sealed datagram is opened (its plaintext is read before the next one arrives).
    let openScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)

    init(output: OutputQueue, config: RelayCoreConfig, log: LogSink) {
        self.output = output
        self.config = config
        self.log = log
        unverifiedAnswers = TokenBucket(ratePerSecond: config.retriesPerSecond, burst: config.retriesPerSecond)
    }

    /// Takes one answer to an unverified address from the worker's budget (`retriesPerSecond`); false when spent.
    func takeUnverifiedAnswer(now: Instant) -> Bool { unverifiedAnswers.take(now: now) }

    deinit {
        scratch.deallocate()
        openScratch.deallocate()
    }

    /// Drops of one kind are logged at most once per this interval.
    static let dropLogInterval = Interval.seconds(10)

    func drop(_ reason: DropReason, from: PeerAddress, now: Moment) {
        counters.drops[reason.rawValue] &+= 1
        // At most one line per reason every 10 s, so a flood cannot flood the log.
        if log.threshold <= .info, now.monotonic - dropLogWindow[reason.rawValue] >= Self.dropLogInterval {
            dropLogWindow[reason.rawValue] = now.monotonic
            log.write(.info, "dropped \(reason.label) from \(from) (count \(counters.drops[reason.rawValue]); further drops of this kind logged at most every 10 s)")
        }
    }

    /// Sends one unreliable signalling message to `address`; `limit` caps its size (anti-amplification). With
    /// `sealedWith` it goes out sealed (`SignallingEnvelope`) with that channel.
    func sendSignal(_ message: SignalMessage, to address: PeerAddress, connectionID: UInt32, ack: UInt32 = 0,
                    viaPublicPort: Bool, limit: Int = Signalling.maxDatagramSize, sealedWith channel: SealedChannel? = nil) {
        sendDatagram(SignalDatagram(connectionID: connectionID, sequence: 0, ack: ack, message: message),
                     to: address, viaPublicPort: viaPublicPort, limit: limit, sealedWith: channel)
    }

    /// Sends one unreliable message to a session, at its address, with its acknowledgement, sealed when it is.
    func sendSignal(_ message: SignalMessage, to session: RelaySession) {
        sendSignal(message, to: session.address, connectionID: session.connectionID, ack: session.channel.ackNumber,
                   viaPublicPort: session.viaPublicPort, sealedWith: session.sealed)
    }

    /// Sends a refusal in at most `limit` bytes (the size of the request it answers: no refusal amplifies). A reason
    /// too long for that is cut on a UTF-8 boundary; the code always goes out.
    func sendRefusal(_ code: RefusalCode, _ reason: String, to address: PeerAddress, connectionID: UInt32, viaPublicPort: Bool,
                     limit: Int, sealedWith channel: SealedChannel? = nil) {
        func datagram(_ reason: String) -> SignalDatagram {
            SignalDatagram(connectionID: connectionID, sequence: 0, ack: 0, message: .refused(code: code, reason: reason))
        }
        let overhead = channel == nil ? 0 : SignallingEnvelope.sealedOverhead
        var fitted = reason
        if let whole = try? datagram(reason).serialize(into: scratch), whole + overhead > limit {
            fitted = reason.prefix(utf8Bytes: max(0, reason.utf8.count - (whole + overhead - limit)))
        }
        // Only a request smaller than a refusal with no reason at all (none parses) goes unanswered.
        sendDatagram(datagram(fitted), to: address, viaPublicPort: viaPublicPort, limit: limit, sealedWith: channel)
    }

    /// Sends a datagram, sealed with `channel` when given; nothing goes out when it would exceed `limit` bytes.
    func sendDatagram(_ datagram: SignalDatagram, to address: PeerAddress, viaPublicPort: Bool, limit: Int = Signalling.maxDatagramSize,
                      sealedWith channel: SealedChannel? = nil) {
        let space = output.reserve(Signalling.maxDatagramSize)
        let n: Int
        do {
            if let channel {
                let inner = try datagram.serialize(into: UnsafeMutableRawBufferPointer(rebasing: scratch[..<SignallingEnvelope.maxSealedPlaintext]))
                SignallingEnvelope.writeHeader(.sealed, connectionID: datagram.connectionID, into: space)
                let body = UnsafeMutableRawBufferPointer(rebasing: space[SignallingEnvelope.headerSize...])
                n = SignallingEnvelope.headerSize + (try channel.seal(UnsafeRawBufferPointer(rebasing: scratch[..<inner]), into: body))
            } else {
                n = try datagram.serialize(into: space)
            }
        } catch {
            log.write(.error, "could not serialize \(datagram.message.typeCode) for \(address): \(error)")
            return
        }
        guard n <= limit else { return }
        output.commit(space, length: n, to: address, viaPublicPort: viaPublicPort)
        counters.packetsQueued &+= 1
        counters.bytesQueued &+= UInt64(n)
    }

    /// Sends bytes made elsewhere (handshake answers).
    func sendRaw(_ bytes: UnsafeRawBufferPointer, to address: PeerAddress, viaPublicPort: Bool) {
        let space = output.reserve(bytes.count)
        space.copyMemory(from: bytes)
        output.commit(space, length: bytes.count, to: address, viaPublicPort: viaPublicPort)
        counters.packetsQueued &+= 1
        counters.bytesQueued &+= UInt64(bytes.count)
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
    func enqueue(_ message: SignalMessage, to session: RelaySession) {
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
    func pump(_ session: RelaySession, now: Moment) {
        guard session.signals else { return }
        let due = session.channel.transmissions(now: now.monotonic)
        for t in due {
            if t.isRetransmission { counters.signallingRetransmissions &+= 1 }
            sendDatagram(SignalDatagram(connectionID: session.connectionID, sequence: t.sequence, ack: session.channel.ackNumber,
                                        message: t.message), to: session.address, viaPublicPort: session.viaPublicPort,
                         sealedWith: session.sealed)
        }
        if !due.isEmpty {
            session.channel.ackSent()
        } else if session.channel.ackOwed {
            sendSignal(.ack, to: session)
            session.channel.ackSent()
        }
    }

    /// Queues a reliable message to a session and sends it.
    func send(_ message: SignalMessage, to session: RelaySession, now: Moment) {
        enqueue(message, to: session)
        pump(session, now: now)
    }

    /// Tells a session it is being removed and why (unreliable: nothing will retransmit it).
    func sayGoodbye(_ code: GoodbyeCode, _ reason: String, to session: RelaySession) {
        guard session.signals else { return }
        sendSignal(.goodbye(code: code, reason: reason), to: session)
    }

    /// The reason a text status gives for recipients that were not keeping up ("" for none).
    static func laggards(_ identities: [String]) -> String {
        switch identities.count {
        case 0: ""
        case 1: "\(identities[0]) is not keeping up"
        default: "\(identities.count) members are not keeping up"
        }
    }
}
