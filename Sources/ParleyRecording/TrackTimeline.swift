import ParleyWire

/// One recorded stream's packets placed on the recording's timeline, in order, gaps filled (`OpusGapPackets`).
///
/// A packet's place is its RTP timestamp's distance from the stream's first packet, added to where that first
/// packet arrived after the recording started: every track of a recording starts at the recording's start (lead-in
/// gap packets), and pauses keep their length, so tracks line up. Packets wait `reorderWindow` after arriving, so a
/// late one (reordered, or a NACK's repair) still takes its place; one whose place was already written is dropped.
/// A timestamp that strays more than `resyncThreshold` from the arrival clock (a sender that restarted its clock)
/// moves the anchor to where the packet arrived. Pure: the caller passes arrival instants.
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
        /// Times the anchor moved to the arrival clock.
        public var resyncs = 0
    }

    /// The recording's start: position 0.
    public let origin: Instant
    /// How long a packet waits for earlier ones.
    public let reorderWindow: Interval
    /// How far a timestamp may stray from the arrival clock before the anchor moves.
    public let resyncThreshold: Interval
    /// Samples written so far (the next item's position; the granule position after it).
    public private(set) var cursor: Int64 = 0
    /// Counters.
    public private(set) var counts = Counts()

    private struct Pending { var position: Int64; var arrival: Instant; var payload: [UInt8]; var samples: Int }
    private var pending: [Pending] = []  // sorted by position
    private var anchor: (position: Int64, timestamp: Int64)?
    private var lastTimestamp: (raw: UInt32, unwrapped: Int64) = (0, 0)
    private var previousTOC: UInt8?

    /// A timeline starting at `origin`.
    public init(origin: Instant, reorderWindow: Interval = .milliseconds(300), resyncThreshold: Interval = .seconds(2)) {
        self.origin = origin
        self.reorderWindow = reorderWindow
        self.resyncThreshold = resyncThreshold
    }

    /// Samples at 48 kHz from the origin to `instant`, on the 2.5 ms grid.
    func position(of instant: Instant) -> Int64 {
        let samples = max(.zero, instant - origin).nanoseconds * 48 / 1_000_000
        return samples - samples % 120
    }

    /// A packet (its RTP timestamp at 48 kHz, its Opus payload) that arrived at `arrival`.
    public mutating func insert(timestamp: UInt32, payload: UnsafeRawBufferPointer, arrival: Instant) {
        guard let samples = OpusPacketDuration.samples(payload) else { counts.malformed += 1; return }
        let unwrapped: Int64
        if anchor == nil {
            unwrapped = Int64(timestamp)
        } else {
            unwrapped = lastTimestamp.unwrapped + Int64(Int32(bitPattern: timestamp &- lastTimestamp.raw))
        }
        lastTimestamp = (timestamp, unwrapped)
        let arrived = position(of: arrival)
        var place: Int64
        if let a = anchor {
            place = a.position + (unwrapped - a.timestamp)
            // Arrival lags the timestamp by the path's delay (and a repair's round trip), never leads it by much.
            let drift = arrived - place
            if drift > resyncThreshold.nanoseconds * 48 / 1_000_000 || -drift > resyncThreshold.nanoseconds * 48 / 1_000_000 {
                counts.resyncs += 1
                place = max(arrived, cursor)
                anchor = (place, unwrapped)
            }
        } else {
            place = max(arrived, cursor)
            anchor = (place, unwrapped)
        }
        place -= ((place % 120) + 120) % 120
        guard place >= cursor else { counts.late += 1; return }
        var i = pending.endIndex
        while i > pending.startIndex, pending[i - 1].position >= place { i -= 1 }
        if i < pending.endIndex, pending[i].position == place { counts.duplicate += 1; return }
        pending.insert(Pending(position: place, arrival: arrival, payload: Array(payload), samples: samples), at: i)
    }

    /// `insert` from an array (tests).
    public mutating func insert(timestamp: UInt32, payload: [UInt8], arrival: Instant) {
        payload.withUnsafeBytes { insert(timestamp: timestamp, payload: $0, arrival: arrival) }
    }

    /// The items ready at `now`: every pending packet that waited `reorderWindow` (and those before it), with the gaps
    /// before them. `flush: true` (the track ends) takes all of them.
    public mutating func take(now: Instant, flush: Bool = false) -> [Item] {
        var items: [Item] = []
        var ready = 0
        for (k, p) in pending.enumerated() where flush || now - p.arrival >= reorderWindow { ready = k + 1 }
        for p in pending.prefix(ready) {
            if p.position < cursor { counts.late += 1; continue }  // overlaps the packet before it
            if p.position > cursor {
                let gap = Int(p.position - cursor)
                for g in OpusGapPackets.covering(samples: gap, after: previousTOC) {
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
        pending.removeFirst(ready)
        return items
    }

    /// Packets waiting.
    public var pendingCount: Int { pending.count }
}
