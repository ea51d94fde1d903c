import ParleyWire

/// What the listeners of one stream report about it (RTCP report blocks), checked for plausibility and aggregated so
/// that no single listener steers the sender's in-band FEC for everyone.
///
/// Checks, per block, against the same listener's previous block about the stream:
///
/// ```
/// jitter > 1 s of the 48 kHz clock             → implausible, ignored
/// first block, cumulative lost ≤ 0              → fraction lost 0 (nothing lost, nothing lost lately)
/// Δexpected = highest − previous highest > 0    → fraction lost ≤ ⌈256 · Δlost / Δexpected⌉ (what its own counts say)
/// Δexpected ≤ 0 (nothing new received)          → fraction lost 0
/// ```
///
/// A listener that received most of the packets since its last report cannot claim to have lost them. The aggregate
/// is the worst fraction lost (and, separately, jitter) among the listeners' latest reports — the second worst when
/// the stream has three or more listeners (a listener that did not report counts as clean), so one outlier cannot
/// set a speaker's FEC; genuine loss shared by several listeners still does. Pure; one per stream.
struct ListenerReports {
    /// One listener's latest report.
    struct Entry: Equatable {
        var listener: UInt32
        var highestSequence: UInt32
        var cumulativeLost: Int32
        /// After the checks.
        var fractionLost: UInt8
        var jitter: UInt32
        var at: Instant
        /// Not yet carried in a report to the sender (`takeFresh`).
        var fresh: Bool
    }

    /// What `take` made of a block.
    enum Verdict: Equatable {
        /// Taken as reported.
        case taken
        /// Taken with its fraction lost lowered to what the listener's own counts allow.
        case clamped
        /// Ignored (jitter beyond `maxJitter`).
        case rejected
    }

    /// The largest plausible interarrival jitter: one second of the 48 kHz RTP clock.
    static let maxJitter: UInt32 = 48_000
    /// Reports older than this are forgotten (their listener left, or stopped reporting).
    static let maxAge: Interval = .seconds(10)

    /// The latest report of each listener (at most the room's members and those that left within `maxAge`).
    private(set) var entries: [Entry] = []

    /// Takes listener `listener`'s report block about the stream, received at `now`.
    mutating func take(_ block: ReportBlock, from listener: UInt32, now: Instant) -> Verdict {
        guard block.jitter <= Self.maxJitter else { return .rejected }
        let index = entries.firstIndex { $0.listener == listener }
        var allowed = block.fractionLost
        if let i = index, Int32(bitPattern: block.highestSequence &- entries[i].highestSequence) >= 0 {
            let expected = Int64(block.highestSequence &- entries[i].highestSequence)
            let lost = max(0, Int64(block.cumulativeLost) - Int64(entries[i].cumulativeLost))
            allowed = expected == 0 ? 0 : UInt8(min(255, (lost * 256 + expected - 1) / expected))
        } else if block.cumulativeLost <= 0 {
            allowed = 0   // a first report (or one from a restarted count) that lost nothing overall
        }
        let entry = Entry(listener: listener, highestSequence: block.highestSequence, cumulativeLost: block.cumulativeLost,
                          fractionLost: min(block.fractionLost, allowed), jitter: block.jitter, at: now, fresh: true)
        if let i = index { entries[i] = entry } else { entries.append(entry) }
        return block.fractionLost > allowed ? .clamped : .taken
    }

    /// The fraction lost and jitter to carry for the listeners' reports received at or after `since`, with
    /// `listeners` listening: the worst of each, or the second worst from three listeners on.
    func aggregate(listeners: Int, since: Instant) -> (fractionLost: UInt8, jitter: UInt32) {
        Self.aggregate(entries.lazy.filter { $0.at >= since }, listeners: listeners)
    }

    /// `aggregate` over the reports received since the last call (each report is carried to the sender once), and
    /// forgets reports older than `maxAge`.
    mutating func takeFresh(listeners: Int, now: Instant) -> (fractionLost: UInt8, jitter: UInt32) {
        let figures = Self.aggregate(entries.lazy.filter(\.fresh), listeners: listeners)
        for i in entries.indices { entries[i].fresh = false }
        forget(olderThan: now - Self.maxAge)
        return figures
    }

    /// Forgets reports received before `time`.
    mutating func forget(olderThan time: Instant) {
        entries.removeAll { $0.at < time }
    }

    private static func aggregate(_ reports: some Sequence<Entry>, listeners: Int) -> (fractionLost: UInt8, jitter: UInt32) {
        var loss = (first: UInt8(0), second: UInt8(0))
        var jitter = (first: UInt32(0), second: UInt32(0))
        for e in reports {
            if e.fractionLost > loss.first { loss = (e.fractionLost, loss.first) } else if e.fractionLost > loss.second { loss.second = e.fractionLost }
            if e.jitter > jitter.first { jitter = (e.jitter, jitter.first) } else if e.jitter > jitter.second { jitter.second = e.jitter }
        }
        return listeners >= 3 ? (loss.second, jitter.second) : (loss.first, jitter.first)
    }
}
