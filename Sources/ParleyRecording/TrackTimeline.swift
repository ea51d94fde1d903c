import ParleyWire

/// One recorded stream's packets placed on the recording's timeline, in order, gaps filled (`OpusGapPackets`).
///
/// A packet's place is its RTP timestamp plus the stream's offset: every track of a recording starts at the
/// recording's start (lead-in gap packets), and pauses keep their length, so tracks line up. The offset is where
/// packets arrived less their timestamps, the least of it over the packets before the first is written (the one that
/// waited least on its way: a sender's first packets may wait for its keys or a busy path, and placing the track by
/// them would put it late). Packets wait `reorderWindow` after arriving, so a late one (reordered, or a NACK's repair)
/// still takes its place; one whose place was already written is dropped. A timestamp that strays more than
/// `resyncThreshold` from the arrival clock (a sender that restarted its clock) moves the offset to where that packet
/// arrived. Pure: the caller passes arrival instants.
public struct TrackTimeline {
    /// One thing to write, in order.
    public enum Item: Equatable, Sendable {
        /// An Opus packet as it came, `samples` long.
        case packet([UInt8], samples: Int)
        /// A gap-filling packet (`OpusGapPackets`), `samples` long.
        case gap([UInt8], samples: Int)
    }

    /// What happened to packets so far.
    public struct Counts: Equatable, Sendable {
        /// Packets written.
        public var written = 0
        /// Packets dropped: their place was already written (too late), the same place twice (a duplicate), or not Opus.
        public var late = 0, duplicate = 0, malformed = 0
        /// Gap packets written, and the samples they cover.
        public var gapPackets = 0, gapSamples = 0
        /// Times the offset moved to the arrival clock.
        public var resyncs = 0
    }

    /// The recording's start: position 0.
    public let origin: Instant
    /// How long a packet waits for earlier ones.
    public let reorderWindow: Interval
    /// How far a timestamp may stray from the arrival clock before the offset moves.
    public let resyncThreshold: Interval
    /// Samples written so far (the next item's position; the granule position after it).
    public private(set) var cursor: Int64 = 0
    /// Counters.
    public private(set) var counts = Counts()

    private struct Pending { var timestamp: Int64; var arrival: Instant; var payload: [UInt8]; var samples: Int }
    private var pending: [Pending] = []  // sorted by timestamp
    /// Position minus unwrapped timestamp; settled once the first packet is written.
    private var offset: Int64?
    private var settled = false
    private var lastTimestamp: (raw: UInt32, unwrapped: Int64)?
    private var previousTOC: UInt8?

    /// A timeline starting at `origin`.
    public init(origin: Instant, reorderWindow: Interval = .milliseconds(300), resyncThreshold: Interval = .seconds(2)) {
        self.origin = origin
        self.reorderWindow = reorderWindow
        self.resyncThreshold = resyncThreshold
    }

    /// Samples at 48 kHz from the origin to `instant`.
    func position(of instant: Instant) -> Int64 { max(.zero, instant - origin).nanoseconds * 48 / 1_000_000 }

    /// `position` on the 2.5 ms grid every Opus duration is a multiple of.
    static func grid(_ p: Int64) -> Int64 { p - ((p % 120) + 120) % 120 }

    /// A packet (its RTP timestamp at 48 kHz, its Opus payload) that arrived at `arrival`.
    public mutating func insert(timestamp: UInt32, payload: UnsafeRawBufferPointer, arrival: Instant) {
        guard let samples = OpusPacketDuration.samples(payload) else { counts.malformed += 1; return }
        let unwrapped = lastTimestamp.map { $0.unwrapped + Int64(Int32(bitPattern: timestamp &- $0.raw)) } ?? Int64(timestamp)
        lastTimestamp = (timestamp, unwrapped)
        let seen = position(of: arrival) - unwrapped
        if let o = offset {
            let threshold = resyncThreshold.nanoseconds * 48 / 1_000_000
            if seen - o > threshold || o - seen > threshold {
                // Another clock: place it where it arrived (never over what is written), and what follows from it.
                counts.resyncs += 1
                flushPendingBeforeResync()
                offset = max(seen, cursor - unwrapped)
                settled = true
            } else if !settled, seen < o {
                offset = seen
            }
        } else {
            offset = max(seen, cursor - unwrapped)
        }
        if settled, Self.grid(unwrapped + offset!) < cursor { counts.late += 1; return }
        var i = pending.endIndex
        while i > pending.startIndex, pending[i - 1].timestamp >= unwrapped { i -= 1 }
        if i < pending.endIndex, pending[i].timestamp == unwrapped { counts.duplicate += 1; return }
        pending.insert(Pending(timestamp: unwrapped, arrival: arrival, payload: Array(payload), samples: samples), at: i)
    }

    /// Packets of the old clock still pending would be placed with the new offset: they go out first, as they are.
    private mutating func flushPendingBeforeResync() {
        resyncItems += drain(pending.count)
    }
    private var resyncItems: [Item] = []

    /// `insert` from an array (tests).
    public mutating func insert(timestamp: UInt32, payload: [UInt8], arrival: Instant) {
        payload.withUnsafeBytes { insert(timestamp: timestamp, payload: $0, arrival: arrival) }
    }

    /// The items ready at `now`: every pending packet that waited `reorderWindow` (and those before it), with the gaps
    /// before them. `flush: true` (the track ends) takes all of them.
    public mutating func take(now: Instant, flush: Bool = false) -> [Item] {
        var ready = 0
        for (k, p) in pending.enumerated() where flush || now - p.arrival >= reorderWindow { ready = k + 1 }
        var items = resyncItems
        resyncItems = []
        items += drain(ready)
        return items
    }

    /// Writes the first `count` pending packets with the gaps before them.
    private mutating func drain(_ count: Int) -> [Item] {
        guard count > 0, let offset else { return [] }
        settled = true
        var items: [Item] = []
        for p in pending.prefix(count) {
            let place = Self.grid(p.timestamp + offset)
            if place < cursor { counts.late += 1; continue }  // overlaps the packet before it
            if place > cursor {
                for g in OpusGapPackets.covering(samples: Int(place - cursor), after: previousTOC) {
                    let s = OpusPacketDuration.samples(g) ?? 0
                    items.append(.gap(g, samples: s))
                    counts.gapPackets += 1
                    counts.gapSamples += s
                    cursor += Int64(s)
                }
            }
            items.append(.packet(p.payload, samples: p.samples))
            counts.written += 1
            cursor += Int64(p.samples)
            previousTOC = p.payload.first
        }
        pending.removeFirst(count)
        return items
    }

    /// Packets waiting.
    public var pendingCount: Int { pending.count }
}
