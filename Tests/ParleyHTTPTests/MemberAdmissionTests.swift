import Foundation
import ParleyAuth
import ParleyHTTP
import ParleyRelay
import ParleyRelayCore
import ParleyWire
import Testing

/// The member routes (WHIP, WHEP, `webrtc`, a room's events, members and texts) admit exactly the tokens a native
/// join admits (`RoomAdmission`): the room claim or its pattern, the `join` grant, a call room's own tokens. Issue 33,
/// finding 8: a token without `join` used to get everything but the native join, and `team-*` nothing here.
@Suite("HTTP router: member routes admit whom the native join admits (join grant, room patterns, call rooms)")
struct MemberAdmissionTests {
    let backend = CoreBackend(webrtc: true)
    var router: HTTPRouter {
        HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                   signer: TokenSigner(apiKey: "k", apiSecret: RouterTests.secret), config: RelayCoreConfig())
    }

    static func token(_ identity: String = "eve", room: String?, grants: Grants, call: Bool? = nil) -> String {
        TokenSigner(apiKey: "k", apiSecret: RouterTests.secret).mint(
            TokenClaims(identity: identity, room: room, expiresAt: RouterTests.now + 600, grants: grants, call: call))
    }

    /// Every member route of `room`, as a page would call it.
    static func routes(_ room: String) -> [(method: String, path: String, body: String, contentType: String?)] {
        [("POST", "/v1/rooms/\(room)/whip", chromeOffer, "application/sdp"),
         ("POST", "/v1/rooms/\(room)/whep", chromeOffer, "application/sdp"),
         ("POST", "/v1/rooms/\(room)/webrtc", chromeOffer, "application/sdp"),
         ("GET", "/v1/rooms/\(room)/events", "", nil),
         ("GET", "/v1/rooms/\(room)/members", "", nil),
         ("GET", "/v1/rooms/\(room)/messages", "", nil),
         ("POST", "/v1/rooms/\(room)/messages", #"{"text":"hi"}"#, "application/json"),
         ("DELETE", "/v1/rooms/\(room)/webrtc/eve", "", nil)]
    }

    /// What `admit` decides, and what `route` answers when admitted (an event stream: nil).
    func send(_ method: String, _ path: String, _ body: String, contentType: String?, token: String) -> HTTPResponse? {
        let request = HTTPRequest(method: method, path: path, authorization: "Bearer " + token, body: Array(body.utf8), contentType: contentType)
        switch router.admit(request, now: RouterTests.now) {
        case .answer(let r): return r
        case .eventStream: return nil
        default: return router.route(request, now: RouterTests.now)
        }
    }

    func errorCode(_ r: HTTPResponse) -> String? {
        let object = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String
    }

    /// Room R exists with ann in it (a native member would see it), so nothing below fails for want of a room.
    func openRoomR() {
        let ann = Self.token("ann", room: "R", grants: Grants())
        #expect(send("POST", "/v1/rooms/R/webrtc", chromeOffer, contentType: "application/sdp", token: ann)?.status == 201)
    }

    @Test("a token without join, or with no grants at all, is refused on every member route (403 at admission, before any body), as natively",
          arguments: [Grants(join: false), Grants.empty, Grants(join: false, publish: true, subscribe: true, admin: false, create: true)])
    func noJoinGrant(grants: Grants) {
        openRoomR()
        let token = Self.token(room: "R", grants: grants)
        let claims = TokenClaims(identity: "eve", room: "R", expiresAt: RouterTests.now + 600, grants: grants)
        #expect(RoomAdmission.refusal(claims, room: "R")?.code == .tokenMissingGrant)
        for r in Self.routes("R") {
            let request = HTTPRequest(method: r.method, path: r.path, authorization: "Bearer " + token, body: Array(r.body.utf8),
                                      contentType: r.contentType)
            guard case .answer(let answer) = router.admit(request, now: RouterTests.now) else {
                Issue.record("\(r.method) \(r.path) admitted a token without join")
                continue
            }
            #expect(answer.status == 403 && errorCode(answer) == "forbidden", "\(r.method) \(r.path): \(answer.text)")
            #expect(answer.text.contains("join"), "\(answer.text)")
            #expect(answer.headers["Access-Control-Allow-Origin"] == "*")
            #expect(router.route(request, now: RouterTests.now).status == 403, "\(r.method) \(r.path) routed anyway")
        }
        #expect(backend.core.memberCount == 1, "only ann")
    }

    @Test("a room pattern admits its rooms here as natively: team-* joins team-a by WHEP, reads its members, events and texts; not other")
    func roomPattern() throws {
        let token = Self.token(room: "team-*", grants: Grants())
        let offer = try #require(send("POST", "/v1/rooms/team-a/whep", chromeOffer, contentType: "application/sdp", token: token))
        #expect(offer.status == 201, "\(offer.text)")
        #expect(send("GET", "/v1/rooms/team-a/events", "", contentType: nil, token: token) == nil, "the event stream starts")
        #expect(send("GET", "/v1/rooms/team-a/members", "", contentType: nil, token: token)?.status == 200)
        #expect(send("POST", "/v1/rooms/team-a/messages", #"{"text":"hi"}"#, contentType: "application/json", token: token)?.status == 200)
        for r in Self.routes("other") {
            let answer = try #require(send(r.method, r.path, r.body, contentType: r.contentType, token: token), "\(r.path) streams")
            #expect(answer.status == 403 && errorCode(answer) == "forbidden", "\(r.path): \(answer.text)")
        }
        // A lone `*` is no pattern: it admits to no room, here as natively.
        let star = Self.token(room: "*", grants: Grants())
        #expect(send("GET", "/v1/rooms/team-a/members", "", contentType: nil, token: star)?.status == 403)
        #expect(backend.core.memberCount == 1)
    }

    @Test("a pattern that covers call rooms admits none of them: a call room is its parties' only, on every member route (private_room)")
    func callRoomPattern() throws {
        let room = "call-00112233445566778899aabbccddeeff"
        let party = Self.token("ann", room: room, grants: Grants(), call: true)
        #expect(send("POST", "/v1/rooms/\(room)/webrtc", chromeOffer, contentType: "application/sdp", token: party)?.status == 201)
        let pattern = Self.token(room: "call-*", grants: Grants())
        for r in Self.routes(room) {
            let answer = try #require(send(r.method, r.path, r.body, contentType: r.contentType, token: pattern), "\(r.path) streams")
            #expect(answer.status == 403 && errorCode(answer) == "private_room", "\(r.path): \(answer.text)")
        }
        #expect(backend.core.memberCount == 1)
    }

    @Test("the member routes' admission agrees with RoomAdmission (the native join's rule) on every case of the table")
    func agreesWithTheNativeRule() {
        let cases: [(String?, Grants, Bool?, String)] = [
            ("R", Grants(), nil, "R"), ("R", Grants(), nil, "S"), ("R", Grants(join: false), nil, "R"), ("R", .empty, nil, "R"),
            ("te-*", Grants(), nil, "te-x"), ("te-*", Grants(), nil, "t"), ("*", Grants(), nil, "R"), (nil, Grants(), nil, "R"),
            ("call-ab", Grants(), true, "call-ab"), ("call-ab", Grants(), nil, "call-ab"), ("call-*", Grants(), true, "call-ab"),
        ]
        for (claim, grants, call, room) in cases {
            let claims = TokenClaims(identity: "eve", room: claim, expiresAt: RouterTests.now + 600, grants: grants, call: call)
            let token = TokenSigner(apiKey: "k", apiSecret: RouterTests.secret).mint(claims)
            let request = HTTPRequest(method: "GET", path: "/v1/rooms/\(room)/events", authorization: "Bearer " + token)
            let admitted: Bool
            if case .eventStream = router.admit(request, now: RouterTests.now) { admitted = true } else { admitted = false }
            #expect(admitted == (RoomAdmission.refusal(claims, room: room) == nil), "claim \(claim ?? "none") \(grants) call \(call ?? false) → \(room)")
        }
    }
}

