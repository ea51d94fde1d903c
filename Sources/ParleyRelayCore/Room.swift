import ParleyCrypto
import ParleyWire

/// One room: its members, its speaker selection, and its speaker-announcement schedule.
final class Room {
    let name: String
    let mode: RoomMode
    let createdAtUnixMilliseconds: Int64
    /// The identity whose join opened the room (counted against `maxRoomsPerIdentity`); nil for rooms the backend made.
    let creator: String?
    /// Members in join order. Any change marks `fanOut` for a rebuild.
    var members: [Member] = [] { didSet { fanOut.invalidate() } }
    /// The listeners as the forwarding loop reads them, derived from `members`.
    let fanOut: FanOutTable
    var selector: SpeakerSelector
    var emptySince: Instant?
    var lastSpeakerPush = Instant.distantPast
    var speakerPushDue: Instant?
    var announcedSpeakers: [SpeakerEntry] = []
    /// The identities of `announcedSpeakers` when the last `speakers` event was logged.
    var announcedSpeakerNames: [String] = []
    /// The mixer, in mix and hybrid mode.
    var mix: MixEngine?
    /// The room's recording while one runs (`RelayCore+Recording.swift`).
    var recording: RoomRecording?
    /// Hybrid mode: members who may publish hear each other's streams forwarded (as in a forward room); members who
    /// may not hear one shared mix of the speakers (as the audience of a mix room), and nobody gets a minus-one mix.
    let isHybrid: Bool
    /// Whether speakers' packets are forwarded to members (forward and hybrid rooms).
    var forwards: Bool { mix == nil || isHybrid }
    /// Whether `member` is sent the room's mix: everyone in a mix room, members who may not publish in a hybrid one.
    func hearsMix(_ member: Member) -> Bool { mix != nil && !(isHybrid && member.canPublish) }
    /// Who is told of whom, and when (audience, batched deltas).
    var roster = RoomRoster()
    /// Limits set by the HTTP API at creation (nil = the relay's defaults).
    var maxMembers: Int?, emptyTimeout: Interval?
    /// Identities the backend muted: the mute holds across their rejoins until the backend lifts it (at most one
    /// entry per backend mute, forgotten with the room).
    var mutedByRoom: Set<String> = []
    /// Forward mode, encrypted members: the key forwarded packets are protected with, once per packet for every
    /// listener (they all hold it, from their sealed welcome, or a `roomKey` message since). Made at the first
    /// encrypted member's join, and replaced after members who held it leave (`RelayCore+RoomKeys.swift`).
    private(set) lazy var downstreamKey = MediaKey.random()
    /// Protects forwarded packets with `downstreamKey` (nil until an encrypted member joined).
    private(set) var downstream: SRTPSender?
    /// Speakers the downstream context tracks at once.
    private var downstreamStreams = 16
    /// Which of the room's keys `downstreamKey` is: 0 first, one more at each change.
    private(set) var downstreamKeyID: UInt32 = 0
    /// The next key, sent to the members who stay after a departure and not in use yet (`RoomKeyChange`).
    var keyChange: RoomKeyChange?
    /// When the key last changed.
    var keyChangedAt = Instant.distantPast

    /// Starts the downstream SRTP context if it is not running, tracking up to `streams` speakers.
    func startDownstream(streams: Int) throws(SRTPError) {
        guard downstream == nil else { return }
        downstreamStreams = max(16, streams)
        downstream = try downstreamKey.sender(maxStreams: downstreamStreams)
    }

    /// From now on forwarded packets are protected with `key`, which becomes key `id`; every stream carries on
    /// where it stood (`SRTPSender.successor`).
    func useDownstreamKey(_ key: MediaKey, id: UInt32) throws(SRTPError) {
        if let downstream { self.downstream = try downstream.successor(key: key, maxStreams: downstreamStreams) }
        downstreamKey = key
        downstreamKeyID = id
    }

    init(name: String, mode: RoomMode, createdAt: Int64, creator: String?, selector: SpeakerSelector,
         fanOut: FanOutTable = FanOutTable()) {
        self.fanOut = fanOut
        self.name = name
        self.mode = mode
        isHybrid = mode == .hybrid
        fanOut.publishersOnly = isHybrid
        self.createdAtUnixMilliseconds = createdAt
        self.creator = creator
        self.selector = selector
    }

    /// In a cluster: the other nodes sharing the room and their members (`RelayCore+Cascade.swift`); nil alone.
    var cascade: RoomCascade?
    /// Whether this node runs the room's mix (mix mode): alone always; in a cluster, the one node the room's nodes agree
    /// on (`RoomCascade.mixesHere`).
    /// A hybrid room mixes on every node, for its own listeners, from the speakers forwarded to it.
    var mixesHere: Bool { isHybrid || (cascade?.mixesHere ?? true) }
    /// Whether any member is connected to this node (members of other nodes do not keep a room open here).
    var hasLocalMembers: Bool { members.contains { $0.isLocal } }

    /// A member connected here with this identity (the API and rejoins act on those only).
    func member(identity: String) -> Member? { members.first { $0.identity == identity && $0.isLocal } }
    /// Any member with this id, here or on another node.
    func member(id: UInt32) -> Member? { members.first { $0.id == id } }
}

/// A read-only view of a room.
public struct RoomSnapshot: Sendable, Equatable {
    /// Name.
    public var name: String
    /// How it carries its speakers.
    public var mode: RoomMode
    /// Created at (Unix ms).
    public var createdAtUnixMilliseconds: Int64
    /// Members.
    public var members: [MemberSnapshot]
    /// Member ids currently forwarded.
    public var forwardedSpeakers: [UInt32]
    /// Whether its listeners are audience (`RoomRoster`), and how many it has.
    public var audienceMode = false
    public var audience = 0
    /// The id of the recording running in the room (nil: not recorded).
    public var recording: String?
}
