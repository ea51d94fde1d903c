import Foundation
import ParleyAuth
import ParleyRelayCore
import ParleyWebRTC
import Testing
@testable import ParleyHTTP

/// `GET /v1/ice-servers` and the `Link` headers of WHIP, WHEP and combined answers through the router (`admit`,
/// then `route`), with a real core behind it: who may ask, what comes back, and that the shared secret never does.
@Suite("HTTP router: GET /v1/ice-servers and the ICE servers' Link headers on WebRTC answers")
struct ICEServerRouteTests {
    static let secret = "parley-turn-shared-secret-0123"
    static let urls = ["stun:stun.example.net", "turn:198.51.100.10:3478?transport=udp",
                       "turns:turn.example.net:5349?transport=tcp"]
    static let servers = ICEServers(urls: urls.map { try! ICEServerURL(parsing: $0) }, secret: secret, lifetime: 600)
    // RouterTests.now + 600 = 1800000600:
    // printf '%s' '1800000600:ann' \
    //     | openssl dgst -sha1 -hmac 'parley-turn-shared-secret-0123' -binary | base64
    static let annCredential = "XdkIT5Z+71IoBOD5mTC+6X7Sd50="
    // printf '%s' '1800000600:ops' \
    //     | openssl dgst -sha1 -hmac 'parley-turn-shared-secret-0123' -binary | base64
    static let opsCredential = "gspRuXU82I/fkaD1qGwgSqankYM="

    let backend = CoreBackend(webrtc: true)

