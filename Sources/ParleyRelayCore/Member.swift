import ParleyCrypto
import ParleyWire

/// Traffic counters of one member, as the HTTP API will show them.
public struct MemberStats: Sendable, Equatable {
    /// RTP/RTCP packets and bytes received from the member.
    public var packetsIn: UInt64 = 0, bytesIn: UInt64 = 0
    /// Packets and bytes sent to the member (forwarded media and retransmissions).
    public var packetsOut: UInt64 = 0, bytesOut: UInt64 = 0
    /// NACKs the member sent, and packets resent to it in answer.
    public var nacksReceived: UInt64 = 0, retransmittedToMember: UInt64 = 0
    /// RTCP sender reports received about the member's own stream.
    public var senderReports: UInt64 = 0
    /// Zeroed stats.
    public init() {}
}

/// How a member is connected to this relay: what kind of member it is. The kind decides where its packets come from
/// and how they are protected; everything else about a member is the same for every kind. (No reference in it: the
/// hot path switches on it without retaining anything; an endpoint's state is `Member.endpoint`.)
enum MemberKind: Equatable {
    /// A Parley client: its own signalling session (sealed, or cleartext for debugging), SRTP with its handshake's keys.
    case native
    /// A plain-RTP endpoint the backend created (`RelayCore+RTPEndpoints.swift`): addresses named by the API, SDES
    /// SRTP (or cleartext), no signalling.
    case rtpEndpoint
    /// A WebRTC member (`RelayCore+WebRTC.swift`): an endpoint whose address comes from its ICE checks and whose SRTP
    /// keys come from its DTLS handshake (`EndpointLink.webrtc`).
    case webrtc
    /// A member of another node of the cluster, as that node's roster named it (`RelayCore+Cascade.swift`): no session
    /// here (nothing is sent to it, it never times out here); its media comes over the relay-to-relay link.
    case cascade(CascadeOrigin)

    /// A member whose payload type 63 is RFC 2198 RED (`RedundantAudio`): one with Parley's signalling (here, or on
    /// another node). An endpoint's payload types are its own.
    var speaksRedundancy: Bool {
        switch self {
        case .native, .cascade: true
        case .rtpEndpoint, .webrtc: false
        }
    }
}

/// What an endpoint (plain RTP or WebRTC) has that a member with signalling does not: where its packets may come
/// from, the streams it receives, its SRTP. One per endpoint member, owned with it.
final class EndpointLink {
    /// The only address its RTP is accepted from (named at creation for plain RTP; latched by ICE for WebRTC).
    var rtpSource: PeerAddress?
    /// Where a plain-RTP endpoint's tool may send RTCP from besides `rtpSource`: the next port up from its RTP port, as
    /// tools without RTCP multiplexing do (ffmpeg sends its reports from its RTP port + 1), and a subscriber's own
    /// receive address. RTCP only: RTP from these is dropped. Named at creation like the rest, never learned.
    var rtcpSources: [PeerAddress] = []
    /// The streams a subscribing endpoint receives in a forward room, one per slot, each one SSRC with continuous
    /// numbering fed by one forwarded speaker at a time (`RTPStreamRewriter`): a plain-RTP endpoint has one (the
    /// loudest speaker), a WebRTC member one per receiving audio section of its offer, up to the room's forwarding
    /// slots (each forwarded speaker keeps its slot while forwarded). Empty in mix rooms.
    var streams: [RTPStreamRewriter] = []
    /// Its SRTP sessions (nil: a cleartext endpoint, or a WebRTC member before its DTLS handshake); see `EndpointSRTP`.
    var srtp: EndpointSRTP?
    /// A WebRTC member's ICE-lite and DTLS state and what its offer negotiated (nil: a plain-RTP endpoint).
    let webrtc: WebRTCTransport?

    init(rtpSource: PeerAddress? = nil, rtcpSources: [PeerAddress] = [], webrtc: WebRTCTransport? = nil) {
        self.rtpSource = rtpSource
        self.rtcpSources = rtcpSources
        self.webrtc = webrtc
    }

    /// The index of the stream with `ssrc`, if any.
    func stream(ssrc: UInt32) -> Int? { streams.firstIndex { $0.ssrc == ssrc } }
}

/// The relay's RTCP with one member (RFC 3550 §6): reports it sent and when the next is due, round trips, and what
/// listeners said about the member's stream.
struct MemberRTCP {
    /// Middle 32 bits of the NTP time of the member's last sender report, and when it arrived.
    var lastSenderReport: (ntpMiddle: UInt32, at: Instant)?
    /// When the relay's next regular RTCP report to the member is due (`RTCPFeedback.sendReport`; RFC 3550 §6.3
    /// intervals from `RTCPInterval`).
    var nextReport = Instant.origin
    /// The running average size of the relay's RTCP to the member (RFC 3550 §6.3.3), for the report interval.
    var averageReportSize = 100.0
    /// NTP middle words of the last two sender reports the relay sent the member: an LSR must name one of them to give
    /// a round trip (a member cannot steer `roundTrip` with an LSR the relay never sent).
    var senderReportsSent: (last: UInt32, previous: UInt32) = (0, 0)
    /// The round trip to the member, from its report blocks' LSR/DLSR about a stream the relay originates (RFC 3550
    /// §6.4.1), smoothed; nil until one arrived.
    var roundTrip: Interval?
    /// What listeners reported about this member's stream, checked and aggregated for the relay's next receiver
    /// report to it (forward mode; see `RTCPFeedback.sendReport`).
    var listenerReports = ListenerReports()
}

