import ParleyAuth
import ParleyRelay
import ParleyRelayCore
import ParleyWebRTC
import ParleyWire

/// JSON bodies of the HTTP API. Keys are snake_case on the wire (the coders convert).
public enum API {
    /// `{"error": {"code": "...", "message": "..."}}`.
    public struct ErrorBody: Codable, Equatable, Sendable {
        /// The error.
        public var error: Detail
        /// Code and message.
        public struct Detail: Codable, Equatable, Sendable {
            /// Machine-readable: `unauthorized`, `forbidden`, `not_found`, `invalid_json`, `invalid_field`, ...
            public var code: String
            /// For people.
            public var message: String
        }
    }

    /// `POST /v1/tokens`.
    public struct TokenRequest: Codable, Sendable {
        public var identity: String
        public var name: String?
        public var room: String?
        /// Seconds (default 3600).
        public var ttl: Int64?
        public var grants: Grants?
        public var mode: String?
        /// The relay the token is for (its public key, base64url, as `GET /v1/relay` shows); another relay refuses it.
        public var relayKey: String?
    }

    /// `GET /v1/relay`: who this relay is, without authentication.
    public struct RelayInfo: Codable, Sendable, Equatable {
        /// The relay's long-term X25519 public key, base64url without padding (absent when it has none).
        public var publicKey: String?
        /// The relay's version (`ParleyVersion`).
        public var version: String
    }

    /// `GET /v1/ice-servers`: what a WebRTC member passes to `RTCPeerConnection` as `iceServers` (`ICEServer`:
    /// `urls`, and for TURN `username` and `credential`); empty when the relay names no STUN or TURN server.
    public struct ICEServerList: Codable, Sendable, Equatable {
        /// `ice_servers`: STUN URLs in one entry, TURN URLs with their credential in another; either may be absent.
        public var iceServers: [ICEServer]
    }

    /// A minted token.
    public struct TokenResponse: Codable, Sendable, Equatable {
        public var token: String
        public var identity: String
        public var room: String?
        /// When the token expires, in Unix milliseconds like every time in the API (the token's own `exp` claim is
        /// in seconds, as RFC 7519 says).
        public var expiresAt: Int64
    }

    /// `POST /v1/rooms`.
    public struct CreateRoomRequest: Codable, Sendable {
        public var name: String
        public var mode: String?
        public var maxMembers: Int?
        /// Seconds a room with no members stays open.
        public var emptyTimeout: Int64?
        /// Listeners (members without publish) are audience: counted, not announced one by one.
        public var audience: Bool?
        /// 4-12 digits a phone calling in through the SIP gateway keys (DTMF) before it joins.
        public var sipPin: String?
    }

    /// `POST .../mute`.
    public struct MuteRequest: Codable, Sendable {
        public var muted: Bool?
    }

    /// `POST .../messages`: a text, the ids of images it carries (from `POST /v1/attachments`), or both.
    public struct MessageRequest: Codable, Sendable {
        public var text: String?
        public var attachments: [String]?

        /// The text and ids after the checks both messages routes make: 1–4096 bytes of text (none with an image), at
        /// most 4 ids, each an attachment id (22 base64url characters, `TextAttachments`); else 400 `invalid_field`.
        func checked() throws(APIError) -> (text: String, attachments: [String]) {
            let text = self.text ?? "", ids = attachments ?? []
            guard ids.count <= TextAttachments.maxCount else {
                throw APIError(400, "invalid_field", "attachments must hold at most \(TextAttachments.maxCount) ids")
            }
            if let bad = ids.first(where: { !TextAttachments.isID($0) }) {
                throw APIError(400, "invalid_field", "attachments: \(bad.debugDescription) is not an attachment id (22 base64url characters)")
            }
            guard text.utf8.count <= Signalling.maxTextBytes, !text.isEmpty || !ids.isEmpty else {
                throw APIError(400, "invalid_field", "text must be 1–4096 bytes (or empty with attachments)")
            }
            return (text, ids)
        }
    }

    /// `POST /v1/rooms/{name}/rtp-endpoints`.
    public struct RTPEndpointRequest: Codable, Sendable {
        public var identity: String
        public var name: String?
        /// Default true.
        public var publish: Bool?
        /// Default true.
        public var subscribe: Bool?
        /// `IPV4:PORT` the endpoint sends its RTP from: the only address it is accepted from (default `receive_address`).
        public var sourceAddress: String?
        /// `IPV4:PORT` the relay sends the room's media to (default `source_address`).
        public var receiveAddress: String?
        /// Default true: SRTP with SDES keys the relay makes. False asks for cleartext RTP, which only a relay with
        /// `allow_cleartext` grants (403 otherwise).
        public var srtp: Bool?
    }

