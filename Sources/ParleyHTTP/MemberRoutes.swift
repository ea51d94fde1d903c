import Foundation
import ParleyAuth
import ParleyHistory
import ParleyRelay
import ParleyRelayCore
import ParleyWebRTC
import ParleyWire

/// The routes a room's member token may use (an admin token may too): what a web page or an app holding only its
/// member's token needs. WHIP (RFC 9725), WHEP, and the combined endpoint the sample page uses; the room's events,
/// member list and texts:
///
///     POST   /v1/rooms/{room}/whip             offer (application/sdp) → 201, Location, Link (ICE servers), answer:
///                                              publish only
///     POST   /v1/rooms/{room}/whep             … listen only
///     POST   /v1/rooms/{room}/webrtc           … a full member: sends and receives as its offer says
///     DELETE /v1/rooms/{room}/webrtc/{identity}  ends the session (the Location of all three)
///     PATCH  /v1/rooms/{room}/webrtc/{identity}  405: no trickle ICE (the answer carries the relay's one candidate)
///     GET    /v1/rooms/{room}/events           server-sent events of the room: members, speakers, texts
///     GET    /v1/rooms/{room}/members          who is in the room (a member sees identities, names, mutes, who speaks)
///     POST   /v1/rooms/{room}/messages         a text to the room, from the token's identity (admin: from `backend`)
///     OPTIONS on any of them                     the CORS preflight, without a token
///
/// Every answer carries `Access-Control-Allow-Origin: *` (tokens, not cookies, authorise: no credentials cross origins).
extension HTTPRouter {
    /// Which member route a path names, if any.
    enum MemberRoute: Equatable {
        /// An offer to one of the three WebRTC endpoints.
        case offer(room: String, kind: Kind)
        /// A WebRTC session (`Location`).
        case session(room: String, identity: String)
        /// The room's event stream.
        case events(room: String)
        /// The room's members.
        case members(room: String)
        /// A text to the room.
        case messages(room: String)

        /// What the offer asks for.
        enum Kind: String { case whip, whep, webrtc }

        /// The route of `/v1/rooms/{room}/{whip|whep|webrtc|events|members|messages}` or `…/webrtc/{identity}`, or nil.
        init?(_ parts: [String]) {
            guard parts.count >= 4, parts[0] == "v1", parts[1] == "rooms" else { return nil }
            if parts.count == 4 {
                switch parts[3] {
                case "events": self = .events(room: parts[2])
                case "members": self = .members(room: parts[2])
                case "messages": self = .messages(room: parts[2])
                default:
                    guard let kind = Kind(rawValue: parts[3]) else { return nil }
                    self = .offer(room: parts[2], kind: kind)
                }
            } else if parts.count == 5, parts[3] == "webrtc" {
                self = .session(room: parts[2], identity: parts[4])
            } else {
                return nil
            }
        }

        var room: String {
            switch self {
            case .offer(let room, _), .session(let room, _), .events(let room), .members(let room), .messages(let room): room
            }
        }
    }

