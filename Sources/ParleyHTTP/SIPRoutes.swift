// `POST /v1/rooms/NAME/sip-calls`: the relay's SIP gateway calls a phone and, when it answers, makes it a member of
// the room; `POST /v1/rooms/NAME/sip-calls/IDENTITY/dtmf`: keys digits to a phone in a room;
// `POST /v1/sip/credentials`: digest credentials a SIP device registers and calls with (docs/sip.md).

import ParleySIP
import ParleyWire

extension API {
    /// `POST /v1/rooms/NAME/sip-calls`.
    public struct SIPCallRequest: Codable, Sendable {
        /// `sip:USER@HOST[:PORT]`, a numeric host.
        public var to: String
        /// The member's display name (default none).
        public var name: String?
    }

    /// The answer to a call placed: 202, ringing.
    public struct SIPCallPlaced: Codable, Sendable {
        /// The room the call joins when answered.
        public var room: String
        /// The member the call becomes when answered.
        public var identity: String
        /// The target as the INVITE names it (`sip:USER@HOST:PORT`).
        public var to: String
        /// The trunk it goes out through.
        public var trunk: String
    }

    /// `POST /v1/rooms/NAME/sip-calls/IDENTITY/dtmf`.
    public struct SIPDigitsRequest: Codable, Sendable {
        /// 1-32 keys: `0`-`9`, `*`, `#`, `A`-`D`.
        public var digits: String
    }

    /// The answer to digits queued: 202.
    public struct SIPDigitsQueued: Codable, Sendable {
        /// The call's room and member.
        public var room: String, identity: String
        /// The digits, as they will be keyed.
        public var digits: String
    }

    /// `POST /v1/sip/credentials`.
    public struct SIPCredentialsRequest: Codable, Sendable {
        /// The identity the device will be (1-64 letters, digits, `-_.@+`).
        public var identity: String
        /// How long they last, seconds (default a day, 60 s to a week).
        public var ttlS: Int64?
        enum CodingKeys: String, CodingKey {
            case identity
            case ttlS = "ttl_s"
        }
    }

    /// Digest credentials for one SIP device.
    public struct SIPCredentialsGranted: Codable, Sendable {
        /// The identity whose device registers with them (its address of record: `sip:IDENTITY@` the registrar).
        public var identity: String
        /// The digest username.
        public var username: String
        /// The digest password.
        public var password: String
        /// The digest realm.
        public var realm: String
        /// Where to register: the gateway's `sip:HOST:PORT`.
        public var registrar: String
        /// When they lapse (Unix seconds).
        public var expiresAt: Int64
        enum CodingKeys: String, CodingKey {
            case identity, username, password, realm, registrar
            case expiresAt = "expires_at"
        }
    }
}

extension HTTPRouter {
    /// Places the call (admin): 202 at once with the identity the call will have in the room; the phone rings and an
    /// answer joins the room (a member named `identity`), a refusal or no answer is logged. 404 without the room, 403
    /// when no trunk lets the call out, 501 without a gateway.
    func placeSIPCall(room: String, _ body: [UInt8]) throws(APIError) -> HTTPResponse {
        let r = try Self.decode(API.SIPCallRequest.self, body)
        guard let target = SIPTarget(parsing: r.to) else {
            throw APIError(400, "invalid_field", "to must be sip:USER@HOST[:PORT] with a numeric host, got \"\(r.to)\"")
        }
        if let name = r.name { _ = try Self.validName(name, field: "name") }
        guard findRoom(room) != nil else { throw Self.noRoom(room) }
        let identity = "sip-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        guard let placed = backend.placeSIPCall(to: target, room: room, identity: identity, name: r.name) else {
            throw APIError(501, "no_sip_gateway", "this relay runs no SIP gateway (--sip)")
        }
        switch placed {
        case .success(let trunk):
            return Self.json(API.SIPCallPlaced(room: room, identity: identity, to: target.description, trunk: trunk),
                             status: 202)
        case .failure(let e) where e.status == 403:
            throw APIError(403, "no_trunk", e.detail ?? "no trunk lets this call out")
        case .failure(let e):
            throw APIError(503, "unavailable", e.detail ?? e.reason)
        }
    }
}

extension HTTPRouter {
    /// Mints a device's credentials (admin): 201 with them; 400 for an identity SIP cannot carry, 501 without a
    /// gateway or an API secret to key them with.
    func mintSIPCredentials(_ body: [UInt8]) throws(APIError) -> HTTPResponse {
        let r = try Self.decode(API.SIPCredentialsRequest.self, body)
        guard SIPCredentials.validIdentity(r.identity) else {
            throw APIError(400, "invalid_field",
                           "identity must be 1-64 letters, digits and -_.@+ for SIP, got \"\(r.identity)\"")
        }
        let lifetime = r.ttlS ?? SIPCredentials.defaultLifetimeSeconds
        guard let (minted, registrar) = backend.sipCredentials(identity: r.identity, lifetime: lifetime) else {
            throw APIError(501, "no_sip_gateway", "this relay runs no SIP gateway (--sip)")
        }
        guard let minted else {
            throw APIError(501, "no_sip_credentials", "the relay has no API secret to key SIP credentials with")
        }
        let granted = API.SIPCredentialsGranted(identity: r.identity, username: minted.username,
                                                password: minted.password, realm: "parley", registrar: registrar,
                                                expiresAt: minted.expiresAt)
        return Self.json(granted, status: 201)
    }
}

extension HTTPRouter {
    /// Keys digits to a phone in a room (admin): 202 once they are queued (each takes 160 ms: 100 ms of event, 60 ms
    /// apart). 400 for anything but 1-32 keys, 404 when no SIP call of that identity is in the room, 409 when its
    /// phone offered no telephone-event or its call is Opus, 501 without a gateway.
    func sendSIPDigits(room: String, identity: String, _ body: [UInt8]) throws(APIError) -> HTTPResponse {
        let r = try Self.decode(API.SIPDigitsRequest.self, body)
        guard let sent = backend.sendSIPDigits(r.digits, room: room, identity: identity) else {
            throw APIError(501, "no_sip_gateway", "this relay runs no SIP gateway (--sip)")
        }
        switch sent {
        case .success:
            return Self.json(API.SIPDigitsQueued(room: room, identity: identity, digits: r.digits.uppercased()),
                             status: 202)
        case .failure(.invalid):
            throw APIError(400, "invalid_field", "digits must be 1-\(SIPGateway.maximumDigits) of 0-9 * # A-D")
        case .failure(.noCall):
            throw APIError(404, "not_found", "no SIP call \(identity) in room \(room)")
        case .failure(.noTelephoneEvent):
            throw APIError(409, "no_telephone_event",
                           "\(identity)'s phone offered no telephone-event, or its call is Opus: no digits can be sent")
        }
    }
}
