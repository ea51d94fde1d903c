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

/// One member of a room, owned by the worker that owns the room.
final class Member {
    // What the room's fan-out table copies (see `FanOutTable`): changing it marks the table for a rebuild.
    var address: PeerAddress {
        get { session.address }
        set { session.address = newValue; room.fanOut.invalidate() }
    }
    let canSubscribe: Bool
    /// Whether `address` is somewhere to send media (false for an RTP endpoint until it latches or is given one).
    var hasDestination = true { didSet { room.fanOut.invalidate() } }
    /// A plain-RTP endpoint created by the HTTP API: no signalling, addresses named by the backend.
    var isRTPEndpoint: Bool { !session.signals }
    /// Traffic counters. Forwarded media is counted in the room's fan-out table first: read these after
    /// `room.fanOut.foldCounters()`.
    var stats = MemberStats()

    let id: UInt32
    /// The member's signalling session (handshake results, channel, keepalive, path validation).
    let session: SignallingSession
    /// Assigned at join; an RTP endpoint takes the SSRC of its first packet (see `RelayCore+RTPEndpoints.swift`).
    var ssrc: UInt32
    let canPublish: Bool
    /// In an audience room, a member that cannot publish: counted, not announced (`RoomRoster`).
    var isAudience = false
    let joinedAtUnixMilliseconds: Int64
    /// Strong: a removed member leaves `room.members`, and the room's derived tables let go of it then too (the
    /// fan-out table as it goes stale, the mixer after each frame), which breaks the cycle (see `LiveCounts`).
    let room: Room
    var muted: Bool
    /// Muted by the backend: `muted` holds until the backend lifts it; the member's own unmute is refused.
    var mutedByRoom = false
    var receiveStats = RTPReceiveStatistics(clockRate: 48_000)
    /// The member's last packets, to answer NACKs: nil until its first RTP packet (see `startHistory`).
    var history: PacketHistory?
    /// The sequence numbers missing from its stream, for uplink repair: nil until its first packet in a forward room.
    var uplinkGaps: UplinkGaps?
    /// Bytes of retransmissions this member may still be sent in answer to its NACKs (refilled from `stats.bytesOut`).
    var nackBudget = RetransmissionBudget()
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
    /// RTP packets and payload octets of the room's mix sent to this member (mix mode): its sender reports' counts.
    var mixPacketsSent: UInt32 = 0, mixOctetsSent: UInt32 = 0
    /// What listeners reported about this member's stream, checked and aggregated for the relay's next receiver
    /// report to it (forward mode; see `RTCPFeedback.sendReport`).
    var listenerReports = ListenerReports()
    /// Tells who speaks from the media it receives (join field 37): a forward room sends it no `speakers`.
    var speakersFromMedia = false
    /// Whether the member's token asked for end-to-end encryption (claim `e2ee`): its payloads are sealed before the
    /// relay sees them, so a recording leaves its stream out rather than store what nobody can play.
    var endToEnd = false
    /// Whether `speakers` messages go to this member: always in a mix room (one mixed stream does not say who
    /// speaks as plainly), in a forward room unless it tells speakers from the forwarded streams itself.
    var wantsSpeakerLists: Bool { !speakersFromMedia || room.mix != nil }
    /// Sequence number of the next mixed packet this member receives (mix mode).
    var mixSequence: UInt16
    /// The mix frame this member was last sent (mix mode): a gap before the next sets its marker bit.
    var lastMixFrame: UInt32?
    /// What this member was sent of the mix, by sequence number, for its NACKs (made at its first mixed packet).
    var mixLog: MixSendLog?
    /// A lone speaker forwarded into the mix (`MixEngine+LoneSpeaker.swift`): the forwarding this member's numbers
    /// follow (0: none yet) and the offset from the speaker's sequence numbers to this member's mix numbers.
    var loneEpoch: UInt32 = 0, loneSequenceOffset: UInt16 = 0
    /// The only address a publishing RTP endpoint's packets are accepted from (named at creation).
    var rtpSource: PeerAddress?
    /// Where an RTP endpoint's tool may send RTCP from besides `rtpSource`: the next port up from its RTP port, as
    /// tools without RTCP multiplexing do (ffmpeg sends its reports from its RTP port + 1), and a subscriber's own
    /// receive address. RTCP only: RTP from these is dropped. Named at creation like the rest, never learned.
    var rtcpSources: [PeerAddress] = []
    /// The streams a subscribing endpoint receives in a forward room, one per slot, each one SSRC with continuous
    /// numbering fed by one forwarded speaker at a time (`RTPStreamRewriter`): a plain-RTP endpoint has one (the
    /// loudest speaker), a WebRTC member one per receiving audio section of its offer, up to the room's forwarding
    /// slots (each forwarded speaker keeps its slot while forwarded). Empty for members with signalling, which
    /// receive each speaker's own stream, and in mix rooms.
    var endpointStreams: [RTPStreamRewriter] = []

    /// The index of the endpoint stream with `ssrc`, if any.
    func endpointStream(ssrc: UInt32) -> Int? { endpointStreams.firstIndex { $0.ssrc == ssrc } }
    /// An encrypted member's SRTP/SRTCP from it (nil: cleartext, debugging only).
    var srtpIn: SRTPReceiver?
    /// An encrypted member's SRTP/SRTCP to it: the relay's own RTCP and, in a mix room, its mix.
    var srtpOut: SRTPSender?
    /// Whether media to this member goes in the clear (a cleartext member, or an RTP endpoint without SRTP).
    var receivesCleartext: Bool { srtpOut == nil }

    /// Starts SRTP with the keys of the member's handshake (and the room's downstream key where speakers are forwarded).
    func startMedia(keys: SessionKeys, maxStreams: Int) throws(SRTPError) {
        srtpIn = try keys.mediaReceive.receiver(maxStreams: 4)
        srtpOut = try keys.mediaSend.sender(maxStreams: 4)
        if room.forwards { try room.startDownstream(streams: maxStreams) }
        room.fanOut.invalidate()
    }
    /// A WebRTC member's ICE-lite and DTLS state and what its offer negotiated (nil: every other member); see
    /// `RelayCore+WebRTC.swift`. Such a member is an RTP endpoint whose addresses come from its ICE check and whose
    /// SRTP keys come from its DTLS handshake.
    var webrtc: WebRTCTransport?
    /// An SRTP endpoint's sessions (nil: a signalling member, or a cleartext endpoint); see `EndpointSRTP`.
    var endpointSRTP: EndpointSRTP? { didSet { room.fanOut.invalidate() } }
    /// A member of another node of the cluster, as that node's roster named it (`RelayCore+Cascade.swift`): it has no
    /// session here (nothing is sent to it, it never times out here); its media comes over the relay-to-relay link.
    var cascade: CascadeOrigin?
    /// Whether the member is connected to this node.
    var isLocal: Bool { cascade == nil }

    init(id: UInt32, session: SignallingSession, ssrc: UInt32, canPublish: Bool, canSubscribe: Bool, joinedAt: Int64,
         room: Room, muted: Bool, mixSequence: UInt16) {
        self.id = id
        self.session = session
        self.ssrc = ssrc
        self.canPublish = canPublish
        self.canSubscribe = canSubscribe
        self.joinedAtUnixMilliseconds = joinedAt
        self.room = room
        self.muted = muted
        self.mixSequence = mixSequence
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
        history = h
        return h
    }

    /// Allocates the uplink gap tracking (at the member's first packet in a forward room).
    func startUplinkGaps() -> UplinkGaps {
        let g = UplinkGaps()
        uplinkGaps = g
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

