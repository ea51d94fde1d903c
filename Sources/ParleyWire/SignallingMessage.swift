/// Parley signalling, protocol version 1: the messages a member and the relay exchange on the member's
/// one UDP flow, beside its RTP and RTCP.
///
/// Every signalling datagram starts with the byte `0x50` ('P'), which no RTP/RTCP (128–191), STUN (0–3),
/// DTLS (20–63) or TURN channel (64–79) packet starts with (RFC 7983), so one port carries all of them.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +---------------+---------------+---------------+---------------+
/// |  magic 0x50   |  version = 1  |  message type |  flags (0)    |
/// +---------------+---------------+---------------+---------------+
/// |                 connection id (0 before welcome)              |
/// +---------------------------------------------------------------+
/// |           sequence number (0 = unreliable message)            |
/// +---------------------------------------------------------------+
/// |        acknowledgement (highest in-order sequence received)   |
/// +---------------------------------------------------------------+
/// |  fields: tag (8) | length (16) | value ... , repeated          |
/// +---------------------------------------------------------------+
/// ```
/// Unknown field tags are skipped (later versions add fields); unknown message types are refused.
public enum Signalling {
    /// First byte of every signalling datagram.
    public static let magic: UInt8 = 0x50
    /// The protocol version this build speaks.
    public static let version: UInt8 = 1
    /// Size of the fixed header.
    public static let headerSize = 16
    /// No signalling datagram is larger than this (fits any path MTU of the Internet with room to spare).
    public static let maxDatagramSize = 1200
    /// Longest text message, in UTF-8 bytes (sent in fragments).
    public static let maxTextBytes = 4096
    /// Largest text fragment carried in one datagram.
    public static let maxTextFragmentBytes = 900
    /// The most fragments one text takes: `maxTextBytes` in pieces of `maxTextFragmentBytes` (5).
    public static let maxTextFragments = (maxTextBytes + maxTextFragmentBytes - 1) / maxTextFragmentBytes
    /// Longest room name or identity a relay admits, in UTF-8 bytes. The codec carries longer ones (up to what a
    /// datagram holds) so that the relay can refuse them with a reason rather than drop them as malformed.
    public static let maxNameBytes = 128

    /// True when a datagram is signalling rather than RTP/RTCP (first-byte demultiplexing).
    public static func isSignalling(_ firstByte: UInt8) -> Bool { firstByte == magic }
}

/// The fixed header of a signalling datagram.
public struct SignalHeader: Equatable, Sendable {
    /// The message type code.
    public var type: UInt8
    /// The relay-assigned connection id (0 before the relay has welcomed the member).
    public var connectionID: UInt32
    /// Reliable sequence number; 0 for unreliable messages (pings, pongs, acks, retries).
    public var sequence: UInt32
    /// Cumulative acknowledgement of the peer's reliable messages.
    public var ack: UInt32

    /// A header.
    public init(type: UInt8, connectionID: UInt32, sequence: UInt32, ack: UInt32) {
        self.type = type
        self.connectionID = connectionID
        self.sequence = sequence
        self.ack = ack
    }
}

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

/// Why the relay refused a join or resume. The numeric values are part of the protocol.
public enum RefusalCode: UInt16, Equatable, Sendable {
    case badRequest = 1
    case unsupportedVersion = 2
    case tokenMalformed = 10, tokenExpired = 11, tokenNotYetValid = 12, tokenBadSignature = 13
    case tokenUnknownKey = 14, tokenWrongRoom = 15, tokenMissingGrant = 16, tokenAlgorithm = 17
    case roomNotFound = 20, roomFull = 21, tooManyRooms = 22
    case unknownSession = 30
    case shuttingDown = 40
    /// A `call-` room is private: only the two parties, with the tokens the relay minted for the call, may join it.
    case privateRoom = 23
    /// The token's `relay_key` names another relay: it was minted for that relay and may not be replayed here.
    case tokenWrongRelay = 18
    /// Version 1 (cleartext) signalling to a relay that admits only the encrypted version 2 (see `SignallingEnvelope`).
    case encryptionRequired = 3
    /// The token asks for an end-to-end encrypted room (`e2ee`), but the room mixes on the relay, which must decode
    /// every stream: the two cannot go together. (Numbered apart from the codes the encrypted-signalling work adds.)
    case endToEndInMixRoom = 50
    /// In a cluster, the room lives on another node: the reason is that node's `NodePointer` (its UDP address and
    /// relay key, "HOST:PORT KEY"), where the client joins instead, insisting on that key.
    case roomElsewhere = 60
}

