import ParleyWire

/// The core's clock-driven work: `tick` runs its timed parts (`TimedWork`: the session sweep, ring timeouts, the rooms'
/// periodic work, room key changes, the cluster's rooms) on a 100 ms housekeeping grid, and says when the earliest of
/// them next has work (`timersDue`); `shutdown` says goodbye to everyone.
extension RelayCore {
    /// Periodic work: signalling retransmissions and owed acks, member timeouts, ring timeouts, deferred speaker
    /// pushes, receiver reports, room key changes, cascade rosters, closing rooms left empty. Afterwards `timersDue`
    /// says when the next of these falls due. The loop calls it once awake at or after `timersDue` (and no later than
    /// `tickInterval` after it) while members exist, and at least once a second otherwise.
    public func tick(now: Moment) {
        // Periodic per-member and per-room checks run on one 100 ms grid, so a loaded worker ticks ~10 times a
        // second rather than at every member's own due time (receiver reports fall due at scattered times).
        let housekeeping = now.monotonic - lastHousekeeping >= Self.housekeepingInterval
        if housekeeping { lastHousekeeping = now.monotonic }
        for part in timedParts { part.tick(now: now, housekeeping: housekeeping) }
        // Never in the past: a condition this tick could not clear is looked at again on the next wakeup, not in a spin.
        timersDue = max(nextTimerWork(), now.monotonic + .nanoseconds(1))
    }

    /// How often rooms with speakers are re-checked for a speaker list that went stale (a speaker fell silent),
    /// and the grid receiver reports are sent on (each at the first housekeeping pass once its interval passed).
    static let housekeepingInterval = Interval.milliseconds(100)

    /// The longest the loop lets work wait past `timersDue`: it ticks on any wakeup at or after `timersDue`
    /// (a packet batch usually comes first) and sets its poll timeout to `timersDue + tickInterval` at the latest.
    public var tickInterval: Interval { .milliseconds(20) }

    /// Records that `tick` may have work from `monotonic` on (something changed between ticks that the last
    /// `tick`'s `timersDue` did not account for: a signalling message, a join, a speaker change, an API command).
    public func noteTimerWork(at monotonic: Instant) {
        if monotonic < timersDue { timersDue = monotonic }
    }

    /// The earliest of the timed parts' deadlines, from the state as it stands (after a tick).
    func nextTimerWork() -> Instant {
        let housekeepingDue = lastHousekeeping + Self.housekeepingInterval
        var due = Instant.distantFuture
        for part in timedParts { due = min(due, part.nextDeadline(housekeepingDue: housekeepingDue)) }
        return due
    }

    /// Tells every session the relay is going away (twice, as nothing will retransmit it) and forgets them all.
    public func shutdown(now: Moment) {
        shutDown = true
        // Presence sessions first, as before the session table joined them (their goodbyes lead the output).
        let all = sessions.byConnection.values.sorted { a, b in
            if case .presence = a, case .member = b { return true }
            return false
        }
        for entry in all {
            for _ in 0..<2 { outbox.sayGoodbye(.relayShutdown, "the relay is shutting down", to: entry.session) }
        }
        calls.endAll(detail: "the relay is shutting down", now: now)
        presence.removeAll()
        sessions.removeAll()
        rooms.removeAll(now: now)
    }
}
