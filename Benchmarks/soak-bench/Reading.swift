import BenchmarkSupport
import ParleyRelayCore
import ParleyWire

/// Memory and table sizes at one point of a run.
struct Reading {
    var label: String
    var sessions: Int
    var simulatedSeconds: Double
    var live: LiveCounts
    var residentBytes: UInt64
    var inUseBytes: UInt64
    var fromSystemBytes: UInt64

    /// Reads now; with `trim`, after giving the allocator's free pages back.
    init(_ label: String, world: SoakWorld, sessions: Int, trim: Bool, started: Instant) {
        if trim { Heap.trim() }
        self.label = label
        self.sessions = sessions
        simulatedSeconds = (world.clock.monotonic - started).seconds
        live = world.core.liveCounts
        residentBytes = Heap.residentBytes
        inUseBytes = Heap.inUseBytes
        fromSystemBytes = Heap.fromSystemBytes
    }

    static let header = "\(column("at", 14)) \(column("sessions", 9)) \(column("sim s", 8)) \(column("rooms", 6)) \(column("members", 8)) "
        + "\(column("presence", 9)) \(column("RSS MB", 8)) \(column("in use MB", 10)) \(column("held MB", 8))"

    var row: String {
        "\(column(label, 14)) \(column("\(sessions)", 9)) \(column(fixed(simulatedSeconds, 0), 8)) \(column("\(live.rooms)", 6)) "
            + "\(column("\(live.byConnection)", 8)) \(column("\(live.presenceByConnection)", 9)) \(column(Self.megabytes(residentBytes), 8)) "
            + "\(column(Self.megabytes(inUseBytes), 10)) \(column(Self.megabytes(fromSystemBytes), 8))"
    }

    static func megabytes(_ bytes: UInt64) -> String { fixed(Double(bytes) / 1_048_576, 2) }

    /// Growth from `first` to `self` per 1,000 sessions started in between, in KB: (RSS, in use).
    func growthPerThousandSessions(since first: Reading) -> (resident: Double, inUse: Double) {
        let sessions = Double(max(1, self.sessions - first.sessions))
        return ((Double(residentBytes) - Double(first.residentBytes)) / 1024 / sessions * 1000,
                (Double(inUseBytes) - Double(first.inUseBytes)) / 1024 / sessions * 1000)
    }
}
