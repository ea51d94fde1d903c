import ParleyWire

/// The sequence numbers missing from one publisher's incoming stream, for uplink repair (`UplinkRepair`): a ring of
/// `capacity` fixed slots indexed by sequence number, allocated once (at the member's first packet in a forward room),
/// so a packet costs no allocation. Pure: takes `now`, says what to ask for; one worker thread owns it.
///
///     slot = sequence % 64      [ seq | missing | asks | first seen | last asked ] × 64
///     highest-63 … highest      the span tracked: oldest first is ascending order around 65535 → 0
///
/// A jump forward of up to `capacity` marks the numbers in between missing; a larger one is a restart (a new encoder,
/// or a forged number): everything tracked is given up and nothing is marked, so no jump makes more than 63 entries.
/// A late packet that fills a tracked gap is `recovered` if it had been asked for. Opus DTX keeps sequence numbers
/// contiguous, so silence makes no gap.
final class UplinkGaps {
    /// Slots: the sequence numbers tracked below the highest, and the largest forward jump that counts as a gap.
    static let capacity = 64

    struct Slot {
        var sequence: UInt16 = 0
        var missing = false
        /// NACKs that named it (0, 1 or 2).
        var asks: UInt8 = 0
        var firstSeen = Instant.origin
        var lastAsked = Instant.origin
    }

    /// What one arrival changed.
    struct Arrival: Equatable {
        /// Sequence numbers found missing (the gap before this packet).
        var newlyMissing = 0
        /// This packet filled a gap that had been asked for.
        var recovered = false
        /// Missing numbers dropped from tracking (pushed out of the ring, or a restart).
        var givenUp = 0
    }

    /// What one sweep did.
    struct Sweep: Equatable {
        /// Sequence numbers put into the NACK.
        var asked = 0
        /// Missing numbers whose window ended.
        var givenUp = 0
    }

    private let slots: UnsafeMutablePointer<Slot>
    /// The highest sequence number received (meaningful once `started`).
    private(set) var highest: UInt16 = 0
    private var started = false
    /// Missing numbers tracked.
    private(set) var pending = 0
    /// When a pending number next needs a sweep (its first ask, its retry, or the end of its window).
    private(set) var nextDue = Instant.distantFuture
    /// NACK datagrams sent in the current one-second window, and when that window began.
    private var sentInWindow = 0
    private var windowStart = Instant.distantPast

    init() {
        slots = .allocate(capacity: Self.capacity)
        slots.initialize(repeating: Slot(), count: Self.capacity)
    }

    deinit { slots.deallocate() }

    @inline(__always)
    private func slot(_ sequence: UInt16) -> UnsafeMutablePointer<Slot> { slots + Int(sequence) % Self.capacity }

    /// Records an authenticated packet numbered `sequence`.
    func arrived(_ sequence: UInt16, now: Instant) -> Arrival {
        var result = Arrival()
        guard started else {
            started = true
            highest = sequence
            slot(sequence).pointee = Slot(sequence: sequence)
            return result
        }
        let distance = sequenceDistance(from: highest, to: sequence)
        if distance > Self.capacity {
            result.givenUp = clear()
            highest = sequence
            slot(sequence).pointee = Slot(sequence: sequence)
        } else if distance > 0 {
            for step in 1...distance {
                let s = highest &+ UInt16(step)
                let entry = slot(s)
                if entry.pointee.missing {  // 64 behind: its time is long over
                    result.givenUp += 1
                    pending -= 1
                }
                let missing = step < distance
                entry.pointee = Slot(sequence: s, missing: missing, asks: 0, firstSeen: now, lastAsked: now)
                if missing { result.newlyMissing += 1 }
            }
            pending += result.newlyMissing
            highest = sequence
            if result.newlyMissing > 0 { nextDue = min(nextDue, now) }
        } else if distance < 0 {
            let entry = slot(sequence)
            if entry.pointee.missing, entry.pointee.sequence == sequence {
                entry.pointee.missing = false
                pending -= 1
                result.recovered = entry.pointee.asks > 0
            }
        }
        return result
    }

    /// Whether a sweep has work now.
    func isDue(now: Instant) -> Bool { pending > 0 && now >= nextDue }

    /// Whether another NACK datagram fits in this second's `perSecond`; `askingResumes` says when it will if not.
    func mayAsk(now: Instant, perSecond: Int) -> Bool {
        if now - windowStart >= .seconds(1) {
            windowStart = now
            sentInWindow = 0
        }
        return sentInWindow < perSecond
    }

    /// When the current one-second window of NACKs ends.
    var askingResumes: Instant { windowStart + .seconds(1) }

    /// Counts one NACK datagram sent against `mayAsk`'s bound.
    func noteSent() { sentInWindow += 1 }

    /// Walks the missing numbers oldest first: those whose `window` ended are given up; with a `writer`, those never
    /// asked for, and those asked once at least `retryAfter` ago, are appended to it (in ascending order, as the
    /// writer wants). Without one (not forwarded, or the NACK bound reached) nothing is asked before `askAgain`.
    func sweep(now: Instant, window: Interval, retryAfter: Interval, writer: inout GenericNACKWriter?,
               askAgain: Instant = .distantFuture) -> Sweep {
        var result = Sweep()
        var next = Instant.distantFuture
        guard pending > 0 else {
            nextDue = next
            return result
        }
        for back in stride(from: Self.capacity - 1, through: 0, by: -1) {
            let s = highest &- UInt16(back)
            let entry = slot(s)
            guard entry.pointee.missing, entry.pointee.sequence == s else { continue }
            let expiry = entry.pointee.firstSeen + window
            if now >= expiry {
                entry.pointee.missing = false
                pending -= 1
                result.givenUp += 1
                continue
            }
            let asks = entry.pointee.asks
            let askable = asks == 0 || (asks == 1 && now - entry.pointee.lastAsked >= retryAfter)
            if askable, writer != nil, writer!.append(s) {
                entry.pointee.asks += 1
                entry.pointee.lastAsked = now
                result.asked += 1
            }
            let due: Instant = switch entry.pointee.asks {
            case 0: writer == nil ? askAgain : now  // the NACK was full: the next packet's sweep asks
            case 1: entry.pointee.lastAsked + retryAfter
            default: expiry
            }
            next = min(next, min(due, expiry))
        }
        nextDue = next
        return result
    }

    /// Forgets every missing number (a restart); returns how many were given up.
    @discardableResult
    func clear() -> Int {
        let given = pending
        for i in 0..<Self.capacity { slots[i].missing = false }
        pending = 0
        nextDue = .distantFuture
        return given
    }
}
