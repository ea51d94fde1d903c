import ParleyWire

/// Decides which missing RTP packets to ask the relay to resend (RFC 4585 generic NACK): a gap is NACKed once when
/// it is seen and once more after a round trip if still missing — but only while the packet can still arrive before
/// its play-out time (`deadline`). Pure; one per incoming SSRC.
public struct NackTracker: Sendable {
    private struct Missing: Sendable {
        var sequence: UInt16
        var firstSeen: Instant
        var lastAsked: Instant
        var asks: Int
    }

    private var highest: UInt16?
    private var missing: [Missing] = []
    /// NACK requests made (sequence numbers asked for, counting repeats).
    public private(set) var requested = 0
    /// Gaps filled by a retransmission or a late arrival after being NACKed.
    public private(set) var recovered = 0

    /// A tracker with nothing seen.
    public init() {}

    /// Records an arriving packet; returns true when it fills a gap this tracker asked for (a retransmission, or an
    /// original so late it was given up for lost): its delay says nothing about the path's jitter.
    @discardableResult
    public mutating func received(_ sequence: UInt16, now: Instant) -> Bool {
        guard let top = highest else {
            highest = sequence
            return false
        }
        let distance = sequenceDistance(from: top, to: sequence)
        if distance > 0 {
            if distance > 1 && distance <= 64 {
                var s = top &+ 1
                while s != sequence {
                    missing.append(Missing(sequence: s, firstSeen: now, lastAsked: .distantPast, asks: 0))
                    s &+= 1
                }
            }
            if distance > 64 { missing.removeAll() }  // a jump (new talkspurt or restart): nothing to recover
            highest = sequence
        } else if let i = missing.firstIndex(where: { $0.sequence == sequence }) {
            let asked = missing[i].asks > 0
            if asked { recovered += 1 }
            missing.remove(at: i)
            return asked
        }
        return false
    }

    /// Sequence numbers to NACK now: asked at most twice, spaced by `roundTrip`, while `now + roundTrip` is
    /// before the packet's play-out (`firstSeen + playoutDelay`).
    public mutating func due(now: Instant, roundTrip: Interval, playoutDelay: Interval) -> [UInt16] {
        missing.removeAll { now - $0.firstSeen > playoutDelay }
        var out: [UInt16] = []
        for i in missing.indices where missing[i].asks < 2 && now - missing[i].lastAsked >= roundTrip {
            guard now + roundTrip < missing[i].firstSeen + playoutDelay else { continue }
            missing[i].asks += 1
            missing[i].lastAsked = now
            out.append(missing[i].sequence)
        }
        requested += out.count
        return out
    }
}
