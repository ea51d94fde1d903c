import ParleyWire

/// When a worker gives the allocator's free memory back to the system (`Allocator.returnFreePages`).
///
/// glibc returns a heap's pages only from its top: what ended sessions freed below live allocations stays resident,
/// so after a join flood or a busy hour the relay's RSS would stay near its peak although it is not in use
/// (`soak-bench --flood 5000`: 41.6 MB resident once every member had timed out, 1.1 MB of it in use; 21.2 MB after a
/// trim). A worker trims once the sessions it holds have fallen by `drop` from their peak since its last trim, or to
/// none, and at most once per `interval`. Under steady churn the count does not fall, and nothing is trimmed.
package struct AllocatorTrimSchedule {
    /// Sessions (members and presence sessions) that must have gone, net, since the peak.
    package let drop: Int
    /// The least time between two trims.
    package let interval: Interval
    private var peak = 0
    private var last = Instant.distantPast

    /// A schedule that trims after `drop` sessions went, at most once per `interval`.
    package init(drop: Int = 100, interval: Interval = .seconds(10)) {
        self.drop = max(1, drop)
        self.interval = interval
    }

    /// Takes the worker's current session count; true when it should trim now (which then counts as done).
    package mutating func shouldTrim(sessions: Int, now: Instant) -> Bool {
        peak = max(peak, sessions)
        guard peak - sessions >= drop || (sessions == 0 && peak > 0), now - last >= interval else { return false }
        peak = sessions
        last = now
        return true
    }
}
