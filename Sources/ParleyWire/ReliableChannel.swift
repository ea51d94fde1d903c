/// Reliable, ordered delivery of signalling messages over datagrams: per-direction sequence numbers from 1,
/// a cumulative acknowledgement in every datagram, a small receive window for reordering, and retransmission
/// with an RTO from measured round trips (RFC 6298, Karn's rule) doubling on each retry.
///
/// Pure state: the owner passes `now` (an `Instant` of the monotonic clock), sends what `transmissions(now:)` returns with
/// the current `ackNumber`, and feeds every received datagram to `receive`.
public struct ReliableChannel: Sendable {
    /// Timing and window limits.
    public struct Limits: Sendable {
        /// RTO before any round trip is measured.
        public var initialRTO: Interval = .milliseconds(250)
        /// Smallest RTO.
        public var minRTO: Interval = .milliseconds(100)
        /// Largest RTO after backoff.
        public var maxRTO: Interval = .seconds(4)
        /// Messages in flight before later ones wait.
        public var sendWindow = 32
        /// How far ahead of the next expected sequence the receiver buffers.
        public var receiveWindow: UInt32 = 64
        /// Attempts per message before the channel is declared failed.
        public var maxAttempts = 12
        /// Messages pending (in flight plus waiting) at most: `enqueue` beyond it drops the message and marks the
        /// channel `overflowed`, a peer that does not acknowledge cannot grow the sender's memory without bound.
        public var maxPending = 1024
        /// Default limits.
        public init() {}
    }

    /// A message to (re)transmit now with this sequence number.
    public struct Transmission: Sendable, Equatable {
        /// The sequence number the datagram carries.
        public var sequence: UInt32
        /// The message.
        public var message: SignalMessage
        /// True when this is a retransmission.
        public var isRetransmission: Bool
    }

    private struct InFlight: Sendable {
        var sequence: UInt32
        var message: SignalMessage
        var sentAt: Instant
        var deadline: Instant
        var attempts: Int
    }

    /// Limits in force.
    public let limits: Limits
    private var nextSequence: UInt32 = 1
    private var inFlight: [InFlight] = []
    private var waiting: [SignalMessage] = []
    private var expected: UInt32 = 1
    private var outOfOrder: [UInt32: SignalMessage] = [:]
    private var smoothedRTT: Interval = .zero
    private var rttVariance: Interval = .zero
    private var rto: Interval

    /// Messages retransmitted so far.
    public private(set) var retransmissions = 0
    /// True once a message went unacknowledged for `maxAttempts` attempts.
    public private(set) var failed = false
    /// True once `enqueue` found `maxPending` messages pending: the peer is not keeping up and a message was lost,
    /// so the owner should end the session (`serviceDue` is `Instant.distantPast` from then on, so it looks at once).
    public private(set) var overflowed = false
    /// Messages `enqueue` dropped because `maxPending` were pending.
    public private(set) var refused = 0
    /// True when the peer sent a reliable message that no outgoing datagram has acknowledged yet.
    public private(set) var ackOwed = false
    /// When the owner next has something to send for this channel: `Instant.distantPast` while an ack is owed, a queued
    /// message fits the window or the channel `overflowed`, else the earliest retransmission deadline, `Instant.distantFuture` when nothing is pending.
    /// Stored and recomputed by every mutating method, so an owner scanning many channels each tick reads one field
    /// and calls `transmissions(now:)` only where `serviceDue <= now` (elsewhere it would return nothing).
    public private(set) var serviceDue: Instant = .distantFuture

    /// A fresh channel.
    public init(limits: Limits = Limits()) {
        self.limits = limits
        self.rto = limits.initialRTO
    }

    /// The acknowledgement to put in every outgoing datagram: the highest sequence received in order.
    public var ackNumber: UInt32 { expected &- 1 }
    /// Messages sent but not yet acknowledged, plus those waiting for the window.
    public var pendingCount: Int { inFlight.count + waiting.count }
    /// The current retransmission timeout.
    public var currentRTO: Interval { rto }
    /// The smoothed round-trip time (zero before the first sample).
    public var roundTripTime: Interval { smoothedRTT }

    /// Queues a reliable message; it goes out on the next `transmissions(now:)`. With `maxPending` messages already
    /// pending the message is dropped instead, the channel marked `overflowed`, and false returned.
    @discardableResult
    public mutating func enqueue(_ message: SignalMessage) -> Bool {
        guard pendingCount < limits.maxPending else {
            overflowed = true
            refused += 1
            refreshServiceDue()
            return false
        }
        waiting.append(message)
        refreshServiceDue()
        return true
    }

