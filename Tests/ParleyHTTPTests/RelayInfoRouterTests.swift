import Foundation
import ParleyAuth
import ParleyHTTP
import ParleyRelay
import ParleyRelayCore
import ParleyWire
import Testing

/// `GET /v1/relay` (the relay's public key, for anyone) and `relay_key` in `POST /v1/tokens`.
@Suite("HTTP router: the relay's public key at GET /v1/relay without a token; tokens that name it")
struct RelayInfoRouterTests {
    static let relayKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
    let backend = CoreBackend()
    var router: HTTPRouter {
        HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret], relayKey: Self.relayKey),
                   signer: TokenSigner(apiKey: "k", apiSecret: RouterTests.secret), config: RelayCoreConfig(), relayKey: Self.relayKey)
    }

    func request(_ method: String, _ path: String, _ body: String? = nil, auth: String? = nil) -> HTTPRequest {
        HTTPRequest(method: method, path: path, authorization: auth, body: body.map { Array($0.utf8) } ?? [])
    }

    func json(_ r: HTTPResponse) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:] }

    @Test("answered from the headers, without a token, with the key and version in a small fixed body")
    func publicKeyWithoutAuth() throws {
        for auth in [nil, "Bearer not.a.token"] {
            guard case .answer(let r) = router.admit(request("GET", "/v1/relay", auth: auth), now: RouterTests.now) else {
                Issue.record("GET /v1/relay was not answered at once"); return
            }
            #expect(r.status == 200)
            #expect(String(decoding: r.body, as: UTF8.self)
                    == #"{"public_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","version":"\#(ParleyVersion.string)"}"# + "\n")
            #expect(r.body.count <= 128)
        }
        #expect(router.route(request("HEAD", "/v1/relay"), now: RouterTests.now).status == 200)
    }

    @Test("other methods are refused without reading a body; a relay without a key leaves public_key out")
    func methodsAndNoKey() {
        for method in ["POST", "PUT", "DELETE"] {
            guard case .answer(let r) = router.admit(request(method, "/v1/relay"), now: RouterTests.now) else {
                Issue.record("\(method) /v1/relay was routed"); continue
            }
            #expect(r.status == 405)
        }
        let keyless = HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]), signer: nil, config: RelayCoreConfig())
        let r = keyless.route(request("GET", "/v1/relay"), now: RouterTests.now)
        #expect(r.status == 200 && json(r)["public_key"] == nil && json(r)["version"] as? String == ParleyVersion.string)
    }

    @Test("POST /v1/tokens with relay_key mints a token naming that relay; the relay named accepts it, another refuses it")
    func mintNamingTheRelay() throws {
        let body = #"{"identity":"alice","room":"lobby","relay_key":"\#(Self.relayKey)"}"#
        let r = router.route(request("POST", "/v1/tokens", body, auth: "Bearer " + RouterTests.token(admin: true)), now: RouterTests.now)
        #expect(r.status == 201)
        let token = try #require(json(r)["token"] as? String)
        let claims = try TokenVerifier(keys: ["k": RouterTests.secret], relayKey: Self.relayKey).verify(token, now: RouterTests.now)
        #expect(claims.relayKey == Self.relayKey)
        let other = TokenVerifier(keys: ["k": RouterTests.secret], relayKey: "HxwdHh8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo")
        #expect(throws: TokenError.wrongRelay) { try other.verify(token, now: RouterTests.now) }
        // Without relay_key, the token names no relay (as before).
        let plain = router.route(request("POST", "/v1/tokens", #"{"identity":"alice","room":"lobby"}"#,
                                         auth: "Bearer " + RouterTests.token(admin: true)), now: RouterTests.now)
        let plainToken = try #require(json(plain)["token"] as? String)
        #expect(TokenClaims.unverified(plainToken)?.relayKey == nil)
        #expect(!String(decoding: Base64URL.decode(plainToken.split(separator: ".")[1]) ?? [], as: UTF8.self).contains("relay_key"))
    }

    @Test("a relay_key that is not 32 bytes of base64url is refused", arguments: ["", "short", String(Self.relayKey.dropLast()),
                                                                                     Self.relayKey + "A", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                                                                                     "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+"])
    func badRelayKey(key: String) {
        let body = #"{"identity":"alice","room":"lobby","relay_key":"\#(key)"}"#
        let r = router.route(request("POST", "/v1/tokens", body, auth: "Bearer " + RouterTests.token(admin: true)), now: RouterTests.now)
        #expect(r.status == 400)
        #expect(String(decoding: r.body, as: UTF8.self).contains("relay_key"))
    }

    @Test("an admin token naming another relay is refused by this relay's API")
    func adminTokenForAnotherRelay() {
        let token = TokenSigner(apiKey: "k", apiSecret: RouterTests.secret).mint(TokenClaims(
            identity: "ops", room: nil, expiresAt: RouterTests.now + 600, grants: Grants(admin: true),
            relayKey: "HxwdHh8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo"))
        guard case .answer(let r) = router.admit(request("GET", "/v1/rooms", auth: "Bearer " + token), now: RouterTests.now) else {
            Issue.record("routed"); return
        }
        #expect(r.status == 401)
        #expect(String(decoding: r.body, as: UTF8.self).contains("token_wrong_relay"))
    }
}
