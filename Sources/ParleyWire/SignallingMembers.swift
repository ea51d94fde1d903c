// A room's members as signalling describes them: entries and their flags, speakers, events, batched deltas.

/// Member state bits carried in member entries.
public struct MemberFlags: OptionSet, Equatable, Sendable, Hashable {
    public let rawValue: UInt8
    /// Creates flags from their byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The member is muted.
    public static let muted = MemberFlags(rawValue: 1 << 0)
    /// The member may publish audio.
    public static let publisher = MemberFlags(rawValue: 1 << 1)
    /// The member receives audio.
    public static let subscriber = MemberFlags(rawValue: 1 << 2)
    /// The room (the backend) muted the member: set with `muted`, and only the room lifts it; the member's own
    /// unmute is refused while it holds.
    public static let mutedByRoom = MemberFlags(rawValue: 1 << 3)
    /// In a welcome only: the relay answers NACKs about the room's mix (a mix or hybrid room whose lone speaker is
    /// forwarded packet by packet, or `mix_nack`), so a listener's jitter buffer may leave room for the repairs.
    public static let mixRepaired = MemberFlags(rawValue: 1 << 4)
    /// In a welcome only, to a member that asked (`JoinRequest.redundancy`): the relay takes RFC 2198 RED from it
    /// (payload type `RedundantAudio.defaultPayloadType`) and may send it RED; the member may send RED while its
    /// path shows loss.
    public static let redundancy = MemberFlags(rawValue: 1 << 5)
}

/// One member of a room as the relay describes it.
public struct MemberEntry: Equatable, Sendable {
    /// Relay-assigned member id, unique within the relay's lifetime.
    public var memberID: UInt32
    /// The SSRC the member's audio arrives with.
    public var ssrc: UInt32
    /// Muted / publisher / subscriber.
    public var flags: MemberFlags
    /// The identity from the member's token (`sub`).
    public var identity: String
    /// The display name from the token (may be empty).
    public var name: String

    /// A member entry.
    public init(memberID: UInt32, ssrc: UInt32, flags: MemberFlags, identity: String, name: String) {
        self.memberID = memberID
        self.ssrc = ssrc
        self.flags = flags
        self.identity = identity
        self.name = name
    }
}

/// One active speaker in a speaker update.
public struct SpeakerEntry: Equatable, Sendable {
    /// The speaking member.
    public var memberID: UInt32
    /// Its SSRC.
    public var ssrc: UInt32
    /// Smoothed audio level, 0 (loudest, 0 dBov) … 127 (silence), as in RFC 6464.
    public var level: UInt8

    /// A speaker entry.
    public init(memberID: UInt32, ssrc: UInt32, level: UInt8) {
        self.memberID = memberID
        self.ssrc = ssrc
        self.level = level
    }
}

/// What happened to a member, in a member event.
public enum MemberEventKind: UInt8, Equatable, Sendable {
    case joined = 1, left = 2, muted = 3, unmuted = 4
}

/// A batch of membership changes (`SignalMessage.memberDelta`).
public struct MemberDelta: Equatable, Sendable {
    /// A member who left, and why ("left", "timed out", …).
    public struct Departure: Equatable, Sendable {
        public var memberID: UInt32
        public var reason: String
        public init(memberID: UInt32, reason: String) {
            self.memberID = memberID
            self.reason = reason
        }
    }

    /// Announced members who joined, in order.
    public var joined: [MemberEntry]
    /// Announced members who left, in order.
    public var left: [Departure]
    /// Audience members in the room now (listeners counted, not announced one by one).
    public var audience: UInt32

    /// A delta.
    public init(joined: [MemberEntry] = [], left: [Departure] = [], audience: UInt32 = 0) {
        self.joined = joined
        self.left = left
        self.audience = audience
    }
}