    /// CORS headers on every WebRTC answer, errors included (a page must be able to read why it was refused); a page
    /// may read an answer's `Location` and its `Link` headers (the ICE servers).
    static let corsHeaders = ["Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "Location, Link"]

    /// The preflight answer (WHIP §4.2): the methods and headers a page may use.
    static let preflight = HTTPResponse(status: 204, contentType: "", body: [], headers: corsHeaders.merging([
        "Access-Control-Allow-Methods": "POST, DELETE, PATCH, OPTIONS",
        "Access-Control-Allow-Headers": "Authorization, Content-Type",
        "Access-Control-Max-Age": "600",
    ]) { a, _ in a })

    /// Admission of a member route from its headers: a preflight is answered at once; the rest needs a member token
    /// for the room (or an admin token) before its body is read; the event stream starts here.
    func admitMember(_ request: HTTPRequest, _ route: MemberRoute, now: Int64) -> Admission {
        if request.method == "OPTIONS" { return .answer(Self.preflight) }
        do throws(APIError) {
            let claims = try memberClaims(request, room: route.room, now: now)
            if case .events(let room) = route {
                guard request.method == "GET" else { throw APIError(405, "method_not_allowed", "use GET") }
                return .eventStream(room: try Self.validName(room, field: "room name"), holder: StreamHolder(claims))
            }
            return .route
        } catch {
            return .answer(Self.withCORS(error.response))
        }
    }

    /// Answers a member route (after admission).
    func routeMember(_ request: HTTPRequest, _ route: MemberRoute, now: Int64) -> HTTPResponse {
        do throws(APIError) {
            if request.method == "OPTIONS" { return Self.preflight }
            let claims = try memberClaims(request, room: route.room, now: now)
            let room = try Self.validName(route.room, field: "room name")
            switch (request.method, route) {
            case ("POST", .offer(_, let kind)):
                return Self.withCORS(try answerOffer(request, room: room, kind: kind, claims: claims, now: now))
            case ("DELETE", .session(_, let identity)):
                guard claims.grants.admin || claims.identity == identity else {
                    throw APIError(403, "forbidden", "the token of \(claims.identity) may end only its own session")
                }
                return Self.withCORS(try answer(backend.execute(.removeWebRTCMember(room: room, identity: identity))))
            case ("GET", .events):
                return HTTPResponse(status: 200, contentType: "text/event-stream", body: [], isEventStream: true)
            case ("GET", .members):
                guard let (snapshot, _) = findRoom(room) else { throw Self.noRoom(room) }
                let (page, next) = try Self.page(snapshot.members, request.query)
                if claims.grants.admin {
                    return Self.withCORS(Self.json(API.MemberList(room: room, members: page.map { Self.member($0, forwarded: snapshot.forwardedSpeakers) },
                                                                  total: snapshot.members.count, next: next)))
                }
                // A member sees who is there, not their addresses or traffic.
                let members = page.map {
                    API.RoomMember(identity: $0.identity, name: $0.name, joinedAt: $0.joinedAtUnixMilliseconds, muted: $0.muted,
                                   speaking: snapshot.forwardedSpeakers.contains($0.id), transport: $0.transport,
                                   audience: $0.audience ? true : nil)
                }
                return Self.withCORS(Self.json(API.RoomMemberList(room: room, members: members, total: snapshot.members.count, next: next,
                                                                  recording: snapshot.recording)))
            case ("GET", .messages):
                guard let store = backend.messages else {
                    throw APIError(503, "unavailable", "this relay keeps no message history (no state directory, or its database could not be opened)")
                }
                let limit = try request.query["limit"].map { (v: String) throws(APIError) -> Int in
                    guard let n = Int(v), (1...200).contains(n) else { throw APIError(400, "invalid_field", "limit must be 1–200") }
                    return n
                } ?? 50
                let before = try request.query["before"].map { (v: String) throws(APIError) -> Int64 in
                    guard let n = Int64(v), n > 0 else { throw APIError(400, "invalid_field", "before must be a message id (a positive integer)") }
                    return n
                }
                let page: [SQLiteTextArchive.RoomMessage]
                do {
                    page = try store.roomMessages(room: room, before: before, limit: limit + 1)
                } catch {
                    let why = switch StoreFailure(error) {
                    case .busy: "the message history is busy; retry"
                    case .unreachable: "the message history is unreachable (the cluster's Redis); retry"
                    default: "the message history cannot be read"
                    }
                    throw APIError(503, "unavailable", why)
                }
                let shown = page.prefix(limit)
                return Self.withCORS(Self.json(API.RoomMessages(room: room, messages: shown.map {
                    API.RoomMessage(id: String($0.id), identity: $0.identity, name: $0.name, text: $0.text, at: $0.at,
                                    attachments: $0.attachments.isEmpty ? nil : $0.attachments)
                }, next: page.count > limit ? shown.last.map { String($0.id) } : nil)))
            case ("POST", .messages):
                let body = try Self.decode(API.MessageRequest.self, request.body).checked()
                let response = try sendRoomText { request -> AdminCommand in
                    claims.grants.admin ? .message(room: room, text: body.text, attachments: body.attachments, keepRequest: request)
                        : .memberMessage(room: room, identity: claims.identity, text: body.text, attachments: body.attachments, keepRequest: request)
                }
                return Self.withCORS(response)
            case ("PATCH", .session):
                var r = APIError(405, "method_not_allowed", "trickle ICE is not supported: the answer carries the relay's candidate").response
                r.headers["Allow"] = "DELETE"
                return Self.withCORS(r)
            default:
                throw APIError(405, "method_not_allowed", "\(request.method) is not allowed on \(request.path)")
            }
        } catch {
            return Self.withCORS(error.response)
        }
    }

    /// Longest page of a member list, and the page when no `limit` is given.
    static let maxMemberPage = 1000

    /// One page of a room's members in join order (member ids rise with it): those after member id `after`, at most
    /// `limit` (default and cap `maxMemberPage`); and the `after` of the next page when more follow.
    static func page(_ members: [MemberSnapshot], _ query: [String: String]) throws(APIError) -> (ArraySlice<MemberSnapshot>, String?) {
        var limit = maxMemberPage
        if let text = query["limit"] {
            guard let n = Int(text), (1...maxMemberPage).contains(n) else {
                throw APIError(400, "invalid_field", "limit must be 1–\(maxMemberPage)")
            }
            limit = n
        }
        var start = members.startIndex
        if let text = query["after"] {
            guard let after = UInt32(text) else { throw APIError(400, "invalid_field", "after must be a member id from a page's next") }
            start = members.firstIndex { $0.id > after } ?? members.endIndex
        }
        let page = members[start..<min(members.endIndex, start + limit)]
        let next = page.endIndex < members.endIndex ? page.last.map { String($0.id) } : nil
        return (page, next)
    }

    /// `name` percent-encoded as one path segment (the router decodes paths): a `/`, `%` or space in a room or identity
    /// stays inside its segment.
    static func pathSegment(_ name: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/%?#;")
        return name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
    }

    static func withCORS(_ response: HTTPResponse) -> HTTPResponse {
        var r = response
        for (k, v) in corsHeaders { r.headers[k] = v }
        return r
    }

    /// The token's claims when it may use the room's member routes: an admin token, or a token that may join `room`
    /// natively (`RoomAdmission`: its room claim or pattern, the `join` grant, a call room's own tokens only).
    func memberClaims(_ request: HTTPRequest, room: String, now: Int64) throws(APIError) -> TokenClaims {
        let claims = try bearerClaims(request, now: now, missing: "a member token for the room is required (Authorization: Bearer)")
        if claims.grants.admin { return claims }
        if let refusal = RoomAdmission.refusal(claims, room: room) {
            throw APIError(403, refusal.code == .privateRoom ? "private_room" : "forbidden", refusal.reason)
        }
        return claims
    }

    /// Parses and checks the offer, has the owning worker add the member, and answers with the SDP; the ICE servers
    /// for the token's identity at `now` come as `Link` headers (`iceServerLinks`).
    private func answerOffer(_ request: HTTPRequest, room: String, kind: MemberRoute.Kind, claims: TokenClaims,
                             now: Int64) throws(APIError) -> HTTPResponse {
        guard request.contentType?.lowercased().hasPrefix("application/sdp") == true else {
            throw APIError(415, "unsupported_media_type", "the offer must be sent as Content-Type: application/sdp")
        }
        if let why = RelayCore.webRTCRefusal(claims, room: room) { throw APIError(403, "private_room", why) }
        guard let fingerprint = backend.dtlsFingerprint else {
            throw APIError(503, "unavailable", "the relay has no DTLS certificate")
        }
        let offer: SDPOffer
        let section: SDPOffer.Media
        var extra: [SDPOffer.Media] = []
        do throws(WebRTCError) {
            offer = try SDPOffer(parsing: String(decoding: request.body, as: UTF8.self))
            let audio = try offer.audioSections()
            guard let first = audio.first else { throw WebRTCError("no_audio", "the offer has no audio section with Opus") }
            section = first
            // Further receive-only audio sections (same transport: BUNDLE) are further forwarding slots: one track each.
            extra = audio.dropFirst().filter { $0.direction == .recvonly && $0.mid != nil }
        } catch {
            throw APIError(error.code == "bad_sdp" || error.code == "too_large" ? 400 : 406, error.code, error.reason)
        }
        // What the member does: what its offer says, within what the route and its token's grants allow.
        let sends = section.direction == .sendrecv || section.direction == .sendonly
        let receives = section.direction == .sendrecv || section.direction == .recvonly
        let publish = sends && kind != .whep && (claims.grants.publish || claims.grants.admin)
        let subscribe = receives && kind != .whip && (claims.grants.subscribe || claims.grants.admin)
        guard publish || subscribe else {
            throw APIError(406, "nothing_to_do", kind == .whip ? "a WHIP offer must send audio (sendonly or sendrecv) and the token must grant publish"
                           : kind == .whep ? "a WHEP offer must receive audio (recvonly or sendrecv) and the token must grant subscribe"
                           : "the offer's audio neither sends nor receives within what the token grants")
        }
        guard let opus = section.opusPayloadType, let ufrag = section.iceUfrag, let password = section.icePwd,
              let remoteFingerprint = section.fingerprint, let mid = section.mid else {
            throw APIError(406, "bad_offer", "the audio section lacks Opus, a mid, ICE credentials or a fingerprint")
        }
        if subscribe { extra = Array(extra.prefix(max(0, config.maxForwardedSpeakers - 1))) } else { extra = [] }
        do throws(WebRTCError) {
            // Refused here (406), before a member exists, rather than by the answer after it (which was a 500).
            try offer.checkBundled([mid] + extra.compactMap(\.mid))
        } catch {
            throw APIError(406, error.code, error.reason)
        }
        let terms = WebRTCOfferTerms(remoteUfrag: ufrag, remotePassword: password, remoteFingerprint: remoteFingerprint, payloadType: opus,
                                     audioLevelExtensionID: section.audioLevelExtensionID, publish: publish, subscribe: subscribe,
                                     slots: 1 + extra.count)
        // A token's mode is checked like the API's: an unknown one is refused, not opened as a room of no mode.
        let mode = claims.grants.create ? try Self.roomMode(claims.mode) ?? config.defaultRoomMode : nil
        let result = backend.execute(.addWebRTCMember(room: room, identity: claims.identity, name: claims.name, createMode: mode, terms: terms))
        guard case .webRTCMember(let info)? = result else { return try answer(result) }
        // The relay's direction is the member's mirrored: it receives what the member sends.
        let direction = SDPDirection(sends: subscribe, receives: publish)
        let text: String
        do throws(WebRTCError) {
            // One host candidate per address the browser may reach the worker at, its own family first.
            let hosts = backend.mediaHosts(for: request.client)
            let candidates = hosts.map { $0.withPort(info.port) }
            // And, when the relay has its TCP port, passive ICE-TCP ones (RFC 6544) for browsers that cannot use UDP.
            let tcpCandidates = backend.tcpPort.map { port in hosts.map { $0.withPort(port) } } ?? []
            // The first section as the member asked; each further one carries a slot's stream (none left in a mix room,
            // whose one stream is the mix: those sections are answered rejected).
            var sections = [SDPAnswer.Section(mid: mid, direction: direction, ssrc: info.sendSSRC ?? 0, cname: info.cname)]
            for (k, media) in extra.enumerated() where k + 1 < info.sendSSRCs.count {
                sections.append(SDPAnswer.Section(mid: media.mid!, direction: .sendonly, ssrc: info.sendSSRCs[k + 1], cname: info.cname))
            }
            text = try SDPAnswer(offer: offer, iceUfrag: info.iceUfrag, icePwd: info.icePassword, fingerprint: fingerprint, candidates: candidates, tcpCandidates: tcpCandidates,
                                 sessionID: UInt64(info.memberID), sections: sections).text
        } catch {
            _ = backend.execute(.removeWebRTCMember(room: room, identity: info.identity))
            throw APIError(500, error.code, error.reason)
        }
        if backend.tcpPort != nil { backend.noteICETCP(ufrag: info.iceUfrag, port: info.port) }
        var response = HTTPResponse(status: 201, contentType: "application/sdp", body: Array(text.utf8),
                                    headers: ["Location": "/v1/rooms/\(Self.pathSegment(room))/webrtc/\(Self.pathSegment(info.identity))"])
        response.headers["Link"] = iceServerLinks(identity: claims.identity, now: now)
        return response
    }
}
