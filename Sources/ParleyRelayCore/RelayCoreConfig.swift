import ParleyWire

/// The settings the relay core works by. Spans of the monotonic clock are `Interval`s; a setting named in seconds or
/// milliseconds goes into a wire or wall-clock field in that unit.
public struct RelayCoreConfig: Sendable, Equatable {
    /// Members allowed in one room.
    public var maxMembersPerRoom = 100
    /// Rooms allowed on the whole relay.
    public var maxRooms = 1000
    /// Rooms one identity may have opened by joining (with the `create` grant) at a time; rooms the backend creates
    /// through the API do not count.
    public var maxRoomsPerIdentity = 10
    /// A room with no members closes after this long.
    public var emptyRoomTimeout: Interval = .seconds(300)
    /// A member not heard from for this long is removed.
    public var memberTimeout: Interval = .seconds(15)
    /// How often members are told to send a ping (never more than a third of `memberTimeout`).
    public var keepaliveInterval: Interval = .seconds(5)
    /// Speakers forwarded to each listener at a time.
    public var maxForwardedSpeakers = 3
    /// Speaker lists are pushed to a room at most this often when someone starts or stops speaking.
    public var speakerUpdateInterval: Interval = .milliseconds(200)
    /// …and at most this often when only a speaker's level moved (by 10 dB or more): levels are for display, and
    /// each push is a reliable message (and an ack) per member.
    public var speakerLevelUpdateInterval: Interval = .seconds(1)
    /// Membership changes reach a room at most this often, batched (`memberDelta`): who joined and left since the last
    /// update. Rooms of at most `memberUpdateImmediateLimit` members are told at once (a change costs them that many
    /// messages); bigger ones batch, so a join storm costs each member one update per interval, not one per join.
    public var memberUpdateInterval: Interval = .milliseconds(250)
    /// See `memberUpdateInterval`.
    public var memberUpdateImmediateLimit = 16
    /// A forward room with at least this many listeners shares them among the workers for sending (`FanOutTable`):
    /// the owner passes each packet once to each other worker, which sends it to its share. 0: never.
    public var spreadThreshold = 256
    /// In a cluster, a join for a room that lives on another node is sent there until that node holds this many of the
    /// room's members; past that (or when it drains) the node the join reached takes it and cascades. 0: every node
    /// takes its own joins.
    public var cascadeAfter = 500
    /// In audience rooms, a change of the audience count alone is told at most this often.
    public var audienceUpdateInterval: Interval = .seconds(2)
    /// When a packet is speech and how long a speaker stays speaking (shared with the client: `SpeechRules`).
    public var speech = SpeechRules.standard
    /// A member stays in the announced speaker list this long after its last speech packet (`speech.hold`).
    public var speakingHold: Interval {
        get { speech.hold }
        set { speech.hold = newValue }
    }
    /// A forwarded speaker silent this long gives up its slot to anyone who starts speaking.
    public var speakerReleaseAfter: Interval = .milliseconds(1500)
    /// A forwarded speaker keeps its slot at least this long against a louder newcomer.
    public var speakerMinimumDwell: Interval = .milliseconds(500)
    /// A newcomer must be this many dB louder (smoothed) than the quietest forwarded speaker to take its slot.
    public var speakerHysteresisDecibels: Float = 6
    /// RFC 6464 level (−dBov) at or below which a packet counts as speech (`speech.levelThreshold`).
    public var speechLevelThreshold: UInt8 {
        get { speech.levelThreshold }
        set { speech.levelThreshold = newValue }
    }
    /// The RTP header extension id carrying the RFC 6464 audio level.
    public var audioLevelExtensionID: UInt8 = 1
    /// Reliable signalling messages a member or presence session may have pending (in flight and waiting) before the
    /// relay gives up on it: a session that cannot take a member event, member page, speaker list or status is
    /// removed (`goodbye`: not keeping up). A member's queue also holds at least 2 × its room's capacity + 64 (a join
    /// storm queues an event per join before anyone can acknowledge them).
    public var signallingQueueLimit = 512
    /// Texts are queued to a recipient only while it has fewer messages than this pending (fragments included); a
    /// recipient that does not keep up is skipped and the sender told so (a text flood holds at most ~58 KB of text
    /// per recipient).
    public var textQueueLimit = 64
    /// Packets kept per publisher for answering NACKs (128 × 20 ms = 2.56 s).
    public var nackHistorySlots = 128
    /// Retransmissions a member may be sent in answer to its NACKs, as a share (percent) of the media bytes
    /// forwarded to it: a token bucket refilled at this rate, holding at most `nackBurstBytes`, never above what the
    /// member was forwarded in all (`RetransmissionBudget`).
    public var nackBudgetPercent = 20
    /// The most retransmitted bytes a member may take at once (the budget's bucket size).
    public var nackBurstBytes = 6_000
    /// Uplink repair (`UplinkRepair`): the relay NACKs a forwarded speaker for packets lost on the way in, and
    /// forwards the retransmissions. On by default; off, gaps are still counted but nobody is asked.
    public var uplinkRepair = true
    /// A missing packet is asked for only this long after its gap was seen: about what a listener's jitter buffer
    /// holds on a lossy path (its target delay on the `moderate` impairment profile is around 100 ms), beyond which a
    /// retransmission reaches listeners too late to be played.
    public var uplinkRepairWindow: Interval = .milliseconds(120)
    /// A missing packet is asked for a second time this long after the first NACK (once).
    public var uplinkRepairRetry: Interval = .milliseconds(60)
    /// NACK datagrams the relay sends one speaker per second, at most (each names at most 64 sequence numbers).
    public var uplinkRepairNacksPerSecond = 10
    /// The floor of the relay's RTCP report interval to each member (RFC 3550 §6.3.1's Tmin; the actual interval is
    /// randomized around it, `RTCPInterval`). 1 s rather than RFC 3550's 5 s: the speakers' and the mix encoders'
    /// in-band FEC follow the loss these reports carry, and should hear of it within about a second.
    public var receiverReportInterval: Interval = .seconds(1)
    /// A join cookie is valid this many seconds.
    public var cookieLifetimeSeconds: Int64 = 60
    /// Joins with a valid cookie a worker processes per second (token bucket; the rest are dropped as a flood).
    public var joinsPerSecond: Double = 500
    /// Cookie answers (retries) a worker sends per second to unverified addresses.
    public var retriesPerSecond: Double = 5000
    /// The mode of rooms created without one.
    public var defaultRoomMode = RoomMode.forward
    /// Mix mode: Opus complexity of the mix encoders.
    public var mixComplexity = 5
    /// Mix mode: bit rate of each mix, the client's default (56 kbit/s: through the `moderate` impairment profile
    /// PESQ-WB 3.10–3.39 against 2.60–3.02 at 40 kbit/s, because in-band FEC takes its bits from the primary
    /// encoding; on a clean path 40 kbit/s scored 3.40 against 3.21 at 32).
    public var mixBitrate = 56_000
    /// Mix mode: the least loss each mix encoder protects against with in-band FEC, in percent; listeners' receiver
    /// reports about the mix raise it (`LossAdaptiveFEC`). FEC costs quality on a clean path, hence 0.
    public var mixExpectedLossPercent = 0
    /// Mix mode: while one member speaks, frames that are exactly one of its packets go to the listeners as they came
    /// (no second coding, no encode); false encodes every frame.
    public var mixPassThrough = true
    /// Mix mode: answer listeners' NACKs about the mix from its history (`MixHistory`). Off by default: on the moderate
    /// profile answering them scored lower (PESQ-WB 2.49–2.73 against 2.68–2.80 without, three seeds each), for a
    /// reason not yet found.
    public var mixNack = false
    /// Mix mode (and a hybrid room's audience): a member who starts speaking while nobody else has spoken for
    /// `speakingHold` is forwarded to the mix's listeners packet by packet as it arrives — under the mix's SSRC and
    /// numbering, no jitter buffer, no coding, NACKs answered, its uplink losses asked for — until another member
    /// speaks (`MixEngine+LoneSpeaker.swift`). False: every frame goes through the mixer's buffers.
    public var mixForwardLoneSpeaker = true
    /// Mix mode: the floor of each publisher's jitter-buffer target delay.
    public var mixMinimumJitterDelayMilliseconds = 20
    /// Mix mode: the RTP header extension id of the RFC 6465 CSRC audio levels.
    public var csrcAudioLevelExtensionID: UInt8 = 3
    /// The longest datagram accepted.
    public var maxDatagramSize = 1500
    /// A debugging switch, off by default: admits the version-1 cleartext protocol (token, names, texts and voice
    /// readable on the path) beside the encrypted one, and plain-RTP endpoints without SRTP when their request asks.
    public var allowCleartext = false

    // MARK: Presence and calls (`PresenceDirectory.swift`, `CallRouter.swift`, `Call.swift`)

    /// Presence sessions (devices) one identity may have online at once; a register beyond it replaces the oldest
    /// (`goodbye: replaced`, saying so). Calls ring, and direct texts reach, every one of them.
    public var maxPresenceSessionsPerIdentity = 8
    /// A call to a `sip:` address rings the relay's SIP gateway (set when it runs one, `--sip`): the callee is a
    /// stand-in device the gateway answers for (`CallRouter.sipStandIn`). Off: such a call is `unavailable`.
    public var sipCallees = false
    /// A call not answered within this long ends: the caller hears `noAnswer`.
    public var ringTimeout: Interval = .seconds(30)
    /// Lifetime of the join tokens the relay mints for a call room, in seconds.
    public var callTokenLifetimeSeconds: Int64 = 3600
    /// The API key (id) the relay signs call-room tokens with; nil = the first configured key in sorted order.
    public var callTokenKey: String?
    /// Recent call events kept for the HTTP API (oldest overwritten first).
    public var callEventCapacity = 256

    /// Defaults as documented.
    public init() {}
}
