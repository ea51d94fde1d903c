import ParleyWire

/// Traffic counters of one member, as the HTTP API will show them.
public struct MemberStats: Sendable, Equatable {
    /// RTP/RTCP packets and bytes received from the member.
    public var packetsIn: UInt64 = 0, bytesIn: UInt64 = 0
    /// Packets and bytes sent to the member (forwarded media and retransmissions).
    public var packetsOut: UInt64 = 0, bytesOut: UInt64 = 0
    /// NACKs the member sent, and packets resent to it in answer.
    public var nacksReceived: UInt64 = 0, retransmittedToMember: UInt64 = 0
    /// Zeroed stats.
    public init() {}
}

/// One member of a room, owned by the worker that owns the room.
final class Member {
    // What the room's fan-out table copies (see `FanOutTable`): changing it marks the table for a rebuild.
    var address: PeerAddress { didSet { room.fanOut.invalidate() } }
    let canSubscribe: Bool
    /// Whether `address` is somewhere to send media (false for an RTP endpoint until it latches or is given one).
    var hasDestination = true { didSet { room.fanOut.invalidate() } }
    /// A plain-RTP endpoint created by the HTTP API: no signalling, address latched from its first RTP packet.
    var isRTPEndpoint = false { didSet { room.fanOut.invalidate() } }
    /// Traffic counters. Forwarded media is counted in the room's fan-out table first: read these after
    /// `room.fanOut.foldCounters()`.
    var stats = MemberStats()

    let id: UInt32
    let connectionID: UInt32
    /// Assigned at join; an RTP endpoint takes the SSRC of its first packet (see `RelayCore+RTPEndpoints.swift`).
    var ssrc: UInt32
    let identity: String
    let name: String
    let canPublish: Bool
    let sessionSecret: [UInt8]
    let joinNonce: [UInt8]
    let joinedAtUnixMilliseconds: Int64
    let token: String
    /// Strong: a removed member leaves `room.members`, and the room's derived tables let go of it then too (the
    /// fan-out table as it goes stale, the mixer after each frame), which breaks the cycle (see `LiveCounts`).
    let room: Room
    /// Signalling goes out of the public port until the member's first datagram reaches its worker's port.
    var viaPublicPort: Bool
    var muted: Bool
    var lastHeard: Int64
    /// Path validation (`PathChallenge`): the issue time of the last challenge this session answered (each is
    /// single-use), and when it was last sent one (at most one per `RelayCore.pathChallengeInterval`).
    var pathValidatedAt: Int64 = .min
    var lastChallengeSent: Int64 = .min / 2
    var channel = ReliableChannel()
    var texts = TextReassembler()
    var receiveStats = RTPReceiveStatistics(clockRate: 48_000)
    /// The member's last packets, to answer NACKs: nil until its first RTP packet (see `startHistory`).
    var history: PacketHistory?
    /// Bytes of retransmissions this member may still be sent in answer to its NACKs (refilled from `stats.bytesOut`).
    var nackBudget = RetransmissionBudget()
    /// Middle 32 bits of the NTP time of the member's last sender report, and when it arrived.
    var lastSenderReport: (ntpMiddle: UInt32, at: Int64)?
    var lastReceiverReport: Int64 = 0
    /// What listeners reported about this member's stream, checked and aggregated for the relay's next receiver
    /// report to it (forward mode; see `sendReceiverReport`).
    var listenerReports = ListenerReports()
    /// Tells who speaks from the media it receives (join field 37): a forward room sends it no `speakers`.
    var speakersFromMedia = false
    /// Whether `speakers` messages go to this member: always in a mix room (one mixed stream does not say who
    /// speaks as plainly), in a forward room unless it tells speakers from the forwarded streams itself.
    var wantsSpeakerLists: Bool { !speakersFromMedia || room.mix != nil }
    /// Sequence number of the next mixed packet this member receives (mix mode).
    var mixSequence = UInt16.random(in: 0...UInt16.max)
    /// The only address a publishing RTP endpoint's packets are accepted from (named at creation).
    var rtpSource: PeerAddress?

