import ParleyNet
import ParleyRelayCore
import ParleyWire

/// A worker's bookkeeping for what it publishes to the HTTP API (owned by the worker's thread).
struct APIPublisher {
    /// The oldest snapshot a reader takes as it is (older ones are refreshed on demand, see `RelayAPI.snapshots`),
    /// and how often call events are moved to the hub when nothing else moves them.
    static let interval = Interval.milliseconds(200)
    var lastEventDrain = Instant.distantPast
    var lastRevision: UInt64 = .max
    var drainedRevision: UInt64 = 0
    var mixTime = DurationHistogram()
}

extension Worker {
    /// Moves new events to the hub (an integer compare when there are none; call events, which do not move the
    /// revision, every `APIPublisher.interval`) and, when `capture` is set, replaces the published snapshot
    /// (with `batch.counters`, what the worker's socket did).
    /// Snapshots are captured only on demand: after an API command and when a reader found the last one older than
    /// `APIPublisher.interval` — not periodically, so a relay nobody asks costs no snapshot copies. The room list is
    /// rebuilt only when something came, went or changed state, or members are connected (their stats move).
    func publish(_ core: RelayCore, _ api: inout APIPublisher, _ batch: DatagramBatch, capture: Bool, helping: [DatagramBatch?] = []) {
        let revision = core.eventRevision
        let now = Worker.monotonic()
        if revision != api.drainedRevision {
            events.publish(core.drainEvents())
            api.drainedRevision = revision
        }
        if capture || now - api.lastEventDrain >= APIPublisher.interval {
            events.publish(core.drainEvents())  // call events do not move the revision
            api.lastEventDrain = now
        }
        guard capture else { return }
        let unchanged = revision == api.lastRevision && !core.hasMembers
        let previous = unchanged ? published.load() : nil
        let snapshot = WorkerSnapshot.capture(core, worker: index, busyNanoseconds: busyNanoseconds.load(ordering: .relaxed),
                                              mixTime: api.mixTime, datagrams: helping.reduce(into: batch.counters) { total, b in
                                                  if let b { total.add(b.counters) }
                                              }, reuseRooms: previous)
        published.store(snapshot, at: now)
        api.lastRevision = revision
    }
}
