import Foundation
import ParleyAuth
import ParleyRelay
import ParleyRelayCore

/// The routes through which a web page is online for one-to-one calls and direct texts, as `parley call` is over
/// its presence session (see `RelayCore+WebPresence.swift`). Any token with the `join` grant: the page is online as
/// its identity.
///
///     GET    /v1/presence/events                         the page's private event stream; the page is online while
///                                                        it lasts. First event: `presence_online`, `detail` = STREAM
///     DELETE /v1/presence/{stream}                       the page leaves now (a closed stream is noticed at once too:
///                                                        `HangUpWatch`)
///     POST   /v1/presence/{stream}/calls                 {"callee": "bob"} → 202 {"call_id": N}; events follow
///     POST   /v1/presence/{stream}/calls/{id}/answer     {"accept": true|false}
///     DELETE /v1/presence/{stream}/calls/{id}            hang up, cancel or decline
///     POST   /v1/presence/{stream}/messages              {"to": "bob", "text": "…"}: a direct text
///     OPTIONS on any of them                             the CORS preflight, without a token
///
/// The stream must be the token identity's own (the worker checks), so another page's stream id is of no use.
extension HTTPRouter {
    /// Which presence route a path names, if any.
    enum PresenceRoute: Equatable {
        case events
        case presence(stream: UInt64)
        case calls(stream: UInt64)
        case answer(stream: UInt64, callID: UInt32)
        case call(stream: UInt64, callID: UInt32)
        case messages(stream: UInt64)
        /// `POST /v1/presence/{stream}/chats/{identity}` `{accept}`: answer a chat request.
        case chat(stream: UInt64, identity: String)
        /// A path under `/v1/presence/` that names no route (an unparsable stream or call id).
        case unknown

        init?(_ parts: [String]) {
            guard parts.count >= 3, parts[0] == "v1", parts[1] == "presence" else { return nil }
            if parts == ["v1", "presence", "events"] {
                self = .events
                return
            }
            guard let stream = UInt64(parts[2]), stream != 0 else { self = .unknown; return }
            switch parts.count {
            case 3: self = .presence(stream: stream)
            case 4 where parts[3] == "calls": self = .calls(stream: stream)
            case 4 where parts[3] == "messages": self = .messages(stream: stream)
            case 5 where parts[3] == "chats": self = .chat(stream: stream, identity: parts[4])
            case 5 where parts[3] == "calls":
                guard let id = UInt32(parts[4]) else { self = .unknown; return }
                self = .call(stream: stream, callID: id)
            case 6 where parts[3] == "calls" && parts[5] == "answer":
                guard let id = UInt32(parts[4]) else { self = .unknown; return }
                self = .answer(stream: stream, callID: id)
            default: self = .unknown
            }
        }
    }

    /// Admission from the headers: a preflight at once; the rest needs a token with `join`; the event stream starts.
    func admitPresence(_ request: HTTPRequest, _ route: PresenceRoute, now: Int64) -> Admission {
        if request.method == "OPTIONS" { return .answer(Self.preflight) }
        do throws(APIError) {
            guard route != .unknown else { throw Self.noEndpoint }
            let claims = try presenceClaims(request, now: now)
            if route == .events {
                guard request.method == "GET" else { throw APIError(405, "method_not_allowed", "use GET") }
                return .presenceStream(holder: StreamHolder(claims), name: claims.name ?? "")
            }
            return .route
        } catch {
            return .answer(Self.withCORS(error.response))
        }
    }

    /// Answers a presence route (after admission).
    func routePresence(_ request: HTTPRequest, _ route: PresenceRoute, now: Int64) -> HTTPResponse {
        do throws(APIError) {
            if request.method == "OPTIONS" { return Self.preflight }
            let claims = try presenceClaims(request, now: now)
            let me = claims.identity
            switch (request.method, route) {
            case ("POST", .calls(let stream)):
                let body = try Self.decode(API.CallRequest.self, request.body)
                let callee = try Self.validName(body.callee, field: "callee")
                let result = backend.execute(.webCall(stream: stream, identity: me, callee: callee))
                guard case .webCall(let id)? = result else { return Self.withCORS(try answer(result)) }
                return Self.withCORS(Self.json(API.CallPlaced(callId: id), status: 202))
            case ("POST", .answer(let stream, let callID)):
                let body = try Self.decode(API.CallAnswer.self, request.body)
                return Self.withCORS(try answer(backend.execute(.webAnswer(stream: stream, identity: me, callID: callID, accept: body.accept))))
            case ("DELETE", .presence(let stream)):
                return Self.withCORS(try answer(backend.execute(.closeWebPresence(stream: stream, identity: me))))
            case ("DELETE", .call(let stream, let callID)):
                return Self.withCORS(try answer(backend.execute(.webHangUp(stream: stream, identity: me, callID: callID))))
            case ("POST", .messages(let stream)):
                let body = try Self.decode(API.DirectMessageRequest.self, request.body)
                let to = try Self.validName(body.to, field: "to")
                guard !body.text.isEmpty, body.text.utf8.count <= 4096 else { throw APIError(400, "invalid_field", "text must be 1–4096 bytes") }
                return Self.withCORS(try answer(backend.execute(.webDirectText(stream: stream, identity: me, to: to, text: body.text))))
            case ("POST", .chat(let stream, let requester)):
                let body = try Self.decode(API.CallAnswer.self, request.body)
                let requester = try Self.validName(requester, field: "identity")
                return Self.withCORS(try answer(backend.execute(.webAnswerChat(stream: stream, identity: me, requester: requester, accept: body.accept))))
            case ("GET", .events):
                return HTTPResponse(status: 200, contentType: "text/event-stream", body: [], isEventStream: true)
            default:
                throw APIError(405, "method_not_allowed", "\(request.method) is not allowed on \(request.path)")
            }
        } catch {
            return Self.withCORS(error.response)
        }
    }

    /// The token's claims when it may be online: any valid token with the `join` grant.
    private func presenceClaims(_ request: HTTPRequest, now: Int64) throws(APIError) -> TokenClaims {
        let claims = try bearerClaims(request, now: now, missing: "a token is required (Authorization: Bearer)")
        guard claims.grants.join else { throw APIError(403, "forbidden", "the token does not grant join") }
        return claims
    }
}