    /// The SDES keys of an SRTP endpoint (`AES_CM_128_HMAC_SHA1_80`, each base64 of 30 bytes: key ‖ salt).
    public struct SRTPKeys: Codable, Sendable, Equatable {
        /// `AES_CM_128_HMAC_SHA1_80`.
        public var suite: String
        /// The key the endpoint must send its SRTP/SRTCP with (ffmpeg: `-srtp_out_params`).
        public var endpointKey: String
        /// The key the relay sends to the endpoint with (ffmpeg: `-srtp_in_params`, or the SDP's `a=crypto`).
        public var relayKey: String
        /// `a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:<endpoint_key>`: the line of the endpoint's own SDP.
        public var endpointCrypto: String
        /// `a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:<relay_key>`: the line of `sdp` (what a receiver decrypts with).
        public var relayCrypto: String
    }

    /// A created plain-RTP endpoint.
    public struct RTPEndpoint: Codable, Sendable, Equatable {
        public var room: String
        public var identity: String
        /// The SSRC the relay assigned (the first packet's SSRC is taken instead if it differs).
        public var ssrc: UInt32
        /// The SSRC of the one stream a subscribing endpoint receives (forward rooms: whoever speaks, rewritten onto
        /// it with continuous numbering; the speaker is its CSRC). Mix rooms send the mix's SSRC instead.
        public var streamSSRC: UInt32?
        public var payloadType: Int
        /// `HOST:PORT` to send RTP (and RTCP) to (the owning worker's port).
        public var relayAddress: String
        public var relayHost: String
        public var relayPort: Int
        public var sourceAddress: String?
        public var receiveAddress: String?
        public var publish: Bool
        public var subscribe: Bool
        /// Session description for ffmpeg/GStreamer: the stream the endpoint receives (`RTP/SAVP` with the relay's key
        /// in `a=crypto` for SRTP).
        public var sdp: String
        /// The SDES keys; nil for a cleartext endpoint.
        public var srtp: SRTPKeys?
        /// ffmpeg output options that publish into the room (after the encoder options; publishing endpoints).
        public var ffmpegSendArgs: [String]?
        /// ffmpeg input options that receive the room's media, with `sdp` saved as `endpoint.sdp` (subscribing endpoints).
        public var ffmpegReceiveArgs: [String]?
    }

    /// A room as listed.
    public struct Room: Codable, Sendable, Equatable {
        public var name: String
        public var mode: String
        public var members: Int
        /// Identities of the members forwarded (speaking) right now.
        public var speakers: [String]
        /// Unix milliseconds.
        public var createdAt: Int64
        public var maxMembers: Int
        /// Seconds.
        public var emptyTimeout: Int64
        public var worker: Int
        /// An audience room: how many listeners it counts (they are in `members` too); nil in other rooms.
        public var audience: Int?
        /// The recording running in the room (its id); absent when the room is not recorded.
        public var recording: String? = nil
    }

    /// `GET /v1/rooms`.
    public struct RoomList: Codable, Sendable, Equatable {
        public var rooms: [Room]
    }

    /// A member as listed.
    public struct Member: Codable, Sendable, Equatable {
        public var identity: String
        public var name: String
        /// Unix milliseconds.
        public var joinedAt: Int64
        public var muted: Bool
        /// Muted by the backend (`POST .../mute`): the member cannot unmute herself until the backend lifts it.
        public var mutedByRoom: Bool
        public var speaking: Bool
        /// Smoothed level, RFC 6464 −dBov (0 loudest, 127 silence).
        public var level: Int
        public var ssrc: UInt32
        public var address: String
        /// `parley` (the client), `rtp` (a plain-RTP endpoint) or `webrtc` (a browser or WHIP/WHEP client).
        public var transport: String = "parley"
        public var stats: Stats
    }

    /// A member's traffic.
    public struct Stats: Codable, Sendable, Equatable {
        public var packetsIn: UInt64, bytesIn: UInt64, packetsOut: UInt64, bytesOut: UInt64
        public var packetsLost: Int64
        /// Interarrival jitter in milliseconds.
        public var jitterMs: Double
        public var nacksReceived: UInt64, retransmitted: UInt64
        /// RTCP sender reports received from the member about its stream.
        public var senderReports: UInt64
        /// Round trip between the relay and the member from RTCP (its reports about the relay's mix), in
        /// milliseconds; absent until known.
        public var roundTripMs: Double? = nil
    }

    /// A member as another member sees it (`GET /v1/rooms/{name}/members` with a member token): no address, no traffic.
    public struct RoomMember: Codable, Sendable, Equatable {
        public var identity: String
        public var name: String
        /// Unix milliseconds.
        public var joinedAt: Int64
        public var muted: Bool
        public var speaking: Bool
        /// `parley`, `rtp` or `webrtc`.
        public var transport: String
        /// An audience member (an audience room's listener); nil otherwise.
        public var audience: Bool? = nil
    }

    /// `POST /v1/dev-token` (dev credentials only).
    public struct DevTokenRequest: Codable, Sendable {
        public var identity: String
        public var room: String
    }

    /// `GET /v1/rooms/{name}/members` with a member token.
    public struct RoomMemberList: Codable, Sendable, Equatable {
        public var room: String
        public var members: [RoomMember]
        /// Members in the room (all pages).
        public var total: Int? = nil
        /// When more follow: the `after` of the next page.
        public var next: String? = nil
        /// The recording running in the room (its id): the page shows that the room is recorded.
        public var recording: String? = nil
    }

