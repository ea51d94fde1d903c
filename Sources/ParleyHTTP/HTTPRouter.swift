// The router's front: what it holds, its admission on headers (`admit`), its one entry for a request with its
// body (`route`), and the admin and metrics authorisation. The routes themselves: `AdminRoutes.swift` (the route
// table), `MemberRoutes.swift`, `PresenceRoutes.swift`, `AttachmentRoutes.swift`, `ICEServerRoutes.swift`.

import Foundation
import ParleyAuth
import ParleyCluster
import ParleyRelay
import ParleyRelayCore
import ParleyWebRTC

/// Maps (method, path, authorization, body) to (status, JSON). Pure apart from the backend: no sockets,
/// no clock (`now` is passed in), so every route and every bad input is testable without a server.
public struct HTTPRouter: Sendable {
    /// The relay behind the API.
    public let backend: any APIBackend
    /// Checks `Authorization: Bearer` tokens.
    public let verifier: TokenVerifier
    /// Signs the tokens `POST /v1/tokens` mints (nil: the route answers 503).
    public let signer: TokenSigner?
    /// Relay defaults shown for rooms created without limits.
    public let config: RelayCoreConfig
    /// Who needs an admin token for `/metrics`.
    public let metricsRequireAuth: MetricsAuth
    /// The HTTP server's own counters, added to `/metrics` when given.
    public let httpStats: HTTPStats?
    /// The relay's public key (base64url), served without authentication at `GET /v1/relay`.
    public let relayKey: String?
    /// The sample web client's files, served without authentication outside `/v1` (nil: none).
    public let webRoot: StaticFiles?
    /// Whether `POST /v1/dev-token` mints member tokens without a token: only while the relay runs with the public dev
    /// credentials, whose secret anyone can read (and mint with `parley token`) anyway. So that opening the relay's
    /// page after `make run` is enough to talk.
    public let devTokens: Bool
    /// The cluster agent when the relay is one node of a cluster (`GET /v1/cluster`); nil alone.
    public let cluster: ClusterAgent?
    /// Where image attachments are kept (`/v1/attachments`); nil: uploads are refused (403), downloads are 404.
    public let attachments: (any AttachmentStore)?
    /// The largest attachment taken (`attachment_max_bytes`); 0: uploads are refused.
    public let attachmentMaxBytes: Int
    /// The STUN and TURN servers WebRTC members are handed (`GET /v1/ice-servers`, `Link` on WHIP and WHEP answers).
    public let iceServers: ICEServers
    /// Longest body accepted.
    public static let maxBodyBytes = 64 * 1024
    /// Longest room name, identity or display name, in bytes.
    public static let maxNameBytes = 128

    /// A router.
    public init(backend: any APIBackend, verifier: TokenVerifier, signer: TokenSigner?, config: RelayCoreConfig,
                metricsRequireAuth: MetricsAuth = .remote, httpStats: HTTPStats? = nil, relayKey: String? = nil,
                webRoot: StaticFiles? = nil, devTokens: Bool = false, cluster: ClusterAgent? = nil,
                attachments: (any AttachmentStore)? = nil,
                attachmentMaxBytes: Int = RelayConfig.defaultAttachmentMaxBytes,
                iceServers: ICEServers = ICEServers()) {
        self.iceServers = iceServers
        self.cluster = cluster
        self.attachments = attachments
        self.attachmentMaxBytes = attachmentMaxBytes
        self.webRoot = webRoot
        self.devTokens = devTokens
        self.backend = backend
        self.verifier = verifier
        self.signer = signer
        self.config = config
        self.metricsRequireAuth = metricsRequireAuth
        self.httpStats = httpStats
        self.relayKey = relayKey
    }

    /// What the server does with a request once its headers are in, before reading any body.
    public enum Admission: Equatable, Sendable {
        /// Answer this at once: nothing in it waits for a worker (health, refusals, unknown paths).
        case answer(HTTPResponse)
        /// Read the body, then `route` the request away from the event loop: it reads snapshots or runs a command.
        case route
        /// Start an event stream for `holder`: every public event (`room` nil), or only `room`'s.
        case eventStream(room: String?, holder: StreamHolder)
        /// Start a web page's presence stream for `holder` (its identity, shown as `name`): the page is online for calls
        /// while it lasts.
        case presenceStream(holder: StreamHolder, name: String)
        /// Like `route`, for an attachment held in memory: the server takes one of its few places for this kind of
        /// `transfer` (503 at once when none is free), reads at most `maxBodyBytes` of body (413 beyond), then routes it.
        case attachment(AttachmentTransfer, maxBodyBytes: Int)
    }

