import Foundation
import ParleyAuth
import ParleyHTTP
import ParleyRelay
import ParleyRelayCore
import Testing

/// What the server decides from the headers alone, before any body is read or any worker is asked; and who may read
/// `/metrics`.
@Suite("HTTP router: admission on headers, metrics access, answers to clients without a token")
struct AdmissionTests {
    let backend = CoreBackend()
    func router(metrics: MetricsAuth = .remote) -> HTTPRouter {
        HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                   signer: TokenSigner(apiKey: "k", apiSecret: RouterTests.secret), config: RelayCoreConfig(), metricsRequireAuth: metrics)
    }
    static let admin = "Bearer " + RouterTests.token(admin: true)

    func admit(_ method: String, _ path: String, auth: String?, loopback: Bool = false, metrics: MetricsAuth = .remote) -> HTTPRouter.Admission {
        router(metrics: metrics).admit(HTTPRequest(method: method, path: path, authorization: auth, fromLoopback: loopback), now: RouterTests.now)
    }

    func status(_ a: HTTPRouter.Admission) -> Int? {
        if case .answer(let r) = a { return r.status }
        return nil
    }

    @Test("answered at once: health, refusals, unknown paths; routed: authorised requests; streamed: authorised events",
          arguments: [
            ("GET", "/healthz", nil, 200),
            ("POST", "/healthz", nil, 405),
            ("GET", "/v1/rooms", nil, 401),
            ("POST", "/v1/rooms", "Bearer not.a.token", 401),
            ("POST", "/v1/rooms", "Bearer " + RouterTests.token(admin: false), 403),
            ("GET", "/v1/events", nil, 401),
            ("GET", "/", nil, 404),
            ("GET", "/v2/rooms", AdmissionTests.admin, 404),
            ("GET", "/metrics", nil, 401),
            ("POST", "/metrics", AdmissionTests.admin, 405),
          ] as [(String, String, String?, Int)])
    func answeredAtOnce(method: String, path: String, auth: String?, expected: Int) {
        #expect(status(admit(method, path, auth: auth)) == expected)
    }

    @Test("authorised requests go to the API threads, whatever their path under /v1; events start a stream")
    func routed() {
        #expect(admit("GET", "/v1/rooms", auth: Self.admin) == .route)
        #expect(admit("POST", "/v1/rooms", auth: Self.admin) == .route)
        #expect(admit("DELETE", "/v1/rooms/x/members/y", auth: Self.admin) == .route)
        #expect(admit("GET", "/v1/nothing", auth: Self.admin) == .route)  // its 404 comes from `route`, after auth
        let ops = StreamHolder(identity: "ops", admin: true, expiresAt: RouterTests.now + 600)
        #expect(admit("GET", "/v1/events", auth: Self.admin) == .eventStream(room: nil, holder: ops))
        #expect(admit("GET", "/v1/rooms/x/events", auth: Self.admin) == .eventStream(room: "x", holder: ops))
        #expect(admit("POST", "/v1/events", auth: Self.admin) == .route)  // 405 from `route`
    }

    @Test("metrics_require_auth: who gets /metrics without a token",
          arguments: [
            (MetricsAuth.remote, true, nil, 200), (.remote, false, nil, 401), (.remote, false, AdmissionTests.admin, 200),
            (.always, true, nil, 401), (.always, true, AdmissionTests.admin, 200), (.always, false, nil, 401),
            (.never, false, nil, 200), (.never, true, nil, 200),
            (.remote, false, "Bearer " + RouterTests.token(admin: false), 403),
          ] as [(MetricsAuth, Bool, String?, Int)])
    func metrics(policy: MetricsAuth, loopback: Bool, auth: String?, expected: Int) {
        let request = HTTPRequest(method: "GET", path: "/metrics", authorization: auth, fromLoopback: loopback)
        let admission = router(metrics: policy).admit(request, now: RouterTests.now)
        #expect(expected == 200 ? admission == .route : status(admission) == expected)
        #expect(router(metrics: policy).route(request, now: RouterTests.now).status == expected)
    }

    @Test("a client without a valid token gets a short answer that does not echo its request",
          arguments: [
            ("GET", "/metrics", nil),
            ("GET", "/v1/rooms", nil),
            ("GET", "/v1/rooms", "Basic " + String(repeating: "a", count: 4000)),
            ("GET", "/" + String(repeating: "p", count: 4000), nil),
            ("GET", "/v1/" + String(repeating: "p", count: 4000), nil),
            ("DELETE", "/v1/rooms/" + String(repeating: "r", count: 100), nil),
            ("GET", "/v1/rooms", "Bearer " + AdmissionTests.forged(kid: String(repeating: "k", count: 3000))),
            ("GET", "/v1/rooms", "Bearer " + AdmissionTests.forged(alg: String(repeating: "a", count: 3000))),
          ] as [(String, String, String?)])
    func shortRefusals(method: String, path: String, auth: String?) throws {
        guard case .answer(let r) = admit(method, path, auth: auth) else { Issue.record("not answered at once"); return }
        #expect(r.status == 401 || r.status == 404)
        #expect(r.body.count <= 100, "\(r.body.count) bytes: \(r.text)")
        #expect(!["ppp", "rrr", "aaa", "kkk"].contains { r.text.contains($0) }, "\(r.text)")
    }

    /// A token whose header names `kid` and `alg`, with a signature that cannot verify.
    static func forged(kid: String = "k", alg: String = "HS256") -> String {
        let header = Data(#"{"alg":"\#(alg)","kid":"\#(kid)","typ":"JWT"}"#.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return header + ".e30.c2lnbmF0dXJl"
    }
}