    /// Whether `count` more messages fit while keeping at most `limit` (and `maxPending`) pending: a sender checks
    /// this before queueing what it may drop by policy (a text), keeping the rest of the room for what it must send.
    public func hasRoom(for count: Int, within limit: Int) -> Bool {
        pendingCount + count <= min(limit, limits.maxPending)
    }

    /// Whether a message `matches` picks is still pending (waiting, or sent and not yet acknowledged).
    public func isPending(where matches: (SignalMessage) -> Bool) -> Bool {
        inFlight.contains { matches($0.message) } || waiting.contains(where: matches)
    }

    /// Removes the messages still waiting (not yet sent) that `isStale` picks, such as an older copy of state a newer
    /// message is about to replace; returns how many. Messages in flight are kept: their sequence numbers are taken.
    public mutating func dropWaiting(where isStale: (SignalMessage) -> Bool) -> Int {
        let before = waiting.count
        waiting.removeAll(where: isStale)
        refreshServiceDue()
        return before - waiting.count
    }

    /// What to send now: new messages that fit in the window, and retransmissions whose timer expired.
    /// Sending any datagram acknowledges what was received, so the caller clears the owed ack with `ackSent()`.
    public mutating func transmissions(now: Instant) -> [Transmission] {
        var out: [Transmission] = []
        for i in inFlight.indices where inFlight[i].deadline <= now {
            inFlight[i].attempts += 1
            if inFlight[i].attempts > limits.maxAttempts { failed = true; continue }
            let backoff = min(limits.maxRTO, Interval(nanoseconds: rto.nanoseconds << min(inFlight[i].attempts - 1, 16)))
            inFlight[i].deadline = now + backoff
            retransmissions += 1
            out.append(Transmission(sequence: inFlight[i].sequence, message: inFlight[i].message, isRetransmission: true))
        }
        while !waiting.isEmpty && inFlight.count < limits.sendWindow {
            let message = waiting.removeFirst()
            let sequence = nextSequence
            nextSequence &+= 1
            inFlight.append(InFlight(sequence: sequence, message: message, sentAt: now, deadline: now + rto, attempts: 1))
            out.append(Transmission(sequence: sequence, message: message, isRetransmission: false))
        }
        refreshServiceDue()
        return out
    }

    /// The earliest time a retransmission falls due, or nil when nothing is in flight.
    public var nextDeadline: Instant? { inFlight.map(\.deadline).min() }

    /// Records that a datagram carrying `ackNumber` went out.
    public mutating func ackSent() {
        ackOwed = false
        refreshServiceDue()
    }

    /// Takes a received datagram's acknowledgement and, for a reliable message, its sequence number.
    /// Returns the messages now deliverable in order (empty for duplicates or messages that arrived early).
    public mutating func receive(sequence: UInt32, ack: UInt32, message: SignalMessage, now: Instant) -> [SignalMessage] {
        acknowledge(upTo: ack, now: now)
        defer { refreshServiceDue() }
        guard sequence != 0 else { return [message] }
        ackOwed = true
        if sequence == expected {
            var delivered = [message]
            expected &+= 1
            while let next = outOfOrder.removeValue(forKey: expected) {
                delivered.append(next)
                expected &+= 1
            }
            return delivered
        }
        if sequence &- expected < limits.receiveWindow, sequence &- expected < 0x8000_0000 {
            outOfOrder[sequence] = message
        }
        return []
    }

    private mutating func acknowledge(upTo ack: UInt32, now: Instant) {
        guard ack != 0, ack < nextSequence else { return }
        while let first = inFlight.first, first.sequence <= ack {
            if first.attempts == 1 { sampleRTT(now - first.sentAt) }
            inFlight.removeFirst()
        }
    }

    private mutating func refreshServiceDue() {
        if overflowed || ackOwed || (!waiting.isEmpty && inFlight.count < limits.sendWindow) {
            serviceDue = .distantPast
        } else {
            var earliest = Instant.distantFuture
            for f in inFlight where f.deadline < earliest { earliest = f.deadline }
            serviceDue = earliest
        }
    }

    private mutating func sampleRTT(_ sample: Interval) {
        if smoothedRTT == .zero {
            smoothedRTT = sample
            rttVariance = sample / 2
        } else {
            rttVariance = (3 * rttVariance + Interval(nanoseconds: abs((smoothedRTT - sample).nanoseconds))) / 4
            smoothedRTT = (7 * smoothedRTT + sample) / 8
        }
        rto = min(limits.maxRTO, max(limits.minRTO, smoothedRTT + 4 * rttVariance))
    }
}