/// Why the relay ended a member's session. The numeric values are part of the protocol.
public enum GoodbyeCode: UInt16, Equatable, Sendable {
    case left = 1, relayShutdown = 2, timedOut = 3, kicked = 4, roomClosed = 5, replaced = 6
    /// The node is draining (a cluster): the reason is the `NodePointer` of the node to join the room at instead
    /// ("HOST:PORT KEY": the client insists on that key there).
    case moved = 7
}

/// A join request: the first datagram a member sends, repeated with the relay's cookie.
public struct JoinRequest: Equatable, Sendable {
    /// The signed token (JWT).
    public var token: String
    /// The room to join.
    public var room: String
    /// The relay's address-verification cookie, empty on first contact.
    public var cookie: [UInt8]
    /// 16 random bytes chosen by the client; echoed in the welcome so a client matches answers to its attempt.
    public var nonce: [UInt8]
    /// Join already muted.
    public var muted: Bool
    /// Reserved for key agreement (an X25519 public key in a later version); ignored by version 1 relays.
    public var keyShare: [UInt8]
    /// The member tells who speaks from the media it receives (the forwarded streams and their RFC 6464 levels), so
    /// in a forward room the relay sends it no `speakers` messages. Mix rooms send them regardless.
    public var speakersFromMedia: Bool

    /// A join request.
    public init(token: String, room: String, cookie: [UInt8] = [], nonce: [UInt8], muted: Bool = false, keyShare: [UInt8] = [],
                speakersFromMedia: Bool = false) {
        self.token = token
        self.room = room
        self.cookie = cookie
        self.nonce = nonce
        self.muted = muted
        self.keyShare = keyShare
        self.speakersFromMedia = speakersFromMedia
    }
}

/// The relay's answer to an accepted join.
public struct Welcome: Equatable, Sendable {
    /// The client's nonce from its join.
    public var nonce: [UInt8]
    /// This member's id.
    public var memberID: UInt32
    /// The SSRC this member must send its RTP with.
    public var ssrc: UInt32
    /// The UDP port the member's flow continues on (the worker that owns the room).
    public var port: UInt16
    /// 32-byte secret that proves the member's identity when it resumes from a new address.
    public var sessionSecret: [UInt8]
    /// The room name.
    public var room: String
    /// Room mode, "forward", "mix" or "hybrid" (`RoomMode`).
    public var mode: String
    /// The identity the relay admitted.
    public var identity: String
    /// Members in the room besides this one; their entries follow in member pages.
    public var memberCount: UInt32
    /// How often the member should send a ping, in milliseconds.
    public var keepaliveMilliseconds: UInt32
    /// After this much silence the relay removes the member, in milliseconds.
    public var timeoutMilliseconds: UInt32
    /// This member's flags as admitted (publisher / subscriber / muted).
    public var flags: MemberFlags
    /// Reserved for key agreement; empty in version 1.
    public var keyShare: [UInt8]
    /// Encrypted sessions in a forward room: the SRTP key and salt (44 bytes) the relay protects forwarded speakers'
    /// packets with, shared by the room's listeners (one encryption per packet serves all of them). Empty otherwise.
    public var roomMediaKey: [UInt8]
    /// With `roomMediaKey`: the highest SRTP packet index the relay protected so far for each speaker's stream under
    /// that key (SSRC, 48-bit index; at most `maxStreamIndices`), so a listener who joins after a stream's sequence
    /// numbers wrapped knows its rollover counter (RFC 3711 §3.3.1), which the packets do not carry.
    public var streamIndices: [StreamIndex]

