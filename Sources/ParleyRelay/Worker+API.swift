import ParleyNet
import ParleyRelayCore

/// A worker's bookkeeping for what it publishes to the HTTP API (owned by the worker's thread).
struct APIPublisher {
    /// Snapshots are republished at most this often unless a command forces one.
    static let interval: Int64 = 200_000_000
    var lastPublished: Int64 = .min / 2
    var lastRevision: UInt64 = .max
    var drainedRevision: UInt64 = 0
    var mixTime = DurationHistogram()
}

extension Worker {
    /// Moves new events to the hub (an integer compare when there are none) and, every `APIPublisher.interval`
    /// or when `force`d, replaces the published snapshot. The room list is rebuilt only when something came,
    /// went or changed state, or members are connected (their stats move).
    func publish(_ core: RelayCore, _ api: inout APIPublisher, force: Bool) {
        let revision = core.eventRevision
        let now = Clock.monotonicNanoseconds()
        if revision != api.drainedRevision {
            events.publish(core.drainEvents())
            api.drainedRevision = revision
        }
        guard force || now - api.lastPublished >= APIPublisher.interval else { return }
        events.publish(core.drainEvents())  // call events do not move the revision
        let unchanged = revision == api.lastRevision && !core.hasMembers
        let previous = unchanged ? published.load() : nil
        let snapshot = WorkerSnapshot.capture(core, worker: index, busyNanoseconds: busyNanoseconds.load(ordering: .relaxed),
                                              mixTime: api.mixTime, reuseRooms: previous)
        published.store(snapshot)
        api.lastPublished = now
        api.lastRevision = revision
    }
}
