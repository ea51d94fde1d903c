import ParleyWire

/// One call between two online identities, from invitation to its end. Lives on worker 0 beside the
/// presence sessions; the call room it opens may live on any worker. The callee may be online from several
/// devices: every one of its sessions rings, the first to accept takes the call and the others stop ringing
/// (`ended` "answered on another device"); a decline withdraws only that device, and the call is declined when
/// the last ringing device declined or went away.
///
/// ```
/// (invite) ──callee offline──▶ unavailable          ──callee in a call──▶ declined "busy"
///     │
///     ▼
///  ringing (every session of the callee) ──accept (first)──▶ answered ──hang-up (either) / connection lost──▶ ended
///     │ accept elsewhere ──▶ the other ringing sessions: ended "answered on another device"
///     │ decline / callee hangs up ──▶ that session stops ringing; the last one ──▶ declined
///     │ caller hangs up ──▶ ended "cancelled"
///     │ ring timeout ──▶ noAnswer (caller), ended "no answer" (every ringing session)
///     └ connection lost (caller, or the last ringing session) ──▶ ended "connection lost"
/// ```
final class Call {
    /// Relay-assigned id: the call id of every callee session and the id in call events.
    let id: UInt32
    /// The id the caller chose in its invite; the caller's statuses carry it.
    let callerCallID: UInt32
    let caller: Presence
    /// The identity called.
    let calleeIdentity: String
    /// While ringing: the callee's sessions still ringing (a decline or a lost session leaves this list).
    var ringing: [Presence]
    /// Once answered: the callee's session that took the call.
    var callee: Presence?
    let startedAtUnixMilliseconds: Int64
    /// While ringing: when the ring times out; nil once answered.
    var ringDeadline: Instant?
    /// Once answered: the private room.
    var room: String?

    init(id: UInt32, callerCallID: UInt32, caller: Presence, calleeIdentity: String, ringing: [Presence], startedAt: Int64,
         ringDeadline: Instant) {
        self.id = id
        self.callerCallID = callerCallID
        self.caller = caller
        self.calleeIdentity = calleeIdentity
        self.ringing = ringing
        self.startedAtUnixMilliseconds = startedAt
        self.ringDeadline = ringDeadline
    }

    /// What the callee's other sessions are told when one of them takes the call.
    static let answeredElsewhere = "answered on another device"

    /// The id `party` knows this call by.
    func callID(for party: Presence) -> UInt32 { party === caller ? callerCallID : id }
    /// The sessions on the other side of `party`: for the caller the callee's answering session (or, while it
    /// rings, every ringing one); for a callee session the caller.
    func others(than party: Presence) -> [Presence] {
        guard party === caller else { return [caller] }
        return callee.map { [$0] } ?? ringing
    }
    /// Every session taking part: the caller, the answering callee session, the sessions still ringing.
    var parties: [Presence] { [caller] + (callee.map { [$0] } ?? []) + ringing }
    /// Whether `party` knows this call as `callID`.
    func matches(_ party: Presence, callID: UInt32) -> Bool {
        if party === caller { return callerCallID == callID }
        return id == callID && (party === callee || ringing.contains { $0 === party })
    }
}

/// Why a call ended, as call events record it. The raw values are the labels the HTTP API shows.
public enum CallEndReason: String, Sendable, Equatable, CaseIterable {
    /// The callee declined (or hung up while ringing).
    case declined
    /// The callee was already in a call.
    case busy
    /// Nobody answered within `ringTimeout`.
    case noAnswer = "no_answer"
    /// The callee was not online.
    case unavailable
    /// The caller hung up while it rang.
    case cancelled
    /// A party hung up after the answer.
    case hungUp = "hung_up"
    /// A party's presence session timed out, left or was replaced.
    case connectionLost = "connection_lost"
    /// The relay could not set the call up (e.g. no API key to mint call tokens with).
    case failed
}

/// One entry of the call log: every call records `started`, then `answered` if it was, then exactly one `ended`.
public struct CallEvent: Sendable, Equatable {
    /// What happened.
    public enum Kind: String, Sendable, Equatable {
        case started, answered, ended
    }

    /// What happened.
    public var kind: Kind
    /// Relay call id (unique for the relay's lifetime, barring 2³² calls).
    public var callID: UInt32
    /// Caller identity.
    public var caller: String
    /// Callee identity.
    public var callee: String
    /// The private room, once answered; else empty.
    public var room: String
    /// With `ended`: why.
    public var endReason: CallEndReason?
    /// With `ended`: the reason as people read it ("hung up by alice", "busy").
    public var detail: String
    /// When (Unix ms).
    public var unixMilliseconds: Int64
}

/// A bounded ring of recent call events: the oldest is overwritten when full (and counted).
struct CallEventLog {
    let capacity: Int
    private var ring: [CallEvent] = []
    private var head = 0
    /// Events overwritten before anyone drained them.
    private(set) var overwritten: UInt64 = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    mutating func append(_ event: CallEvent) {
        if ring.count < capacity {
            ring.append(event)
        } else {
            ring[head] = event
            head = (head + 1) % capacity
            overwritten &+= 1
        }
    }

    /// Oldest first.
    var events: [CallEvent] { Array(ring[head...] + ring[..<head]) }

    mutating func drain() -> [CallEvent] {
        defer { ring.removeAll(keepingCapacity: true); head = 0 }
        return events
    }
}

/// A read-only view of a call in progress.
public struct CallSnapshot: Sendable, Equatable {
    /// Relay call id.
    public var callID: UInt32
    /// Caller identity.
    public var caller: String
    /// Callee identity.
    public var callee: String
    /// `ringing` or `answered`.
    public var answered: Bool
    /// The private room once answered.
    public var room: String?
    /// Started at (Unix ms).
    public var startedAtUnixMilliseconds: Int64
    /// While ringing: how many of the callee's sessions (devices) ring; 0 once answered.
    public var ringingSessions: Int = 0
}