    /// One stream's SRTP position (`streamIndices`).
    public struct StreamIndex: Equatable, Sendable {
        public var ssrc: UInt32
        /// Rollover counter × 65536 + sequence number.
        public var index: UInt64
        public init(ssrc: UInt32, index: UInt64) {
            self.ssrc = ssrc
            self.index = index
        }
    }

    /// In a cluster: the other live nodes, each a `NodePointer` ("HOST:PORT KEY": its UDP address and relay key),
    /// where the member rejoins if this node is lost (at most `maxAlternates`, each at most `NodePointer.maxLength`
    /// bytes; `fitAlternates` keeps the welcome one datagram).
    public var alternates: [String] = []
    /// The most `alternates` a welcome carries.
    public static let maxAlternates = 8

    /// The most `streamIndices` a welcome carries (10 bytes each plus 3 of framing: the welcome stays one datagram).
    public static let maxStreamIndices = 40

    /// A welcome.
    public init(nonce: [UInt8], memberID: UInt32, ssrc: UInt32, port: UInt16, sessionSecret: [UInt8], room: String,
                mode: String, identity: String, memberCount: UInt32, keepaliveMilliseconds: UInt32,
                timeoutMilliseconds: UInt32, flags: MemberFlags, keyShare: [UInt8] = [], roomMediaKey: [UInt8] = [],
                streamIndices: [StreamIndex] = [], alternates: [String] = []) {
        self.streamIndices = streamIndices
        self.alternates = alternates
        self.nonce = nonce
        self.memberID = memberID
        self.ssrc = ssrc
        self.port = port
        self.sessionSecret = sessionSecret
        self.room = room
        self.mode = mode
        self.identity = identity
        self.memberCount = memberCount
        self.keepaliveMilliseconds = keepaliveMilliseconds
        self.timeoutMilliseconds = timeoutMilliseconds
        self.flags = flags
        self.keyShare = keyShare
        self.roomMediaKey = roomMediaKey
    }
}

/// A text fragment: texts longer than one datagram travel as several, reassembled in order.
public struct TextFragment: Equatable, Sendable {
    /// The sender's id for this text (client-chosen on send; echoed in the status).
    public var messageID: UInt32
    /// Index of this fragment, from 0.
    public var index: UInt8
    /// Number of fragments of the text (1…5).
    public var count: UInt8
    /// This fragment's UTF-8 bytes.
    public var chunk: [UInt8]
    /// The images the text carries (`TextAttachments`: at most 4 ids), on its first fragment only; empty on the others.
    public var attachments: [String]

