import ParleyWire

/// One part of a `RelayCore`: a component with state of its own (WebRTC members, plain-RTP endpoints, the cluster's
/// rooms, room keys, admission, messaging) that works through the core's shared services — its session and room
/// tables, how datagrams leave (`outbox`, `output`), randomness, the log — and reports its own timer work. The core owns
/// its parts; a part holds the core unowned.
protocol CorePart: AnyObject {
    /// The core this part belongs to.
    var core: RelayCore { get }
}

extension CorePart {
    var shared: RelayShared { core.shared }
    var config: RelayCoreConfig { core.shared.config }
    var sessions: SessionTable { core.sessions }
    var rooms: RoomTable { core.rooms }
    var outbox: Outbox { core.outbox }
    var output: OutputQueue { core.output }
    var random: RelayRandom { core.random }
    var log: LogSink { core.log }
    var workerIndex: Int { core.workerIndex }

    /// Tells the core's loop this part has timer work from `monotonic` on.
    func noteTimerWork(at monotonic: Instant) { core.noteTimerWork(at: monotonic) }
    /// Removes a member (see `RelayCore.removeMember`).
    func removeMember(_ member: Member, reason: String, goodbye: GoodbyeCode?, goodbyeReason: String? = nil, now: Moment) {
        core.removeMember(member, reason: reason, goodbye: goodbye, goodbyeReason: goodbyeReason, now: now)
    }
}
