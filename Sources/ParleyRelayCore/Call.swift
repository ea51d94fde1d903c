import ParleyWire

/// One call between two online identities, from invitation to its end. Lives on worker 0 beside the
/// presence sessions; the call room it opens may live on any worker.
///
/// ```
/// (invite) ──callee offline──▶ unavailable          ──callee in a call──▶ declined "busy"
///     │
///     ▼
///  ringing ──accept──▶ answered ──hang-up (either) / connection lost──▶ ended
///     │ decline / callee hangs up ──▶ declined
///     │ caller hangs up ──▶ ended "cancelled"
///     │ ring timeout ──▶ noAnswer (caller), ended "no answer" (callee)
///     └ connection lost ──▶ ended "connection lost"
/// ```
final class Call {
    /// Relay-assigned id: the callee's call id and the id in call events.
    let id: UInt32
    /// The id the caller chose in its invite; the caller's statuses carry it.
    let callerCallID: UInt32
    let caller: Presence
    let callee: Presence
    let startedAtUnixMilliseconds: Int64
    /// While ringing: when the ring times out; nil once answered.
    var ringDeadline: Instant?
    /// Once answered: the private room.
    var room: String?

    init(id: UInt32, callerCallID: UInt32, caller: Presence, callee: Presence, startedAt: Int64, ringDeadline: Instant) {
        self.id = id
        self.callerCallID = callerCallID
        self.caller = caller
        self.callee = callee
        self.startedAtUnixMilliseconds = startedAt
        self.ringDeadline = ringDeadline
    }

    /// The id `party` knows this call by.
    func callID(for party: Presence) -> UInt32 { party === caller ? callerCallID : id }
    /// The other party.
    func other(than party: Presence) -> Presence { party === caller ? callee : caller }
    /// Whether `party` knows this call as `callID`.
    func matches(_ party: Presence, callID: UInt32) -> Bool {
        (party === caller && callerCallID == callID) || (party === callee && id == callID)
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
}