    /// A fragment.
    public init(messageID: UInt32, index: UInt8, count: UInt8, chunk: [UInt8], attachments: [String] = []) {
        self.messageID = messageID
        self.index = index
        self.count = count
        self.chunk = chunk
        self.attachments = attachments
    }
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

/// Every message of signalling version 1 (presence and call messages in `SignallingCall.swift`). Type codes below 0x80 go from member to relay; the rest from relay to member.
public enum SignalMessage: Equatable, Sendable {
    // Member → relay
    /// 0x01 Join a room (unreliable: repeated by the client until answered).
    case join(JoinRequest)
    /// 0x02 Leave the room now (reliable).
    case leave
    /// 0x03 Keepalive carrying the sender's clock in ms (unreliable); answered by `pong`.
    case ping(timestamp: UInt64)
    /// 0x04 Mute or unmute oneself (reliable).
    case setMuted(Bool)
    /// 0x05 Send a text fragment to the room (`to` empty) or to one identity in it (reliable).
    case sendText(to: String, fragment: TextFragment)
    /// 0x06 Continue a session from a new address: proof = HMAC-SHA-256(session secret, "parley-resume" ‖ connection id ‖ timestamp) (unreliable).
    case resume(timestamp: UInt64, proof: [UInt8])
    /// 0x07 Acknowledgement only (unreliable).
    case ack
    /// 0x08 Go online without a room (unreliable: repeated by the client until answered); answered like a join.
    case register(RegisterRequest)
    /// 0x09 Call an online identity; `callID` is the caller's choice, unique among its open calls (reliable).
    /// `keyShare`: the caller's end-to-end key share (32 bytes, or empty from a client without end-to-end calls).
    case callInvite(callID: UInt32, to: String, keyShare: [UInt8] = [])
    /// 0x0A Accept or decline a ringing call (reliable). `keyShare`: the callee's share when accepting (or empty).
    case callAnswer(callID: UInt32, accept: Bool, keyShare: [UInt8] = [])
    /// 0x0B Hang up: cancels a ringing call, declines an incoming one, ends an answered one (reliable).
    case callHangup(callID: UInt32)
    /// 0x0C Answer to `pathChallenge`, from the address that received it: proof = HMAC-SHA-256(session secret,
    /// "parley-path" ‖ connection id ‖ challenge) (unreliable).
    case pathResponse(challenge: [UInt8], proof: [UInt8])

    // Relay → member
    /// 0x81 Prove you own your address: repeat the join with this cookie (unreliable, never larger than the join).
    case retry(cookie: [UInt8])
    /// 0x82 Join accepted (reliable).
    case welcome(Welcome)
    /// 0x83 Join or resume refused (unreliable, sent only to verified addresses).
    case refused(code: RefusalCode, reason: String)
    /// 0x84 One page of the room's member list (reliable).
    case memberPage(index: UInt16, count: UInt16, members: [MemberEntry])
    /// 0x85 A member joined, left, muted or unmuted (reliable). `reason` explains a leave ("timed out", "left", ...).
    case memberEvent(kind: MemberEventKind, member: MemberEntry, reason: String)
    /// 0x86 The active speakers, loudest first (reliable).
    case speakers([SpeakerEntry])
    /// 0x87 A text fragment from a member (reliable). `direct` is true when it was sent to this member only.
    /// A direct text kept while its recipient was away carries when it was sent (`sentAt`, Unix ms; 0: now); `request`:
    /// it opens a chat the recipient has not accepted (answer with `chatAnswer`).
    case text(fromMemberID: UInt32, fromIdentity: String, direct: Bool, fragment: TextFragment, sentAt: UInt64 = 0, request: Bool = false)
    /// 0x88 Whether a text was delivered (reliable).
    case textStatus(messageID: UInt32, delivered: Bool, reason: String)
    /// 0x89 The session is over (unreliable: the relay forgets the member as it sends this).
    case goodbye(code: GoodbyeCode, reason: String)
    /// 0x8A Answer to a ping, echoing its timestamp (unreliable).
    case pong(timestamp: UInt64)
    /// 0x8B A resume was accepted; the flow continues from the sender's new address (reliable).
    case resumed
    /// 0x8C Someone is calling this presence session; answer with `callAnswer(callID)` (reliable).
    /// `keyShare`: the caller's end-to-end key share as the caller sent it (empty when it sent none).
    case incomingCall(callID: UInt32, fromIdentity: String, fromName: String, keyShare: [UInt8] = [], request: Bool = false)
    /// 0x8D A call's state changed (reliable).
    case callStatus(CallStatus)
    /// 0x8E Prove that this new address is yours: answer `pathResponse` with the challenge (unreliable, never larger
    /// than the datagram that caused it; nothing else goes to the address until it answers).
    case pathChallenge(challenge: [UInt8])
    /// 0x8F The room's membership changes since its last update, batched (reliable): who joined and who left among
    /// the announced members, and how many audience members the room has now. At most one update per room per
    /// interval (split over several messages when it does not fit one datagram).
    case memberDelta(MemberDelta)
    /// 0x90 The room is being recorded from now on (`active`), or no longer (reliable). Sent to every member when a
    /// recording starts or stops, and after the welcome to a member joining a room that is being recorded. `id`: the
    /// recording's id (may be empty).
    case recording(active: Bool, id: String)
    /// 0x91 A direct text (the sender's message id) is kept for a recipient who is away, or has not accepted the chat
    /// yet; a `text status` follows when it is delivered or fails (reliable).
    case textStored(messageID: UInt32)
    /// 0x0D Accept or decline the chat `to` asked for with its first text (presence sessions; reliable).
    case chatAnswer(to: String, accept: Bool)
    /// 0x92 Where a chat with `identity` stands now (presence sessions; reliable): to the requester when the recipient
    /// answers, and to the recipient's devices.
    case chatStatus(ChatStatus)
    /// 0x93 The room's next downstream key (sealed sessions in forward rooms; reliable): after a member left, the relay
    /// draws a new key and sends it to those who stay, with where each forwarded stream stands (as a welcome's
    /// `streamIndices`); it protects forwarded packets with it once every member has it (or within a bound). `keyID`
    /// counts the room's keys on this relay.
    case roomKey(keyID: UInt32, material: [UInt8], streamIndices: [Welcome.StreamIndex])