    init(id: UInt32, connectionID: UInt32, ssrc: UInt32, identity: String, name: String, canPublish: Bool,
         canSubscribe: Bool, sessionSecret: [UInt8], joinNonce: [UInt8], joinedAt: Int64, token: String, room: Room,
         address: PeerAddress, viaPublicPort: Bool, muted: Bool, now: Int64) {
        self.id = id
        self.connectionID = connectionID
        self.ssrc = ssrc
        self.identity = identity
        self.name = name
        self.canPublish = canPublish
        self.canSubscribe = canSubscribe
        self.sessionSecret = sessionSecret
        self.joinNonce = joinNonce
        self.joinedAtUnixMilliseconds = joinedAt
        self.token = token
        self.room = room
        self.address = address
        self.viaPublicPort = viaPublicPort
        self.muted = muted
        self.lastHeard = now
    }

    var flags: MemberFlags {
        var f: MemberFlags = []
        if muted { f.insert(.muted) }
        if canPublish { f.insert(.publisher) }
        if canSubscribe { f.insert(.subscriber) }
        return f
    }

    /// Allocates the NACK history (at the member's first RTP packet).
    func startHistory(slots: Int) -> PacketHistory {
        let h = PacketHistory(slots: slots)
        history = h
        return h
    }

    var entry: MemberEntry { MemberEntry(memberID: id, ssrc: ssrc, flags: flags, identity: identity, name: name) }
}

/// One room: its members, its speaker selection, and its speaker-announcement schedule.
final class Room {
    let name: String
    let mode: String
    let createdAtUnixMilliseconds: Int64
    /// The identity whose join opened the room (counted against `maxRoomsPerIdentity`); nil for rooms the backend made.
    let creator: String?
    /// Members in join order. Any change marks `fanOut` for a rebuild.
    var members: [Member] = [] { didSet { fanOut.invalidate() } }
    /// The listeners as the forwarding loop reads them, derived from `members`.
    let fanOut = FanOutTable()
    var selector: SpeakerSelector
    var emptySince: Int64?
    var lastSpeakerPush: Int64 = .min / 2
    var speakerPushDue: Int64?
    var announcedSpeakers: [SpeakerEntry] = []
    /// The mixer, in mix mode.
    var mix: MixEngine?
    /// Limits set by the HTTP API at creation (nil = the relay's defaults).
    var maxMembers: Int?, emptyTimeout: Int64?

    init(name: String, mode: String, createdAt: Int64, creator: String?, selector: SpeakerSelector) {
        self.name = name
        self.mode = mode
        self.createdAtUnixMilliseconds = createdAt
        self.creator = creator
        self.selector = selector
    }

    func member(identity: String) -> Member? { members.first { $0.identity == identity } }
}

/// A read-only view of a member for reports and tests.
public struct MemberSnapshot: Sendable, Equatable {
    /// Member id.
    public var id: UInt32
    /// Identity.
    public var identity: String
    /// Display name.
    public var name: String
    /// Its SSRC.
    public var ssrc: UInt32
    /// Its latched address.
    public var address: PeerAddress
    /// Muted.
    public var muted: Bool
    /// Forwarded right now.
    public var forwarded: Bool
    /// Smoothed level (RFC 6464 scale).
    public var level: UInt8
    /// Joined at (Unix ms).
    public var joinedAtUnixMilliseconds: Int64
    /// Traffic.
    public var stats: MemberStats
    /// Packets lost from this member's stream (RFC 3550 cumulative).
    public var packetsLost: Int64
    /// Interarrival jitter of this member's stream in RTP units.
    public var jitter: UInt32
}

/// A read-only view of a room.
public struct RoomSnapshot: Sendable, Equatable {
    /// Name.
    public var name: String
    /// "forward" or "mix".
    public var mode: String
    /// Created at (Unix ms).
    public var createdAtUnixMilliseconds: Int64
    /// Members.
    public var members: [MemberSnapshot]
    /// Member ids currently forwarded.
    public var forwardedSpeakers: [UInt32]
}