/// Offers the relay answers only on one transport: several audio sections need BUNDLE (issue 33: answered 500).
@Suite("HTTP router: an offer whose sections cannot share the relay's one transport is 406, and no member is made")
struct BundleRefusalTests {
    let backend = CoreBackend(webrtc: true)
    var router: HTTPRouter {
        HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                   signer: TokenSigner(apiKey: "k", apiSecret: RouterTests.secret), config: RelayCoreConfig())
    }

    /// The Chrome offer with a second, receive-only audio section (mid 1) — a second forwarding slot — and `group` as
    /// its BUNDLE line (nil: none).
    static func twoSections(group: String?) -> String {
        let head = Array(chromeOfferLines[0..<4]) + (group.map { [$0] } ?? [])
        let first = Array(chromeOfferLines[5...])
        let second = first.map { $0 == "a=mid:0" ? "a=mid:1" : $0 == "a=sendrecv" ? "a=recvonly" : $0 }.filter { !$0.hasPrefix("a=ssrc:") && !$0.hasPrefix("a=msid:") }
        return (head + first + second).joined(separator: "\r\n") + "\r\n"
    }

    func post(_ offer: String) -> HTTPResponse {
        let request = HTTPRequest(method: "POST", path: "/v1/rooms/R/webrtc", authorization: "Bearer " + WebRTCRouteTests.memberToken("ann"),
                                  body: Array(offer.utf8), contentType: "application/sdp")
        return router.route(request, now: RouterTests.now)
    }

    @Test("two audio sections, no BUNDLE: 406 bundle_required; either outside the group: 406 not_bundled; both bundled: 201",
          arguments: [(nil, 406, "bundle_required"), ("a=group:BUNDLE 0", 406, "not_bundled"), ("a=group:BUNDLE 1", 406, "not_bundled"),
                      ("a=group:BUNDLE 0 1", 201, nil)] as [(String?, Int, String?)])
    func twoSections(group: String?, status: Int, code: String?) {
        let r = post(Self.twoSections(group: group))
        #expect(r.status == status, "\(r.text)")
        if let code {
            let object = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any]
            #expect((object?["error"] as? [String: Any])?["code"] as? String == code, "\(r.text)")
            #expect(r.headers["Access-Control-Allow-Origin"] == "*")
            #expect(backend.core.memberCount == 0)
        } else {
            #expect(backend.core.memberCount == 1)
        }
    }
}
