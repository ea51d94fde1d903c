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