/// What a member of a mix room has been sent of the mix (mix mode, and a hybrid room's listeners).
struct MixListener {
    /// Sequence number of the next mixed packet this member receives.
    var sequence: UInt16
    /// The mix frame this member was last sent: a gap before the next sets its marker bit.
    var lastFrame: UInt32?
    /// What this member was sent of the mix, by sequence number, for its NACKs (made at its first mixed packet).
    var log: MixSendLog?
    /// A lone speaker forwarded into the mix (`MixEngine+LoneSpeaker.swift`): the forwarding this member's numbers
    /// follow (0: none yet) and the offset from the speaker's sequence numbers to this member's mix numbers.
    var loneEpoch: UInt32 = 0, loneSequenceOffset: UInt16 = 0
    /// RTP packets and payload octets of the mix sent to this member: its sender reports' counts.
    var packetsSent: UInt32 = 0, octetsSent: UInt32 = 0
}

/// What a member asked for at its join, or the room made of it.
struct MemberTraits {
    /// In an audience room, a member that cannot publish: counted, not announced (`RoomRoster`).
    var isAudience = false
    /// Tells who speaks from the media it receives (join field 37): a forward room sends it no `speakers`.
    var speakersFromMedia = false
    /// Whether the member's token asked for end-to-end encryption (claim `e2ee`): its payloads are sealed before the
    /// relay sees them, so a recording leaves its stream out rather than store what nobody can play.
    var endToEnd = false
    /// Took RFC 2198 RED at its join (join field 61, `JoinRequest.redundancy`): it may send RED, and is sent RED where
    /// every member of the room's fan-out took it too (`FanOutTable.everyMemberTakesRedundancy`).
    var redundancy = false
}

/// What the relay keeps of a member's own stream: its statistics, its last packets for NACKs, the gaps it asks the
/// member to fill, and what it may still resend to it.
struct MemberUplink {
    var receiveStats = RTPReceiveStatistics(clockRate: 48_000)
    /// The member's last packets, to answer NACKs: nil until its first RTP packet (see `Member.startHistory`).
    var history: PacketHistory?
    /// The sequence numbers missing from its stream, for uplink repair: nil until its first packet in a forward room.
    var gaps: UplinkGaps?
    /// Bytes of retransmissions this member may still be sent in answer to its NACKs (refilled from `stats.bytesOut`).
    var nackBudget = RetransmissionBudget()
}

/// One member of a room, owned by the worker that owns the room: who it is, its kind (`kind`, and an endpoint's
/// `endpoint`), its standing in the room, and its media state in small parts (`uplink`, `rtcp`, `mix`).
final class Member {
    // What the room's fan-out table copies (see `FanOutTable`): changing it marks the table for a rebuild.
    var address: PeerAddress {
        get { session.address }
        set { session.address = newValue; room.fanOut.invalidate() }
    }
    let canSubscribe: Bool
    /// Whether `address` is somewhere to send media (false for an RTP endpoint until it latches or is given one).
    var hasDestination = true { didSet { room.fanOut.invalidate() } }
    /// Traffic counters. Forwarded media is counted in the room's fan-out table first: read these after
    /// `room.fanOut.foldCounters()`.
    var stats = MemberStats()

    let id: UInt32
    /// The member's signalling session (handshake results, channel, keepalive, path validation); an endpoint's or a
    /// cascaded member's holds only its identity and address.
    let session: RelaySession
    /// How it is connected.
    let kind: MemberKind
    /// A plain-RTP endpoint's or a WebRTC member's own state (nil for the other kinds).
    let endpoint: EndpointLink?
    /// Assigned at join; an RTP endpoint takes the SSRC of its first packet (see `RelayCore+RTPEndpoints.swift`).
    var ssrc: UInt32
    let canPublish: Bool
    /// What it asked for at its join, or the room made of it.
    var traits = MemberTraits()
    let joinedAtUnixMilliseconds: Int64
    /// Strong: a removed member leaves `room.members`, and the room's derived tables let go of it then too (the
    /// fan-out table as it goes stale, the mixer after each frame), which breaks the cycle (see `LiveCounts`).
    let room: Room
    var muted: Bool
    /// Muted by the backend: `muted` holds until the backend lifts it; the member's own unmute is refused.
    var mutedByRoom = false
    /// Its own stream as the relay receives it.
    var uplink = MemberUplink()
    /// The relay's RTCP with it.
    var rtcp = MemberRTCP()
    /// What it has been sent of the room's mix (mix mode).
    var mix: MixListener
    /// An encrypted member's SRTP/SRTCP from it (nil: cleartext, debugging only).
    var srtpIn: SRTPReceiver?
    /// An encrypted member's SRTP/SRTCP to it: the relay's own RTCP and, in a mix room, its mix.
    var srtpOut: SRTPSender?

