import Foundation
import ParleyAuth
import ParleyHTTP
import ParleyRelay
import ParleyRelayCore
import ParleyWebRTC
import ParleyWire
import Testing

/// WHIP, WHEP and the combined endpoint through the router (`admit`, then `route`, as the server calls them) with a
/// real core behind it: the CORS preflight, who may post an offer, what the answer says, and ending a session.
@Suite("HTTP router: WebRTC routes (WHIP, WHEP, combined), CORS, member tokens")
struct WebRTCRouteTests {
    let backend = CoreBackend(webrtc: true)
    var router: HTTPRouter {
        HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                   signer: TokenSigner(apiKey: "k", apiSecret: RouterTests.secret), config: RelayCoreConfig())
    }

    /// A member token for `room` (what a page holds), with `grants`.
    static func memberToken(_ identity: String, room: String = "R", grants: Grants = Grants(), expiresIn: Int64 = 600,
                            mode: String? = nil) -> String {
        TokenSigner(apiKey: "k", apiSecret: RouterTests.secret).mint(
            TokenClaims(identity: identity, name: identity.capitalized, room: room, expiresAt: RouterTests.now + expiresIn, grants: grants,
                        mode: mode))
    }

    /// `admit`, and `route` when admitted: the answer a client gets.
    func send(_ method: String, _ path: String, _ body: String = "", token: String? = WebRTCRouteTests.memberToken("ann"),
              contentType: String? = "application/sdp") -> HTTPResponse {
        let request = HTTPRequest(method: method, path: path, authorization: token.map { "Bearer " + $0 }, body: Array(body.utf8),
                                  contentType: contentType)
        switch router.admit(request, now: RouterTests.now) {
        case .answer(let r): return r
        case .route, .attachment: return router.route(request, now: RouterTests.now)
        case .eventStream, .presenceStream: Issue.record("an event stream for \(path)"); return HTTPResponse(status: 0, body: [])
        }
    }

    func errorCode(_ r: HTTPResponse) -> String? {
        let object = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String
    }

    func lines(_ r: HTTPResponse) -> [String] { String(decoding: r.body, as: UTF8.self).components(separatedBy: "\r\n") }

    func members(_ room: String = "R") -> [MemberSnapshot] { backend.core.snapshot().first { $0.name == room }?.members ?? [] }

    // MARK: Preflight and admission

    @Test("OPTIONS is the CORS preflight: 204, any origin, POST/DELETE/PATCH, Authorization and Content-Type, no token needed",
          arguments: ["/v1/rooms/R/whip", "/v1/rooms/R/whep", "/v1/rooms/R/webrtc", "/v1/rooms/R/webrtc/ann"])
    func preflight(path: String) {
        let request = HTTPRequest(method: "OPTIONS", path: path)
        guard case .answer(let r) = router.admit(request, now: RouterTests.now) else {
            Issue.record("a preflight was not answered at admission")
            return
        }
        #expect(r.status == 204 && r.body.isEmpty)
        #expect(r.headers["Access-Control-Allow-Origin"] == "*")
        let methods = Set((r.headers["Access-Control-Allow-Methods"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(methods.isSuperset(of: ["POST", "DELETE", "PATCH"]))
        let headers = Set((r.headers["Access-Control-Allow-Headers"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        #expect(headers.isSuperset(of: ["authorization", "content-type"]))
        #expect(r.headers["Access-Control-Expose-Headers"]?.contains("Location") == true)
        #expect(router.route(request, now: RouterTests.now) == r)
        #expect(backend.core.memberCount == 0 && backend.core.roomCount == 0)
    }

    @Test("refused before the body is read, with the CORS header so a page can read why",
          arguments: [
            (nil as String?, 401, "unauthorized"),
            ("not.a.token", 401, "unauthorized"),
            (WebRTCRouteTests.memberToken("ann", expiresIn: -60), 401, "unauthorized"),
            (TokenSigner(apiKey: "k", apiSecret: "another-secret-0123456789").mint(
                TokenClaims(identity: "ann", room: "R", expiresAt: RouterTests.now + 60)), 401, "unauthorized"),
            (WebRTCRouteTests.memberToken("ann", room: "other"), 403, "forbidden"),
          ] as [(String?, Int, String)])
    func refusedAtAdmission(token: String?, status: Int, code: String) {
        for path in ["/v1/rooms/R/whip", "/v1/rooms/R/whep", "/v1/rooms/R/webrtc", "/v1/rooms/R/webrtc/ann"] {
            let request = HTTPRequest(method: path.hasSuffix("ann") ? "DELETE" : "POST", path: path,
                                      authorization: token.map { "Bearer " + $0 }, body: Array(chromeOffer.utf8), contentType: "application/sdp")
            guard case .answer(let r) = router.admit(request, now: RouterTests.now) else {
                Issue.record("\(path) admitted")
                continue
            }
            #expect(r.status == status && errorCode(r) == code, "\(path): \(r.text)")
            #expect(r.headers["Access-Control-Allow-Origin"] == "*")
            // `route` (if a server called it anyway) refuses the same way.
            #expect(router.route(request, now: RouterTests.now).status == status)
        }
        #expect(backend.core.memberCount == 0 && backend.core.roomCount == 0)
    }

    // MARK: Offers that are refused

    @Test("offers refused after admission: each with its status and code, CORS on every one, no member created",
          arguments: [
            ("/v1/rooms/R/whep", chromeOffer, "text/plain", 415, "unsupported_media_type"),
            ("/v1/rooms/R/whep", chromeOffer, nil, 415, "unsupported_media_type"),
            ("/v1/rooms/R/whep", chromeOffer, "application/json", 415, "unsupported_media_type"),
            ("/v1/rooms/R/whip", videoOnlyOffer, "application/sdp", 406, "no_audio"),
            ("/v1/rooms/R/whip", "garbage\r\nnot sdp\r\n", "application/sdp", 400, "bad_sdp"),
            ("/v1/rooms/R/whip", "", "application/sdp", 400, "bad_sdp"),
            ("/v1/rooms/R/whip", "\u{1}\u{2}\u{3}\u{FFFD}", "application/sdp", 400, "bad_sdp"),
            ("/v1/rooms/R/whip", chromeOffer + String(repeating: "a=x\r\n", count: 13_200), "application/sdp", 400, "too_large"),
            // WHIP sends, WHEP receives: an offer that cannot do what the route is for has nothing to do.
            ("/v1/rooms/R/whip", chromeOffer(replacing: "a=sendrecv", with: "a=recvonly"), "application/sdp", 406, "nothing_to_do"),
            ("/v1/rooms/R/whep", chromeOffer(replacing: "a=sendrecv", with: "a=sendonly"), "application/sdp", 406, "nothing_to_do"),
            ("/v1/rooms/R/webrtc", chromeOffer(replacing: "a=sendrecv", with: "a=inactive"), "application/sdp", 406, "nothing_to_do"),
            ("/v1/rooms/R/whip", chromeOffer(without: "a=fingerprint"), "application/sdp", 406, "no_fingerprint"),
          ] as [(String, String, String?, Int, String)])
    func refusedOffer(path: String, offer: String, contentType: String?, status: Int, code: String) {
        let r = send("POST", path, offer, contentType: contentType)
        #expect(r.status == status && errorCode(r) == code, "\(r.text)")
        #expect(r.headers["Access-Control-Allow-Origin"] == "*" && r.headers["Location"] == nil)
        #expect(backend.core.memberCount == 0)
    }

    @Test("a token without the create grant for a room that does not exist: 404, and no room is opened")
    func noSuchRoom() {
        let r = send("POST", "/v1/rooms/R/whep", chromeOffer, token: Self.memberToken("ann", grants: Grants(create: false)))
        #expect(r.status == 404 && errorCode(r) == "not_found", "\(r.text)")
        #expect(r.headers["Access-Control-Allow-Origin"] == "*")
        #expect(backend.core.roomCount == 0 && backend.core.memberCount == 0)
    }

    @Test("a token that may create the room opens it in the token's mode; a mode no relay knows is 400 and opens nothing")
    func tokenMode() {
        let bogus = send("POST", "/v1/rooms/R/whip", chromeOffer, token: Self.memberToken("ann", grants: Grants(create: true), mode: "bogus"))
        #expect(bogus.status == 400 && errorCode(bogus) == "invalid_field", "\(bogus.text)")
        #expect(backend.core.roomCount == 0 && backend.core.memberCount == 0)
        let mix = send("POST", "/v1/rooms/R/whip", chromeOffer, token: Self.memberToken("ann", grants: Grants(create: true), mode: "mix"))
        #expect(mix.status == 201, "\(mix.text)")
        #expect(backend.core.snapshot().map(\.mode) == [.mix])
    }

    @Test("a call room admits only its parties' call tokens, through WebRTC as natively: a member or admin token for it is 403")
    func callRoomIsPrivate() {
        let room = "call-00112233445566778899aabbccddeeff"
        let member = send("POST", "/v1/rooms/\(room)/webrtc", chromeOffer, token: Self.memberToken("ann", room: room))
        #expect(member.status == 403 && errorCode(member) == "private_room", "\(member.text)")
        let admin = send("POST", "/v1/rooms/\(room)/webrtc", chromeOffer, token: RouterTests.token(admin: true))
        #expect(admin.status == 403 && errorCode(admin) == "private_room")
        let party = TokenSigner(apiKey: "k", apiSecret: RouterTests.secret).mint(
            TokenClaims(identity: "ann", room: room, expiresAt: RouterTests.now + 600, grants: Grants(), call: true))
        #expect(send("POST", "/v1/rooms/\(room)/webrtc", chromeOffer, token: party).status == 201)
        #expect(backend.core.memberCount == 1)
    }

    @Test("the grants bound what the offer gets: a token without publish cannot WHIP")
    func grantsBound() {
        let r = send("POST", "/v1/rooms/R/whip", chromeOffer, token: Self.memberToken("ann", grants: Grants(publish: false)))
        #expect(r.status == 406 && errorCode(r) == "nothing_to_do")
        // On the combined route the same token gets a listener: the answer only sends.
        let listener = send("POST", "/v1/rooms/R/webrtc", chromeOffer, token: Self.memberToken("ann", grants: Grants(publish: false)))
        #expect(listener.status == 201 && lines(listener).contains("a=sendonly"))
    }

    @Test("a relay without a DTLS certificate answers 503, with CORS")
    func noCertificate() {
        let plain = CoreBackend()
        let router = HTTPRouter(backend: plain, verifier: TokenVerifier(keys: ["k": RouterTests.secret]), signer: nil, config: RelayCoreConfig())
        let r = router.route(HTTPRequest(method: "POST", path: "/v1/rooms/R/whep", authorization: "Bearer " + Self.memberToken("ann"),
                                         body: Array(chromeOffer.utf8), contentType: "application/sdp"), now: RouterTests.now)
        #expect(r.status == 503 && errorCode(r) == "unavailable")
        #expect(r.headers["Access-Control-Allow-Origin"] == "*")
        #expect(plain.core.memberCount == 0)
    }

    // MARK: The answer

    @Test("a Chrome offer gets 201, application/sdp, a Location, and an ICE-lite passive answer with the relay's fingerprint and the worker's candidate; the direction mirrors what the route allows",
          arguments: [("whep", "a=sendonly", true), ("whip", "a=recvonly", false), ("webrtc", "a=sendrecv", true)])
    func answer(route: String, direction: String, relaySends: Bool) throws {
        let r = send("POST", "/v1/rooms/R/\(route)", chromeOffer, contentType: "application/sdp; charset=utf-8")
        #expect(r.status == 201, "\(r.text)")
        #expect(r.contentType == "application/sdp")
        #expect(r.headers["Location"] == "/v1/rooms/R/webrtc/ann")
        #expect(r.headers["Access-Control-Allow-Origin"] == "*")
        let text = String(decoding: r.body, as: UTF8.self)
        #expect(text.hasPrefix("v=0\r\n") && text.hasSuffix("\r\n"))
        let lines = lines(r)
        let fingerprint = try #require(backend.dtlsFingerprint)
        for line in ["a=ice-lite", "a=setup:passive", "a=mid:0", "a=rtcp-mux", "a=end-of-candidates", "a=group:BUNDLE 0",
                     "a=candidate:1 1 udp 2130706431 127.0.0.1 7400 typ host", "a=rtpmap:111 opus/48000/2",
                     "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
                     "a=fingerprint:" + DTLSCertificate.sdpFingerprint(fingerprint), direction] {
            #expect(lines.contains(line), "missing \(line)")
        }
        #expect(lines.filter { $0.hasPrefix("a=sendrecv") || $0.hasPrefix("a=sendonly") || $0.hasPrefix("a=recvonly") }.count == 1)
        let ufrag = try #require(lines.first { $0.hasPrefix("a=ice-ufrag:") }).dropFirst("a=ice-ufrag:".count)
        let pwd = try #require(lines.first { $0.hasPrefix("a=ice-pwd:") }).dropFirst("a=ice-pwd:".count)
        #expect(ufrag.count == 8 && pwd.count == 24)
        // The relay sends (WHEP, combined): its stream's SSRC and CNAME; WHIP: none.
        #expect(lines.contains { $0.hasPrefix("a=ssrc:") && $0.contains(" cname:parley-") } == relaySends)
        #expect(lines.contains { $0.hasPrefix("a=msid:parley-") } == relaySends)
        // The member is in the room with what its offer and the route allow.
        let m = try #require(members().first)
        #expect(members().count == 1 && m.identity == "ann" && m.transport == "webrtc")
        #expect(m.address == PeerAddress(ipv4: 0, port: 0))  // until its first check
    }

    @Test("Firefox's offer (Opus at 109, LF line ends): the answer keeps 109 and the level id it offered")
    func firefox() {
        let r = send("POST", "/v1/rooms/R/webrtc", firefoxOfferText)
        #expect(r.status == 201, "\(r.text)")
        let lines = lines(r)
        #expect(lines.contains("a=rtpmap:109 opus/48000/2") && lines.contains("a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level"))
        #expect(!lines.contains { $0.contains("csrc-audio-level") })
    }

    // MARK: The session

    @Test("the Location: PATCH is 405 (no trickle ICE), DELETE by another member is 403, by the member itself 200 and it is gone")
    func session() {
        let created = send("POST", "/v1/rooms/R/webrtc", chromeOffer)
        let location = created.headers["Location"] ?? ""
        #expect(created.status == 201 && location == "/v1/rooms/R/webrtc/ann")
        #expect(send("POST", "/v1/rooms/R/whep", chromeOffer, token: Self.memberToken("bob")).status == 201)
        #expect(Set(members().map(\.identity)) == ["ann", "bob"])

        let patch = send("PATCH", location, "a=candidate:1 1 udp 1 192.0.2.1 9 typ host", contentType: "application/trickle-ice-sdpfrag")
        #expect(patch.status == 405 && errorCode(patch) == "method_not_allowed")
        #expect(patch.headers["Allow"] == "DELETE" && patch.headers["Access-Control-Allow-Origin"] == "*")
        #expect(send("GET", location).status == 405)
        #expect(send("POST", location, chromeOffer).status == 405)

        let foreign = send("DELETE", location, token: Self.memberToken("bob"))
        #expect(foreign.status == 403 && errorCode(foreign) == "forbidden")
        #expect(foreign.headers["Access-Control-Allow-Origin"] == "*")
        #expect(members().contains { $0.identity == "ann" })
        // Another room's token for this room's Location: refused at admission.
        #expect(send("DELETE", location, token: Self.memberToken("ann", room: "other")).status == 403)

        let own = send("DELETE", location)
        #expect(own.status == 200, "\(own.text)")
        #expect(own.headers["Access-Control-Allow-Origin"] == "*")
        #expect(members().map(\.identity) == ["bob"])
        let again = send("DELETE", location)
        #expect(again.status == 404 && errorCode(again) == "not_found")
        // An admin token may end anyone's session.
        #expect(send("DELETE", "/v1/rooms/R/webrtc/bob", token: RouterTests.token(admin: true)).status == 200)
        #expect(members().isEmpty)
    }

    @Test("a second offer from the same identity replaces the first session")
    func replaced() {
        #expect(send("POST", "/v1/rooms/R/webrtc", chromeOffer).status == 201)
        let first = members().first?.id
        #expect(send("POST", "/v1/rooms/R/whep", chromeOffer).status == 201)
        #expect(members().count == 1 && members().first?.id != first)
    }
}

// Offers as browsers write them (the ParleyWebRTCTests target's SDPTestOffers.swift: test targets cannot import one
// another). Hand-written after Chrome 120+ and Firefox 120+ output, with made-up credentials and fingerprints.

/// Lines of an offer Chrome writes for a microphone track: BUNDLE, Opus at 111 with RED, G.722, G.711, CN and DTMF.
let chromeOfferLines: [String] = [
    "v=0",
    "o=- 4611731400430051336 2 IN IP4 127.0.0.1",
    "s=-",
    "t=0 0",
    "a=group:BUNDLE 0",
    "a=extmap-allow-mixed",
    "a=msid-semantic: WMS 7b2f1c3e-5b8a-4f8e-9d4c-2a6b8e1f0c3d",
    "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126",
    "c=IN IP4 0.0.0.0",
    "a=rtcp:9 IN IP4 0.0.0.0",
    "a=ice-ufrag:Xq3F",
    "a=ice-pwd:c3R8kT1pWm6vN0bYh2LsQe9z",
    "a=ice-options:trickle",
    "a=fingerprint:sha-256 5A:1F:3C:9E:04:B7:6D:22:81:FE:0A:93:47:C5:18:6B:D0:2E:75:A9:3B:64:E1:0F:8C:57:BA:29:96:4D:F3:10",
    "a=setup:actpass",
    "a=mid:0",
    "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
    "a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
    "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
    "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid",
    "a=sendrecv",
    "a=msid:7b2f1c3e-5b8a-4f8e-9d4c-2a6b8e1f0c3d 0e5d9a7c-3f1b-4c2e-8a6d-9b1f7e3c5a2d",
    "a=rtcp-mux",
    "a=rtcp-rsize",
    "a=rtpmap:111 opus/48000/2",
    "a=rtcp-fb:111 transport-cc",
    "a=fmtp:111 minptime=10;useinbandfec=1",
    "a=rtpmap:63 red/48000/2",
    "a=fmtp:63 111/111",
    "a=rtpmap:9 G722/8000",
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:8 PCMA/8000",
    "a=rtpmap:13 CN/8000",
    "a=rtpmap:110 telephone-event/48000",
    "a=rtpmap:126 telephone-event/8000",
    "a=ssrc:1001211346 cname:Lx9nQ2wR7tY4vB1s",
    "a=ssrc:1001211346 msid:7b2f1c3e-5b8a-4f8e-9d4c-2a6b8e1f0c3d 0e5d9a7c-3f1b-4c2e-8a6d-9b1f7e3c5a2d",
]

/// The Chrome offer as it arrives: CRLF line ends.
let chromeOffer = chromeOfferLines.joined(separator: "\r\n") + "\r\n"

/// The Chrome offer with each line starting with `prefix` replaced by `line`.
func chromeOffer(replacing prefix: String, with line: String) -> String {
    chromeOfferLines.map { $0.hasPrefix(prefix) ? line : $0 }.joined(separator: "\r\n") + "\r\n"
}

/// The Chrome offer without the lines starting with `prefix`.
func chromeOffer(without prefix: String) -> String {
    chromeOfferLines.filter { !$0.hasPrefix(prefix) }.joined(separator: "\r\n") + "\r\n"
}

/// A camera-only offer: one video section, no audio at all.
let videoOnlyOffer = (Array(chromeOfferLines[0..<4]) + ["a=group:BUNDLE 0"] + [
    "m=video 9 UDP/TLS/RTP/SAVPF 96 97",
    "c=IN IP4 0.0.0.0",
    "a=ice-ufrag:Xq3F",
    "a=ice-pwd:c3R8kT1pWm6vN0bYh2LsQe9z",
    "a=fingerprint:sha-256 5A:1F:3C:9E:04:B7:6D:22:81:FE:0A:93:47:C5:18:6B:D0:2E:75:A9:3B:64:E1:0F:8C:57:BA:29:96:4D:F3:10",
    "a=setup:actpass",
    "a=mid:0",
    "a=sendrecv",
    "a=rtcp-mux",
    "a=rtpmap:96 VP8/90000",
    "a=rtcp-fb:96 nack",
    "a=rtpmap:97 rtx/90000",
    "a=fmtp:97 apt=96",
]).joined(separator: "\r\n") + "\r\n"

/// An offer as Firefox writes it: fingerprint at session level, Opus at 109, LF line ends.
let firefoxOfferText = [
    "v=0",
    "o=mozilla...THIS_IS_SDPARTA-120.0 5084411225254358730 0 IN IP4 0.0.0.0",
    "s=-",
    "t=0 0",
    "a=fingerprint:sha-256 0C:8E:51:F7:2A:93:6D:B4:11:C0:7E:38:A5:4F:E2:99:D6:03:BB:7A:25:48:F1:6C:90:1D:E4:3B:87:52:AF:0E",
    "a=group:BUNDLE 0",
    "a=ice-options:trickle",
    "a=msid-semantic:WMS *",
    "m=audio 9 UDP/TLS/RTP/SAVPF 109 9 0 8 101",
    "c=IN IP4 0.0.0.0",
    "a=sendrecv",
    "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
    "a=extmap:2/recvonly urn:ietf:params:rtp-hdrext:csrc-audio-level",
    "a=extmap:3 urn:ietf:params:rtp-hdrext:sdes:mid",
    "a=fmtp:109 maxplaybackrate=48000;stereo=1;useinbandfec=1",
    "a=fmtp:101 0-15",
    "a=ice-pwd:0b3b7e2f2a8c4d6e9f1a3c5e7b9d1f3a",
    "a=ice-ufrag:5f2c8a1e",
    "a=mid:0",
    "a=msid:{c6a5e3d1-2b4f-4e8a-9c7d-1f3b5a7e9c2d} {2b7e9c1d-5a3f-4d8e-b6c2-7e1a9f3d5b8c}",
    "a=rtcp-mux",
    "a=rtpmap:109 opus/48000/2",
    "a=rtpmap:9 G722/8000/1",
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:8 PCMA/8000",
    "a=rtpmap:101 telephone-event/8000/1",
    "a=setup:actpass",
    "a=ssrc:2717862178 cname:{e1d2c3b4-a5f6-4789-8abc-def012345678}",
].joined(separator: "\n") + "\n"

// MARK: The room's member routes: events, members, texts

extension WebRTCRouteTests {
    @Test("a member token opens its room's event stream (admin too); another room's token is refused with CORS")
    func roomEvents() {
        let ok = HTTPRequest(method: "GET", path: "/v1/rooms/R/events", authorization: "Bearer " + Self.memberToken("ann"))
        #expect(router.admit(ok, now: RouterTests.now)
                == .eventStream(room: "R", holder: StreamHolder(identity: "ann", admin: false, expiresAt: RouterTests.now + 600)))
        let admin = HTTPRequest(method: "GET", path: "/v1/rooms/R/events", authorization: "Bearer " + RouterTests.token(admin: true))
        #expect(router.admit(admin, now: RouterTests.now)
                == .eventStream(room: "R", holder: StreamHolder(identity: "ops", admin: true, expiresAt: RouterTests.now + 600)))
        let other = send("GET", "/v1/rooms/R/events", token: Self.memberToken("ann", room: "S"))
        #expect(other.status == 403 && other.headers["Access-Control-Allow-Origin"] == "*")
        #expect(send("GET", "/v1/rooms/R/events", token: nil).status == 401)
    }

    @Test("a member lists its room without addresses or traffic; an admin gets the full list")
    func roomMembers() {
        #expect(send("POST", "/v1/rooms/R/webrtc", chromeOffer, token: Self.memberToken("ann", grants: Grants(create: true))).status == 201)
        let seen = send("GET", "/v1/rooms/R/members")
        #expect(seen.status == 200)
        let text = String(decoding: seen.body, as: UTF8.self)
        #expect(text.contains(#""identity":"ann""#) && text.contains(#""transport":"webrtc""#), "\(text)")
        #expect(!text.contains("address") && !text.contains("packets_in"), "\(text)")
        let full = send("GET", "/v1/rooms/R/members", token: RouterTests.token(admin: true))
        #expect(String(decoding: full.body, as: UTF8.self).contains("packets_in"))
        #expect(send("GET", "/v1/rooms/R/members", token: Self.memberToken("ann", room: "S")).status == 403)
    }

    @Test("a member list comes in pages on demand: limit and after (the next page's cursor), join order, every member once; bad arguments 400")
    func memberPages() throws {
        for i in 0..<5 {
            let offer = send("POST", "/v1/rooms/R/webrtc", chromeOffer, token: Self.memberToken("m\(i)", grants: Grants(create: true)))
            #expect(offer.status == 201)
        }
        func get(_ query: [String: String]) -> HTTPResponse {
            let request = HTTPRequest(method: "GET", path: "/v1/rooms/R/members", authorization: "Bearer " + Self.memberToken("m0"), query: query)
            return router.route(request, now: RouterTests.now)
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        var seen: [String] = []
        var after: String?
        for _ in 0..<4 {
            var query = ["limit": "2"]
            if let after { query["after"] = after }
            let page = try decoder.decode(API.RoomMemberList.self, from: Data(get(query).body))
            #expect(page.total == 5)
            seen += page.members.map(\.identity)
            after = page.next
            if after == nil { break }
        }
        #expect(seen == ["m0", "m1", "m2", "m3", "m4"])
        #expect(after == nil)
        let whole = try decoder.decode(API.RoomMemberList.self, from: Data(get([:]).body))
        #expect(whole.members.count == 5 && whole.next == nil)
        for bad in [["limit": "0"], ["limit": "1001"], ["limit": "x"], ["after": "-1"]] { #expect(get(bad).status == 400, "\(bad)") }
    }

    @Test("a member's text goes to the room from its identity and is logged as a text event; a token whose member is not in the room gets 404")
    func roomTexts() {
        #expect(send("POST", "/v1/rooms/R/webrtc", chromeOffer, token: Self.memberToken("ann", grants: Grants(create: true))).status == 201)
        _ = backend.core.drainEvents()
        #expect(send("POST", "/v1/rooms/R/messages", #"{"text":"hello room"}"#, contentType: "application/json").status == 200)
        let events = backend.core.drainEvents()
        #expect(events.contains { $0.kind == .text && $0.identity == "ann" && $0.detail == "hello room" && $0.room == "R" }, "\(events)")
        let stranger = send("POST", "/v1/rooms/R/messages", #"{"text":"hi"}"#, token: Self.memberToken("bob"), contentType: "application/json")
        #expect(stranger.status == 404, "\(stranger.text)")
        #expect(send("POST", "/v1/rooms/R/messages", #"{"text":""}"#, contentType: "application/json").status == 400)
    }
}

extension WebRTCRouteTests {
    @Test("POST /v1/dev-token mints a member token without a token only on a relay with the dev credentials; elsewhere it needs the admin token like any /v1 path")
    func devTokens() throws {
        let dev = HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                             signer: TokenSigner(apiKey: "k", apiSecret: RouterTests.secret), config: RelayCoreConfig(), devTokens: true)
        let request = HTTPRequest(method: "POST", path: "/v1/dev-token", body: Array(#"{"identity":"web","room":"R"}"#.utf8))
        #expect(dev.admit(request, now: RouterTests.now) == .route)
        let minted = dev.route(request, now: RouterTests.now)
        #expect(minted.status == 201, "\(minted.text)")
        let token = try #require((try? JSONSerialization.jsonObject(with: Data(minted.body)) as? [String: Any])?["token"] as? String)
        let claims = try TokenVerifier(keys: ["k": RouterTests.secret]).verify(token, now: RouterTests.now)
        #expect(claims.identity == "web" && claims.room == "R" && !claims.grants.admin)
        guard case .answer(let refused) = router.admit(request, now: RouterTests.now) else {
            Issue.record("a relay without dev tokens admitted an unauthenticated dev-token request")
            return
        }
        #expect(refused.status == 401)
        let bad = dev.route(HTTPRequest(method: "POST", path: "/v1/dev-token", body: Array(#"{"identity":"","room":"R"}"#.utf8)), now: RouterTests.now)
        #expect(bad.status == 400)
    }
}
