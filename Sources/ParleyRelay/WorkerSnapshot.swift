import ParleyNet
import ParleyRelayCore
import ParleyWire
import Synchronization

/// Cumulative histogram of durations (Prometheus style): counts per upper bound in seconds, plus sum and count.
public struct DurationHistogram: Sendable, Equatable {
    /// Upper bounds in seconds (the last bucket, +Inf, is `count`).
    public static let bounds: [Double] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025]
    /// Observations at or below each bound (not cumulative; the exporter sums).
    public var buckets = [UInt64](repeating: 0, count: DurationHistogram.bounds.count)
    /// Sum of observations in seconds.
    public var sum: Double = 0
    /// Observations.
    public var count: UInt64 = 0

    /// An empty histogram.
    public init() {}

    /// Records one duration in nanoseconds. Allocation-free.
    public mutating func observe(nanoseconds: Int64) {
        let seconds = Double(nanoseconds) / 1e9
        sum += seconds
        count &+= 1
        for i in 0..<Self.bounds.count where seconds <= Self.bounds[i] {
            buckets[i] &+= 1
            return
        }
    }
}

/// What one worker publishes for the HTTP API: an immutable copy of its rooms, counters and presence.
/// Built on the worker's thread, read by the HTTP threads; never a reference into the core.
public struct WorkerSnapshot: Sendable {
    /// Worker index.
    public var worker: Int
    /// Rooms, sorted by name.
    public var rooms: [RoomSnapshot]
    /// Per-room limits set at creation (only rooms created through the API with limits appear).
    public var limits: [String: RoomLimits]
    /// The core's counters.
    public var counters: RelayCounters
    /// The worker socket's counters: datagrams the kernel accepted, send failures by kind, pending-queue drops.
    public var datagrams: DatagramCounters
    /// CPU time the loop spent busy.
    public var busyNanoseconds: Int64
    /// Time spent in `runMixes`.
    public var mixTime: DurationHistogram
    /// Presence sessions (worker 0 only).
    public var presence: [PresenceSnapshot]
    /// Calls in progress (worker 0 only).
    public var calls: [CallSnapshot]
    /// Members on this worker.
    public var memberCount: Int

    /// Limits of one room.
    public struct RoomLimits: Sendable, Equatable {
        /// Max members (nil = relay default).
        public var maxMembers: Int?
        /// Empty timeout in nanoseconds (nil = relay default).
        public var emptyTimeout: Interval?
    }

    /// An empty snapshot for worker `worker` (before its loop first published).
    public init(worker: Int) {
        self.worker = worker
        rooms = []
        limits = [:]
        counters = RelayCounters()
        datagrams = DatagramCounters()
        busyNanoseconds = 0
        mixTime = DurationHistogram()
        presence = []
        calls = []
        memberCount = 0
    }

    /// Copies what the API shows out of `core`. When `reuseRooms` is given (nothing came or went and nobody
    /// is connected) the room list is taken from it instead of being rebuilt.
    public static func capture(_ core: RelayCore, worker: Int, busyNanoseconds: Int64, mixTime: DurationHistogram,
                               datagrams: DatagramCounters = DatagramCounters(),
                               reuseRooms previous: WorkerSnapshot? = nil) -> WorkerSnapshot {
        var s = WorkerSnapshot(worker: worker)
        if let previous {
            s.rooms = previous.rooms
            s.limits = previous.limits
        } else {
            s.rooms = core.snapshot()
            for r in s.rooms {
                if let l = core.roomLimits(r.name), l.maxMembers != nil || l.emptyTimeout != nil {
                    s.limits[r.name] = RoomLimits(maxMembers: l.maxMembers, emptyTimeout: l.emptyTimeout)
                }
            }
        }
        s.counters = core.counters
        s.datagrams = datagrams
        s.busyNanoseconds = busyNanoseconds
        s.mixTime = mixTime
        if worker == 0 {
            s.presence = core.presenceSnapshot()
            s.calls = core.callSnapshot()
        }
        s.memberCount = core.memberCount
        return s
    }
}

/// The slot one worker publishes its snapshot into; the HTTP threads copy it out under the lock (a
/// reference-count bump: the arrays inside are shared, not copied).
final class SnapshotSlot: Sendable {
    private let value: Mutex<(snapshot: WorkerSnapshot, at: Instant)>
    init(worker: Int) { value = Mutex((WorkerSnapshot(worker: worker), .distantPast)) }
    /// Replaces the snapshot; `at` is when it was captured.
    func store(_ snapshot: WorkerSnapshot, at: Instant) { value.withLock { $0 = (snapshot, at) } }
    func load() -> WorkerSnapshot { value.withLock { $0.snapshot } }
    /// When the snapshot was captured (far in the past before the first).
    var capturedAt: Instant { value.withLock { $0.at } }
}