    /// Decides from the headers alone (`request.body` is not read): an unauthorised client is answered before it
    /// may send a body, and only authorised requests (and loopback metrics scrapes) reach the workers.
    public func admit(_ request: HTTPRequest, now: Int64) -> Admission {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        if let route = MemberRoute(parts) { return admitMember(request, route, now: now) }
        if let route = PresenceRoute(parts) { return admitPresence(request, route, now: now) }
        if let route = AttachmentRoute(parts) { return admitAttachment(request, route, now: now) }
        if parts == Self.iceServersPath { return .answer(answerICEServers(request, now: now)) }
        do throws(APIError) {
            switch parts {
            case ["healthz"], ["readyz"], ["v1", "relay"]:
                return .answer(try dispatch(request, now: now))
            case ["v1", "dev-token"] where devTokens:
                return .route
            case ["metrics"]:
                try allow(request.method, "GET")
                try authoriseMetrics(request, now: now)
                return .route
            default:
                if parts.first != "v1", webRoot != nil, request.method == "GET" || request.method == "HEAD" { return .route }
                guard parts.first == "v1" else { throw Self.noEndpoint }
                let claims = try authorise(request, now: now)
                return request.method == "GET" && parts == ["v1", "events"] ? .eventStream(room: nil, holder: StreamHolder(claims)) : .route
            }
        } catch {
            return .answer(error.response)
        }
    }

    /// Answers one request. `now` is Unix seconds (token checks and minting).
    public func route(_ request: HTTPRequest, now: Int64) -> HTTPResponse {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        if let route = MemberRoute(parts) { return routeMember(request, route, now: now) }
        if let route = PresenceRoute(parts) { return routePresence(request, route, now: now) }
        if let route = AttachmentRoute(parts) { return routeAttachment(request, route, now: now) }
        if parts == Self.iceServersPath { return answerICEServers(request, now: now) }
        do {
            return try dispatch(request, now: now)
        } catch {
            return error.response
        }
    }

    // MARK: Auth

    // Answers to clients not yet authorised are short and never echo the request: nothing unauthenticated gets back
    // more than a fixed handful of bytes (the README says how to get a token).

    /// Outside `/v1`, before auth: the path is not echoed.
    static let noEndpoint = APIError(404, "not_found", "no such endpoint")

    @discardableResult
    func authorise(_ request: HTTPRequest, now: Int64) throws(APIError) -> TokenClaims {
        let claims = try bearerClaims(request, now: now, missing: "admin token required")
        guard claims.grants.admin else { throw APIError(403, "forbidden", "the token of \(claims.identity) lacks the admin grant") }
        return claims
    }

    /// The verified claims of the request's `Authorization: Bearer` token; 401 with `missing` when there is none.
    func bearerClaims(_ request: HTTPRequest, now: Int64, missing: String) throws(APIError) -> TokenClaims {
        guard let header = request.authorization, header.hasPrefix("Bearer ") else { throw APIError(401, "unauthorized", missing) }
        let token = String(header.dropFirst("Bearer ".count)).trimmingCharacters(in: .whitespaces)
        do {
            return try verifier.verify(token, now: now)
        } catch {
            throw APIError(401, "unauthorized", "bad token: \(error.code)")  // `reason` may quote the token's kid or alg
        }
    }

    func authoriseMetrics(_ request: HTTPRequest, now: Int64) throws(APIError) {
        switch metricsRequireAuth {
        case .always: try authorise(request, now: now)
        case .remote: if !request.fromLoopback { try authorise(request, now: now) }
        case .never: break
        }
    }

    func allow(_ method: String, _ allowed: String) throws(APIError) {
        guard method == allowed || (allowed == "GET" && method == "HEAD") else {
            throw APIError(405, "method_not_allowed", "use \(allowed)")
        }
    }
}
