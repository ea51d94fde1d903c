import Foundation
import ParleyAuth
import ParleyHTTP
import ParleyNet
import ParleyRelay
import ParleyWire
import ParleyRelayCore
import ParleyWebRTC
import Synchronization
import Testing

/// A backend over one real `RelayCore` driven on the test's thread: commands run at once, snapshots are
/// captured on demand. No sockets, no worker threads.
final class CoreBackend: APIBackend, @unchecked Sendable {
    // Invariant: used from one test at a time (each test builds its own).
    let core: RelayCore
    var answers = true
    /// What the worker's socket reports (the core has none: there are no sockets here).
    var datagrams = DatagramCounters()
    /// `webrtc` gives the relay a DTLS certificate (WebRTC offers are answered); without it they are refused (503).
    init(config: RelayCoreConfig = RelayCoreConfig(), webrtc: Bool = false) {
        let dtls = webrtc ? try! DTLSContext(certificate: DTLSCertificate(now: RouterTests.now)) : nil
        let shared = RelayShared(config: config, verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                                 cookieSecret: Array(repeating: 1, count: 32), workerPorts: [7400], dtls: dtls)
        core = RelayCore(shared: shared, workerIndex: 0, log: MemoryLogSink(threshold: .error))
    }
    /// The relay certificate's SHA-256, as `RelayAPI` reports it.
    var dtlsFingerprint: [UInt8]? { core.shared.dtls?.certificate.fingerprint }
    func snapshots() -> [WorkerSnapshot] {
        [WorkerSnapshot.capture(core, worker: 0, busyNanoseconds: 1_500_000_000, mixTime: DurationHistogram(), datagrams: datagrams)]
    }
    func execute(_ command: AdminCommand) -> AdminResult? {
        answers ? command.apply(to: core, now: Moment(monotonic: .origin + .seconds(1), unixMilliseconds: 1_800_000_000_000)) : nil
    }
}

