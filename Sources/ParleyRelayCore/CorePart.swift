import ParleyWire

/// One part of a `RelayCore`: a component with state of its own (WebRTC members, plain-RTP endpoints, the cluster's
/// rooms, room keys, admission, messaging) that works through the core's shared services — its session and room
/// tables, how datagrams leave (`outbox`, `output`), randomness, the log — and reports its own timer work. The core owns
/// its parts; a part holds the core unowned.
protocol CorePart: AnyObject {
    /// The core this part belongs to.
    var core: RelayCore { get }
}

/// A part with clock-driven work. `tick` does what fell due; `nextDeadline` says when it next has work, read from the
/// same state and written beside `tick`, so the two cannot drift apart. The core ticks its parts in turn and sleeps
/// until the earliest of their deadlines (`RelayCore+Timers.swift`). Between ticks, a change a deadline did not
/// foresee (a join, a text, a speaker change) is reported with `noteTimerWork`.
protocol TimedWork: AnyObject {
    /// Does the work due at `now`; `housekeeping` is true on the 100 ms grid's passes (`RelayCore.housekeepingInterval`).
    func tick(now: Moment, housekeeping: Bool)
    /// The earliest time `tick` has work, given when the next housekeeping pass falls. Early is harmless (a tick finds
    /// nothing to do); late delays work.
    func nextDeadline(housekeepingDue: Instant) -> Instant
}

extension CorePart {
    var shared: RelayShared { core.shared }
    var config: RelayCoreConfig { core.config }
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