    init(id: UInt32, session: RelaySession, kind: MemberKind = .native, endpoint: EndpointLink? = nil, ssrc: UInt32,
         canPublish: Bool, canSubscribe: Bool, joinedAt: Int64, room: Room, muted: Bool, mixSequence: UInt16) {
        precondition((kind == .rtpEndpoint || kind == .webrtc) == (endpoint != nil), "an endpoint's state goes with an endpoint's kind")
        self.id = id
        self.session = session
        self.kind = kind
        self.endpoint = endpoint
        self.ssrc = ssrc
        self.canPublish = canPublish
        self.canSubscribe = canSubscribe
        self.joinedAtUnixMilliseconds = joinedAt
        self.room = room
        self.muted = muted
        self.mix = MixListener(sequence: mixSequence)
    }

    // MARK: The kind

    /// A WebRTC member's ICE-lite and DTLS state (nil: every other kind).
    var webrtc: WebRTCTransport? { endpoint?.webrtc }
    /// Where a cascaded member comes from (nil: a member connected here).
    var cascadeOrigin: CascadeOrigin? {
        if case .cascade(let origin) = kind { origin } else { nil }
    }
    /// A plain-RTP endpoint or a WebRTC member: no signalling, addresses named by the API or latched by ICE.
    var isRTPEndpoint: Bool { endpoint != nil }
    /// Whether the member is connected to this node.
    var isLocal: Bool { cascadeOrigin == nil }
    /// How it is connected, as the API names it.
    var transport: String {
        switch kind {
        case .native: "parley"
        case .rtpEndpoint: "rtp"
        case .webrtc: "webrtc"
        case .cascade: "cascade"
        }
    }
    /// An endpoint's SRTP (nil: a member with signalling, a cleartext endpoint, or a WebRTC member before DTLS).
    /// Setting it changes what the fan-out table copies.
    var endpointSRTP: EndpointSRTP? {
        get { endpoint?.srtp }
        set { endpoint?.srtp = newValue; room.fanOut.invalidate() }
    }

    // MARK: Media

    /// Whether `speakers` messages go to this member: always in a mix room (one mixed stream does not say who
    /// speaks as plainly), in a forward room unless it tells speakers from the forwarded streams itself.
    var wantsSpeakerLists: Bool { !traits.speakersFromMedia || room.mix != nil }
    /// Whether media to this member goes in the clear (a cleartext member, or an RTP endpoint without SRTP).
    var receivesCleartext: Bool { srtpOut == nil }

    /// Starts SRTP with the keys of the member's handshake (and the room's downstream key where speakers are forwarded).
    func startMedia(keys: SessionKeys, maxStreams: Int) throws(SRTPError) {
        srtpIn = try keys.mediaReceive.receiver(maxStreams: 4)
        srtpOut = try keys.mediaSend.sender(maxStreams: 4)
        if room.forwards { try room.startDownstream(streams: maxStreams) }
        room.fanOut.invalidate()
    }

    /// Token `sub`.
    var identity: String { session.identity }
    /// Display name.
    var name: String { session.name }
    /// The session's connection id.
    var connectionID: UInt32 { session.connectionID }

    var flags: MemberFlags {
        var f: MemberFlags = []
        if muted { f.insert(.muted) }
        if mutedByRoom { f.insert(.mutedByRoom) }
        if canPublish { f.insert(.publisher) }
        if canSubscribe { f.insert(.subscriber) }
        return f
    }

    /// Allocates the NACK history (at the member's first RTP packet).
    func startHistory(slots: Int) -> PacketHistory {
        let h = PacketHistory(slots: slots)
        uplink.history = h
        return h
    }

    /// Allocates the uplink gap tracking (at the member's first packet in a forward room).
    func startUplinkGaps() -> UplinkGaps {
        let g = UplinkGaps()
        uplink.gaps = g
        return g
    }

    var entry: MemberEntry { MemberEntry(memberID: id, ssrc: ssrc, flags: flags, identity: identity, name: name) }
}

/// Where a member of another node comes from: that node's key and the member's id there.
struct CascadeOrigin: Hashable {
    var node: UInt64
    var id: UInt32
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
    /// Muted by the backend: held until the backend lifts it.
    public var mutedByRoom = false
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
    /// Round trip between the relay and the member from RTCP (LSR/DLSR of its reports about the relay's mix), or nil.
    public var roundTrip: Interval? = nil
    /// How it is connected: `parley` (the client's signalling), `rtp` (a plain-RTP endpoint), `webrtc`, `cascade` (a
    /// member of another node of the cluster).
    public var transport = "parley"
    /// In an audience room, a listener counted rather than announced.
    public var audience = false
}