@Suite("HTTP router: auth, rooms, members, tokens, validation, metrics — without sockets")
struct RouterTests {
    static let secret = "router-test-secret-0123456789"
    static let now: Int64 = 1_800_000_000
    let backend = CoreBackend()
    var router: HTTPRouter {
        HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": Self.secret]),
                   signer: TokenSigner(apiKey: "k", apiSecret: Self.secret), config: RelayCoreConfig())
    }

    static func token(admin: Bool, expiresIn: Int64 = 600) -> String {
        TokenSigner(apiKey: "k", apiSecret: secret).mint(TokenClaims(identity: "ops", room: admin ? nil : "x", expiresAt: now + expiresIn,
                                                                     grants: Grants(admin: admin)))
    }

    func call(_ method: String, _ path: String, _ body: String? = nil, auth: String? = "Bearer " + RouterTests.token(admin: true)) -> HTTPResponse {
        router.route(HTTPRequest(method: method, path: path, authorization: auth, body: body.map { Array($0.utf8) } ?? []), now: Self.now)
    }

    func json(_ r: HTTPResponse) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:] }
    func errorCode(_ r: HTTPResponse) -> String? { (json(r)["error"] as? [String: Any])?["code"] as? String }

    @Test("no token, a malformed, expired or foreign-signed token → 401; a token without the admin grant → 403",
          arguments: [
            (nil as String?, 401, "unauthorized"),
            ("Basic abc", 401, "unauthorized"),
            ("Bearer not.a.token", 401, "unauthorized"),
            ("Bearer " + RouterTests.token(admin: true, expiresIn: -60), 401, "unauthorized"),
            ("Bearer " + TokenSigner(apiKey: "k", apiSecret: "another-secret-0123456789").mint(
                TokenClaims(identity: "ops", room: nil, expiresAt: RouterTests.now + 60, grants: Grants(admin: true))), 401, "unauthorized"),
            ("Bearer " + RouterTests.token(admin: false), 403, "forbidden"),
          ])
    func auth(header: String?, status: Int, code: String) {
        let r = call("GET", "/v1/rooms", auth: header)
        #expect(r.status == status)
        #expect(errorCode(r) == code)
    }

    @Test("healthz needs no token; metrics need none from loopback")
    func open() {
        #expect(call("GET", "/healthz", auth: nil).status == 200)
        let m = router.route(HTTPRequest(method: "GET", path: "/metrics", fromLoopback: true), now: Self.now)
        #expect(m.status == 200)
        #expect(m.contentType.hasPrefix("text/plain"))
    }

    @Test("create, list, get, delete a room; a second create conflicts; unknown rooms are 404")
    func roomLifecycle() {
        let created = call("POST", "/v1/rooms", #"{"name":"lobby","mode":"mix","max_members":5,"empty_timeout":60}"#)
        #expect(created.status == 201)
        #expect(json(created)["mode"] as? String == "mix")
        #expect(json(created)["max_members"] as? Int == 5)
        #expect(json(created)["empty_timeout"] as? Int == 60)
        #expect(call("POST", "/v1/rooms", #"{"name":"lobby"}"#).status == 409)
        #expect(call("POST", "/v1/rooms", #"{"name":"aa"}"#).status == 201)
        let list = json(call("GET", "/v1/rooms"))["rooms"] as? [[String: Any]] ?? []
        #expect(list.map { $0["name"] as? String } == ["aa", "lobby"])
        #expect(json(call("GET", "/v1/rooms/lobby"))["members"] as? Int == 0)
        #expect(call("DELETE", "/v1/rooms/lobby").status == 200)
        #expect(errorCode(call("GET", "/v1/rooms/lobby")) == "not_found")
        #expect(call("DELETE", "/v1/rooms/lobby").status == 404)
        #expect(call("GET", "/v1/rooms/nowhere/members").status == 404)
        #expect(call("DELETE", "/v1/rooms/aa/members/bob").status == 404)
        #expect(call("POST", "/v1/rooms/aa/members/bob/mute", #"{"muted":true}"#).status == 404)
        #expect(json(call("GET", "/v1/rooms/aa/members"))["members"] as? [Any] != nil)
        #expect(call("POST", "/v1/rooms/aa/messages", #"{"text":"hi"}"#).status == 200)
    }

    @Test("bad bodies and names are clear 4xx errors",
          arguments: [
            ("POST", "/v1/rooms", #"{"name":"#, 400, "invalid_json"),
            ("POST", "/v1/rooms", #"[1,2]"#, 400, "invalid_json"),
            ("POST", "/v1/rooms", #"{"name":5}"#, 400, "invalid_field"),
            ("POST", "/v1/rooms", #"{}"#, 400, "invalid_field"),
            ("POST", "/v1/rooms", #"{"name":null}"#, 400, "invalid_field"),
            ("POST", "/v1/rooms", #"{"name":"x","max_members":"ten"}"#, 400, "invalid_field"),
            ("POST", "/v1/rooms", #"{"name":"x","max_members":0}"#, 400, "invalid_field"),
            ("POST", "/v1/rooms", #"{"name":"x","mode":"loud"}"#, 400, "invalid_field"),
            ("POST", "/v1/rooms", #"{"name":""}"#, 400, "invalid_field"),
            ("POST", "/v1/rooms", "{\"name\":\"" + String(repeating: "a", count: 129) + "\"}", 400, "invalid_field"),
            ("POST", "/v1/rooms", #"{"name":"tab\there"}"#, 400, "invalid_field"),
            ("POST", "/v1/rooms", "{\"name\":\"" + String(repeating: "a", count: 70_000) + "\"}", 413, "body_too_large"),
            ("GET", "/v1/rooms/" + String(repeating: "é", count: 65), nil, 400, "invalid_field"),
            ("POST", "/v1/rooms/x/members/y/mute", #"{"muted":"yes"}"#, 400, "invalid_field"),
            ("POST", "/v1/rooms/x/messages", #"{"text":""}"#, 400, "invalid_field"),
            ("POST", "/v1/tokens", #"{"identity":"a"}"#, 400, "invalid_field"),
            ("POST", "/v1/tokens", #"{"identity":"a","room":"r","ttl":-5}"#, 400, "invalid_field"),
            ("POST", "/v1/tokens", #"{"identity":"a","room":"r","grants":{"admin":"no"}}"#, 400, "invalid_field"),
            ("PUT", "/v1/rooms", nil, 405, "method_not_allowed"),
            ("GET", "/v2/rooms", nil, 404, "not_found"),
            ("GET", "/v1/nothing", nil, 404, "not_found"),
          ] as [(String, String, String?, Int, String)])
    func badInput(method: String, path: String, body: String?, status: Int, code: String) {
        let r = call(method, path, body)
        #expect(r.status == status, "\(r.text)")
        #expect(errorCode(r) == code, "\(r.text)")
        #expect(((json(r)["error"] as? [String: Any])?["message"] as? String)?.isEmpty == false)
    }

    @Test("a minted token verifies with the relay's key and carries what was asked")
    func mint() throws {
        let r = call("POST", "/v1/tokens", #"{"identity":"alice","name":"Alice","room":"lobby","ttl":120,"grants":{"join":true,"subscribe":true}}"#)
        #expect(r.status == 201)
        let token = try #require(json(r)["token"] as? String)
        let claims = try TokenVerifier(keys: ["k": Self.secret]).verify(token, now: Self.now)
        #expect(claims.identity == "alice" && claims.room == "lobby" && claims.name == "Alice")
        #expect(claims.expiresAt == Self.now + 120)
        // The answer's `expires_at` is in Unix milliseconds, as every time in the API (`created_at`, `joined_at`, `at`).
        #expect((json(r)["expires_at"] as? NSNumber)?.int64Value == (Self.now + 120) * 1000)
        #expect(!claims.grants.publish && claims.grants.join && !claims.grants.admin)
    }

    @Test("a worker that does not answer in time is a 503")
    func timeout() {
        backend.answers = false
        let r = call("POST", "/v1/rooms", #"{"name":"x"}"#)
        #expect(r.status == 503)
        #expect(errorCode(r) == "unavailable")
    }

    @Test("the events route answers with a stream once authorised")
    func events() {
        #expect(call("GET", "/v1/events").isEventStream)
        #expect(!call("GET", "/v1/events", auth: nil).isEventStream)
    }

    @Test("metrics: every family has HELP and TYPE, every sample line is `name{labels} number`")
    func metrics() {
        _ = call("POST", "/v1/rooms", #"{"name":"a"}"#)
        let text = call("GET", "/metrics").text  // with the admin token, from no loopback address
        for family in ["parley_rooms", "parley_members", "parley_packets_in_total", "parley_bytes_out_total", "parley_drops_total",
                       "parley_packets_queued_total", "parley_send_failures_total", "parley_send_queue_drops_total",
                       "parley_nacks_answered_total", "parley_joins_refused_total", "parley_signalling_retransmissions_total",
                       "parley_worker_busy_seconds_total", "parley_mix_seconds", "parley_signalling_drops_total",
                       "parley_slow_sessions_removed_total", "parley_nacks_refused_total",
                       "parley_receiver_reports_implausible_total"] {
            #expect(text.contains("# TYPE \(family) "), "\(family) missing")
        }
        #expect(text.contains("parley_rooms 1\n"))
        #expect(text.contains("parley_drops_total{reason=\"malformed_rtp\"} 0\n"))
        #expect(text.contains("parley_signalling_drops_total{reason=\"text_refused\"} 0\n"))
        #expect(text.contains("parley_worker_busy_seconds_total{worker=\"0\"} 1.5\n"))
        #expect(text.contains("parley_mix_seconds_bucket{le=\"+Inf\"} 0\n"))
        let sample = try! Regex(#"^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [0-9.e+-]+$"#)
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            #expect(String(line).wholeMatch(of: sample) != nil, "bad sample line: \(line)")
        }
    }

    @Test("packets/bytes out are what the kernel accepted; the core's queued count, socket failures and drops have their own families")
    func sendMetrics() {
        var d = DatagramCounters()
        for _ in 0..<7 { d.countSent(bytes: 100) }
        d.countSendFailure(.messageTooLarge)
        d.countSendFailure(.messageTooLarge)
        d.countSendFailure(.noBuffers)
        for _ in 0..<3 { d.countDrop(.queueFull) }
        d.sendsDeferred = 5
        d.countReceiveFailure(.connectionRefused)
        backend.datagrams = d
        let text = call("GET", "/metrics").text
        for line in ["parley_packets_out_total 7", "parley_bytes_out_total 700",
                     "parley_packets_queued_total 0", "parley_bytes_queued_total 0",   // no members: the core queued nothing
                     "parley_send_failures_total{reason=\"message_too_large\"} 2",
                     "parley_send_failures_total{reason=\"no_buffers\"} 1",
                     "parley_send_failures_total{reason=\"connection_refused\"} 0",
                     "parley_send_failures_total{reason=\"would_block\"} 0",
                     "parley_send_deferred_total 5",
                     "parley_send_queue_drops_total{reason=\"queue_full\"} 3",
                     "parley_send_queue_drops_total{reason=\"too_large_to_queue\"} 0",
                     "parley_receive_failures_total{reason=\"connection_refused\"} 1"] {
            #expect(text.contains(line + "\n"), "missing: \(line)")
        }
        #expect(!text.contains("parley_receive_failures_total{reason=\"would_block\"}"))   // EAGAIN is not a receive failure
    }
}