    /// The message's type code.
    public var typeCode: UInt8 {
        switch self {
        case .join: 0x01
        case .leave: 0x02
        case .ping: 0x03
        case .setMuted: 0x04
        case .sendText: 0x05
        case .resume: 0x06
        case .ack: 0x07
        case .register: 0x08
        case .callInvite: 0x09
        case .callAnswer: 0x0A
        case .callHangup: 0x0B
        case .pathResponse: 0x0C
        case .retry: 0x81
        case .welcome: 0x82
        case .refused: 0x83
        case .memberPage: 0x84
        case .memberEvent: 0x85
        case .speakers: 0x86
        case .text: 0x87
        case .textStatus: 0x88
        case .goodbye: 0x89
        case .pong: 0x8A
        case .resumed: 0x8B
        case .incomingCall: 0x8C
        case .callStatus: 0x8D
        case .pathChallenge: 0x8E
        case .memberDelta: 0x8F
        case .recording: 0x90
        case .textStored: 0x91
        case .chatAnswer: 0x0D
        case .chatStatus: 0x92
        case .roomKey: 0x93
        }
    }

    /// Whether this message travels reliably (gets a sequence number, is acknowledged and retransmitted).
    public var isReliable: Bool {
        switch self {
        case .join, .register, .ping, .resume, .ack, .pathResponse, .retry, .refused, .pong, .goodbye, .pathChallenge: false
        default: true
        }
    }
}

/// Where a chat between two identities stands, as `chatStatus` tells one of them.
public struct ChatStatus: Equatable, Sendable {
    /// The state, as sent.
    public enum State: UInt8, Sendable {
        /// `identity` asked to chat (its first text came as a request); not answered yet.
        case requested = 1
        /// Texts flow both ways.
        case accepted = 2
        /// The chat was declined: `identity`'s texts (or ours to it) fail.
        case declined = 3
    }
    /// The other identity.
    public var identity: String
    /// Where it stands.
    public var state: State
    /// A chat status.
    public init(identity: String, state: State) {
        self.identity = identity
        self.state = state
    }
}

/// A whole signalling datagram: header and message.
public struct SignalDatagram: Equatable, Sendable {
    /// Connection id; 0 before welcome.
    public var connectionID: UInt32
    /// Reliable sequence number or 0.
    public var sequence: UInt32
    /// Cumulative acknowledgement.
    public var ack: UInt32
    /// The message.
    public var message: SignalMessage

    /// A datagram.
    public init(connectionID: UInt32, sequence: UInt32, ack: UInt32, message: SignalMessage) {
        self.connectionID = connectionID
        self.sequence = sequence
        self.ack = ack
        self.message = message
    }
}
