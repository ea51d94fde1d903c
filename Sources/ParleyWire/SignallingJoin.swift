// A join and what answers it: the request, the welcome, and the codes of a refusal or a goodbye.

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
    /// The member takes RFC 2198 RED (`RedundantAudio`) in the streams it receives and may send it; the relay says in
    /// the welcome whether it does too (`MemberFlags.redundancy`). A relay that predates it skips the field.
    public var redundancy: Bool

    /// A join request.
    public init(token: String, room: String, cookie: [UInt8] = [], nonce: [UInt8], muted: Bool = false, keyShare: [UInt8] = [],
                speakersFromMedia: Bool = false, redundancy: Bool = false) {
        self.token = token
        self.room = room
        self.cookie = cookie
        self.nonce = nonce
        self.muted = muted
        self.keyShare = keyShare
        self.speakersFromMedia = speakersFromMedia
        self.redundancy = redundancy
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