    /// `GET /v1/rooms/{name}/members`.
    public struct MemberList: Codable, Sendable, Equatable {
        public var room: String
        public var members: [Member]
        /// Members in the room (all pages).
        public var total: Int? = nil
        /// When more follow: the `after` of the next page.
        public var next: String? = nil
    }

    /// `{"ok": true}` and similar acknowledgements.
    public struct Done: Codable, Sendable, Equatable {
        public var ok: Bool
        public var detail: String?
    }

    /// One event of `GET /v1/events`.
    public struct Event: Codable, Sendable, Equatable {
        public var type: String
        public var room: String
        public var identity: String?
        public var detail: String?
        /// Unix milliseconds.
        public var at: Int64
        /// With `incoming_call` and `call_status` (a page's presence stream): the call.
        public var call: Call?
        /// With `text` and `direct_text`: the ids of the images the text carries (`GET /v1/attachments/{id}`).
        public var attachments: [String]?

        /// A call as a page's presence stream tells it.
        public struct Call: Codable, Sendable, Equatable {
            /// The id the page's requests name.
            public var id: UInt32
            /// `ringing`, `answered`, `declined`, `no_answer`, `unavailable`, `ended` or `failed`.
            public var state: String
            /// Why, for people.
            public var reason: String?
            /// With `answered`: the page's token for the call room (the event's `room`).
            public var token: String?
        }

        /// An event of the stream itself (not of the relay): `type`, `detail`, in `room` ("" for a stream of no room).
        public init(type: String, room: String, detail: String, at: Int64) {
            self.type = type
            self.room = room
            self.detail = detail
            self.at = at
        }

        /// The wire form of a relay event.
        public init(_ e: RelayEvent) {
            type = e.kind.rawValue
            room = e.room
            identity = e.identity.isEmpty ? nil : e.identity
            detail = e.detail.isEmpty ? nil : e.detail
            attachments = e.attachments.isEmpty ? nil : e.attachments
            at = e.unixMilliseconds
            call = e.call.map { Call(id: $0.callID, state: $0.state, reason: $0.reason.isEmpty ? nil : $0.reason,
                                     token: $0.token.isEmpty ? nil : $0.token) }
        }
    }

    /// `POST /v1/cluster/drain`: members told to move to other nodes, and those staying (endpoints a backend made).
    public struct Drained: Codable, Sendable, Equatable {
        public var moved: Int
        public var staying: Int
    }

    /// `GET /v1/cluster`: this node, whether its last heartbeat reached Redis, and the live nodes.
    public struct Cluster: Codable, Sendable, Equatable {
        public var node: String
        public var connected: Bool
        public var problem: String?
        public var nodes: [ClusterNode]
        /// Every room of the cluster and the id of the node it lives on.
        public var rooms: [String: String] = [:]
        /// Rooms open here that the directory gives to another node (opened on both at once).
        public var conflicts: [String] = []
        /// Node records and room claims the last read of the directory did not believe (no valid MAC, a stale
        /// heartbeat): written by something other than a node of this cluster.
        public var ignored = 0
    }

    /// One live node of the cluster.
    public struct ClusterNode: Codable, Sendable, Equatable {
        public var id: String
        public var udp: String
        public var http: String
        public var members: Int
        public var rooms: Int
        /// Unix ms.
        public var startedAt: Int64
        public var heartbeatAt: Int64
        /// Its rooms and their member counts (up to 1,000, the fullest first).
        public var roomMembers: [String: Int] = [:]
        /// Its relay key (base64url): what a client sent to it insists on.
        public var relayKey = ""
    }

    /// `POST /v1/presence/{stream}/calls`.
    public struct CallRequest: Codable, Sendable {
        /// The identity to call.
        public var callee: String
    }

    /// The answer to `POST /v1/presence/{stream}/calls`: the id of the call the page's events will name.
    public struct CallPlaced: Codable, Sendable, Equatable {
        public var callId: UInt32
    }

    /// `POST /v1/presence/{stream}/calls/{id}/answer`.
    public struct CallAnswer: Codable, Sendable {
        /// true to take the call, false to decline it.
        public var accept: Bool
    }

    /// `POST /v1/presence/{stream}/messages`: a direct text.
    public struct DirectMessageRequest: Codable, Sendable {
        /// The recipient identity.
        public var to: String
        public var text: String
    }

    /// The answer to `POST /v1/attachments`: what the relay kept.
    public struct Attachment: Codable, Sendable, Equatable {
        /// The attachment's id (22 base64url characters, random): fetch it at `GET /v1/attachments/{id}`.
        public var id: String
        /// The media type found in the bytes (`image/png`, `image/jpeg`, `image/webp`, `image/gif`).
        public var contentType: String
        /// Bytes.
        public var size: Int
        /// SHA-256 of the bytes, 64 lower-case hex digits.
        public var sha256: String
        /// Pixels across, as the image's header says (checked: `ImageLimits`).
        public var width: Int
        /// Pixels down.
        public var height: Int
        /// Unix milliseconds after which the relay no longer keeps it (`attachment_expiry_days`); absent: kept until removed.
        public var expiresAt: Int64?
    }
}