    func router(_ servers: ICEServers = ICEServerRouteTests.servers) -> HTTPRouter {
        HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                   signer: TokenSigner(apiKey: "k", apiSecret: RouterTests.secret), config: RelayCoreConfig(),
                   iceServers: servers)
    }

    /// `admit`, and `route` when admitted: the answer a client gets. `/v1/ice-servers` must be answered at admission.
    func send(_ method: String, _ path: String, token: String?, body: String = "", contentType: String? = nil,
              servers: ICEServers = ICEServerRouteTests.servers) -> HTTPResponse {
        let request = HTTPRequest(method: method, path: path, authorization: token.map { "Bearer " + $0 },
                                  body: Array(body.utf8), contentType: contentType)
        let router = router(servers)
        switch router.admit(request, now: RouterTests.now) {
        case .answer(let r):
            if path == "/v1/ice-servers" {
                #expect(router.route(request, now: RouterTests.now) == r, "route and admit differ")
            }
            return r
        case .route, .attachment:
            #expect(path != "/v1/ice-servers", "not answered at admission")
            return router.route(request, now: RouterTests.now)
        case .eventStream, .presenceStream:
            Issue.record("an event stream for \(path)")
            return HTTPResponse(status: 0, body: [])
        }
    }

    /// Nothing of the shared secret in the answer: body or any header.
    func expectNoSecret(_ r: HTTPResponse, sourceLocation: SourceLocation = #_sourceLocation) {
        let everything = r.text + r.headers.map { "\($0.key): \($0.value)" }.joined(separator: "\n")
        #expect(!everything.contains(Self.secret) && !everything.contains("parley-turn"), "\(everything)",
                sourceLocation: sourceLocation)
    }

    func decoded(_ r: HTTPResponse) throws -> [ICEServer] {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(API.ICEServerList.self, from: Data(r.body)).iceServers
    }

    // MARK: GET /v1/ice-servers

    @Test("""
          a member token gets the STUN URLs, and the TURN URLs with a credential for its identity that expires at \
          now + turn_ttl_s
          """)
    func memberGetsServers() throws {
        let r = send("GET", "/v1/ice-servers", token: WebRTCRouteTests.memberToken("ann"))
        #expect(r.status == 200 && r.contentType == "application/json", "\(r.text)")
        #expect(try decoded(r) == [
            ICEServer(urls: ["stun:stun.example.net"], username: nil, credential: nil),
            ICEServer(urls: ["turn:198.51.100.10:3478?transport=udp", "turns:turn.example.net:5349?transport=tcp"],
                      username: "1800000600:ann", credential: Self.annCredential),
        ])
        // RTCIceServer's own names inside, snake_case outside; nothing else.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
        #expect(Set(object.keys) == ["ice_servers"])
        let entries = try #require(object["ice_servers"] as? [[String: Any]])
        #expect(entries.map { Set($0.keys) } == [["urls"], ["urls", "username", "credential"]])
        #expect(r.headers["Access-Control-Allow-Origin"] == "*" && r.headers["Cache-Control"] == "no-store")
        expectNoSecret(r)
    }

    @Test("an admin token gets servers too, for its own identity; HEAD is taken like GET")
    func adminGetsServers() throws {
        let r = send("GET", "/v1/ice-servers", token: RouterTests.token(admin: true))
        #expect(r.status == 200, "\(r.text)")
        #expect(try decoded(r).last == ICEServer(urls: Array(Self.urls.dropFirst()), username: "1800000600:ops",
                                                 credential: Self.opsCredential))
        #expect(send("HEAD", "/v1/ice-servers", token: RouterTests.token(admin: true)).status == 200)
    }

    @Test("no TURN configured: {\"ice_servers\":[]}")
    func noneConfigured() {
        let r = send("GET", "/v1/ice-servers", token: WebRTCRouteTests.memberToken("ann"), servers: ICEServers())
        #expect(r.status == 200 && r.text == #"{"ice_servers":[]}"# + "\n", "\(r.text)")
        #expect(r.headers["Access-Control-Allow-Origin"] == "*")
    }

    @Test("""
          refused without a good token (401), without the join grant (403), other methods (405); each with CORS and \
          no secret
          """,
          arguments: [
            (nil as String?, "GET", 401, "unauthorized"),
            ("not.a.token", "GET", 401, "unauthorized"),
            (WebRTCRouteTests.memberToken("ann", expiresIn: -60), "GET", 401, "unauthorized"),
            (TokenSigner(apiKey: "k", apiSecret: "another-secret-0123456789").mint(
                TokenClaims(identity: "ann", room: "R", expiresAt: RouterTests.now + 60)), "GET", 401, "unauthorized"),
            (WebRTCRouteTests.memberToken("ann", grants: Grants(join: false)), "GET", 403, "forbidden"),
            (WebRTCRouteTests.memberToken("ann"), "POST", 405, "method_not_allowed"),
            (WebRTCRouteTests.memberToken("ann"), "DELETE", 405, "method_not_allowed"),
          ] as [(String?, String, Int, String)])
    func refused(token: String?, method: String, status: Int, code: String) {
        let r = send(method, "/v1/ice-servers", token: token)
        #expect(r.status == status && r.text.contains(#""code":"\#(code)""#), "\(r.status) \(r.text)")
        #expect(r.headers["Access-Control-Allow-Origin"] == "*")
        #expect(!r.text.contains("username") && !r.text.contains("credential"))
        expectNoSecret(r)
    }

    @Test("OPTIONS is the CORS preflight, without a token")
    func preflight() {
        let r = send("OPTIONS", "/v1/ice-servers", token: nil)
        #expect(r.status == 204 && r.body.isEmpty)
        #expect(r.headers["Access-Control-Allow-Headers"]?.contains("Authorization") == true)
    }

    // MARK: Link headers on 201 answers

    static let annTURNParameters = #"; rel="ice-server"; username="1800000600:ann""#
        + #"; credential="XdkIT5Z+71IoBOD5mTC+6X7Sd50="; credential-type="password""#
    static let annLinks = [
        #"<stun:stun.example.net>; rel="ice-server""#,
        "<turn:198.51.100.10:3478?transport=udp>" + annTURNParameters,
        "<turns:turn.example.net:5349?transport=tcp>" + annTURNParameters,
    ]

    @Test("""
          a 201 answer carries one Link per URL (RFC 9725 §4.6), joined with ", " in one field, and exposes it to \
          pages
          """,
          arguments: ["whip", "whep", "webrtc"])
    func linksOnAnswers(route: String) {
        let r = send("POST", "/v1/rooms/R/\(route)", token: WebRTCRouteTests.memberToken("ann"), body: chromeOffer,
                     contentType: "application/sdp")
        #expect(r.status == 201, "\(r.text)")
        #expect(r.headers["Link"] == Self.annLinks.joined(separator: ", "))
        #expect(r.headers["Link"]?.components(separatedBy: #"rel="ice-server""#).count == 4)
        let exposed = Set((r.headers["Access-Control-Expose-Headers"] ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(exposed.isSuperset(of: ["Location", "Link"]))
        expectNoSecret(r)
    }

    @Test("no Link without configured servers, nor on a refusal")
    func noLinks() {
        let plain = send("POST", "/v1/rooms/R/whip", token: WebRTCRouteTests.memberToken("ann"), body: chromeOffer,
                         contentType: "application/sdp", servers: ICEServers())
        #expect(plain.status == 201 && plain.headers["Link"] == nil, "\(plain.text)")
        let refused = send("POST", "/v1/rooms/R/whip", token: WebRTCRouteTests.memberToken("bob"), body: chromeOffer,
                           contentType: "text/plain")
        #expect(refused.status == 415 && refused.headers["Link"] == nil)
    }

    @Test("Link parameters are quoted-strings: a quote or backslash would be escaped")
    func quoting() {
        #expect(HTTPRouter.quoted(#"a"b\c"#) == #""a\"b\\c""#)
        #expect(HTTPRouter.quoted("1800000600:ann") == #""1800000600:ann""#)
    }
}
