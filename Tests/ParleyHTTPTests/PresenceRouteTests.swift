import Foundation
import Glibc
import ParleyAuth
@testable import ParleyHTTP
import ParleyRelay
import ParleyRelayCore
import ParleyWire
import Synchronization
import Testing

/// The routes through which a web page is online for calls (`PresenceRoutes.swift`): through the router with a real
/// core behind it, and through a real server for the stream's life (opened with the connection, closed with it) and
/// what it shows (only its own private events).
@Suite("HTTP: a web page's presence stream and call routes")
struct PresenceRouteTests {
    let backend = CoreBackend()
    var router: HTTPRouter {
        HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                   signer: TokenSigner(apiKey: "k", apiSecret: RouterTests.secret), config: RelayCoreConfig())
    }
    static let stream: UInt64 = 4242
    var now: Moment { Moment(monotonic: .origin + .seconds(1), unixMilliseconds: 1_800_000_000_000) }

    func send(_ method: String, _ path: String, _ body: String = "", token: String? = WebRTCRouteTests.memberToken("ann")) -> HTTPResponse {
        let request = HTTPRequest(method: method, path: path, authorization: token.map { "Bearer " + $0 }, body: Array(body.utf8),
                                  contentType: "application/json")
        switch router.admit(request, now: RouterTests.now) {
        case .answer(let r): return r
        case .route, .attachment: return router.route(request, now: RouterTests.now)
        case .eventStream, .presenceStream: Issue.record("an event stream for \(path)"); return HTTPResponse(status: 0, body: [])
        }
    }

    func json(_ r: HTTPResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:]
    }

    @Test("the stream is admitted for any token with join, as its identity; without a token 401, without join 403, OPTIONS is the preflight")
    func admission() {
        let get = { (token: String?) in
            router.admit(HTTPRequest(method: "GET", path: "/v1/presence/events", authorization: token.map { "Bearer " + $0 }), now: RouterTests.now)
        }
        #expect(get(WebRTCRouteTests.memberToken("ann"))
                == .presenceStream(holder: StreamHolder(identity: "ann", admin: false, expiresAt: RouterTests.now + 600), name: "Ann"))
        guard case .answer(let none) = get(nil) else { Issue.record("admitted without a token"); return }
        #expect(none.status == 401)
        #expect(none.headers["Access-Control-Allow-Origin"] == "*")
        guard case .answer(let noJoin) = get(WebRTCRouteTests.memberToken("ann", grants: Grants(join: false))) else {
            Issue.record("admitted without join"); return
        }
        #expect(noJoin.status == 403)
        #expect(send("OPTIONS", "/v1/presence/1/calls", token: nil).status == 204)
        #expect(send("POST", "/v1/presence/events").status == 405)
        #expect(send("POST", "/v1/presence/x/calls", "{}").status == 404)
        #expect(send("POST", "/v1/presence/0/calls", "{}").status == 404)
        #expect(send("POST", "/v1/presence/1/calls/x/answer", "{}").status == 404)
    }

    @Test("a page calls: 202 with the call id; the ring, then the decline of someone offline reach its stream as events")
    func call() throws {
        #expect(backend.core.messaging.openWebPresence(stream: Self.stream, identity: "ann", name: "Ann", now: now) == .ok)
        _ = backend.core.drainEvents()
        let r = send("POST", "/v1/presence/\(Self.stream)/calls", #"{"callee":"bob"}"#)
        #expect(r.status == 202)
        #expect(json(r)["call_id"] as? Int == 1)
        #expect(r.headers["Access-Control-Allow-Origin"] == "*")
        let events = backend.core.drainEvents().filter { $0.recipient != 0 }  // (the call log's public events aside)
        #expect(events.map(\.recipient) == [Self.stream])
        #expect(events.first?.call == RelayEvent.CallNotice(callID: 1, state: "unavailable", reason: "bob is not online", token: ""))
        // What the stream sends for it.
        let first = try #require(events.first)
        let wire = try JSONEncoder().encode(API.Event(first))
        let object = try #require(try JSONSerialization.jsonObject(with: wire) as? [String: Any])
        #expect((object["call"] as? [String: Any])?["state"] as? String == "unavailable")
        #expect((object["call"] as? [String: Any])?["token"] == nil)
    }

    @Test("another identity's token gets 403 on the page's stream; a stream not online 404; bad bodies 400")
    func refusals() {
        #expect(backend.core.messaging.openWebPresence(stream: Self.stream, identity: "ann", name: "Ann", now: now) == .ok)
        let mallory = WebRTCRouteTests.memberToken("mallory")
        #expect(send("POST", "/v1/presence/\(Self.stream)/calls", #"{"callee":"bob"}"#, token: mallory).status == 403)
        #expect(send("POST", "/v1/presence/\(Self.stream)/calls/1/answer", #"{"accept":true}"#, token: mallory).status == 403)
        #expect(send("DELETE", "/v1/presence/\(Self.stream)/calls/1", token: mallory).status == 403)
        #expect(send("POST", "/v1/presence/99/calls", #"{"callee":"bob"}"#).status == 404)
        #expect(send("POST", "/v1/presence/\(Self.stream)/calls", #"{"who":"bob"}"#).status == 400)
        #expect(send("POST", "/v1/presence/\(Self.stream)/calls", #"{"callee":""}"#).status == 400)
        #expect(send("POST", "/v1/presence/\(Self.stream)/calls/1/answer", "[]").status == 400)
        #expect(send("DELETE", "/v1/presence/\(Self.stream)/calls/1").status == 404)  // no such call
        #expect(send("POST", "/v1/presence/\(Self.stream)/messages", #"{"to":"bob","text":""}"#).status == 400)
        #expect(send("POST", "/v1/presence/\(Self.stream)/messages", #"{"to":"bob","text":"hi"}"#).status == 404)  // bob is offline
        #expect(send("DELETE", "/v1/presence/\(Self.stream)", token: mallory).status == 403)
        #expect(backend.core.callSnapshot().isEmpty)
        // The page leaves.
        #expect(send("DELETE", "/v1/presence/\(Self.stream)").status == 200)
        #expect(backend.core.presenceSnapshot().isEmpty)
        #expect(send("DELETE", "/v1/presence/\(Self.stream)").status == 404)
    }

    @Test("event scopes: the backend's and a room's streams never show a private event; a presence stream shows only its own")
    func scopes() {
        let open = RelayEvent(kind: .memberJoined, room: "R", identity: "bob", unixMilliseconds: 1)
        let mine = RelayEvent(kind: .callStatus, room: "call-1", identity: "ann", unixMilliseconds: 1, recipient: 7,
                              call: .init(callID: 1, state: "answered", reason: "", token: "secret"))
        let theirs = RelayEvent(kind: .incomingCall, room: "", identity: "ann", unixMilliseconds: 1, recipient: 8)
        #expect([open, mine, theirs].filter(EventStreams.Scope.all.shows) == [open])
        #expect([open, mine, theirs].filter(EventStreams.Scope.room("R").shows) == [open])
        #expect([open, mine, theirs].filter(EventStreams.Scope.room("call-1").shows) == [])
        #expect([open, mine, theirs].filter(EventStreams.Scope.recipient(7).shows) == [mine])
    }
}

/// A backend that records the commands it is sent (a real server posts the presence stream's open and close).
final class RecordingBackend: APIBackend, Sendable {
    let commands = Mutex<[AdminCommand]>([])
    func snapshots() -> [WorkerSnapshot] { [WorkerSnapshot(worker: 0)] }
    func execute(_ command: AdminCommand) -> AdminResult? {
        commands.withLock { $0.append(command) }
        return .ok
    }
}

@Suite("HTTP server: a presence stream lives as long as its connection")
struct PresenceStreamServerTests {
    @Test("opening the stream puts the page online as its token's identity; it shows only its own events; closing it takes the page offline")
    func lifetime() throws {
        let backend = RecordingBackend()
        let hub = EventHub()
        let router = HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]), signer: nil,
                                config: RelayCoreConfig())
        let http = try HTTPServer(address: PeerAddress(ipv4: 127, 0, 0, 1, port: 0), router: router, events: hub,
                                  log: MemoryLogSink(threshold: .error))
        defer { http.stop() }
        var connection: OneRequest? = try OneRequest(port: http.port, "GET", "/v1/presence/events", token: WebRTCRouteTests.memberToken("ann"))
        var stream: UInt64 = 0
        #expect(eventually {
            if case .openWebPresence(let s, "ann", "Ann")? = backend.commands.withLock({ $0.first }) { stream = s }
            return stream != 0
        })
        hub.publish([RelayEvent(kind: .memberJoined, room: "R", identity: "bob", unixMilliseconds: 1),
                     RelayEvent(kind: .incomingCall, room: "", identity: "eve", unixMilliseconds: 1, recipient: stream &+ 1),
                     RelayEvent(kind: .incomingCall, room: "", identity: "bob", detail: "Bob", unixMilliseconds: 1, recipient: stream,
                                call: .init(callID: 3, state: "ringing", reason: "", token: ""))])
        let body = connection!.read(until: "incoming_call", seconds: 3)
        #expect(body.contains(#""identity":"bob""#))
        #expect(body.contains(#""call":{"id":3,"state":"ringing"}"#))
        #expect(!body.contains(#""identity":"eve""#))
        #expect(!body.contains("member_joined"))
        connection = nil  // the page goes away
        // A parked stream learns its peer is gone when it next writes (an event or a keepalive): the first write after
        // the close is taken by the kernel, a later one fails.
        #expect(eventually {
            hub.publish([RelayEvent(kind: .callStatus, room: "", unixMilliseconds: 2, recipient: stream)])
            return backend.commands.withLock { $0.contains(.closeWebPresence(stream: stream, identity: nil)) }
        })
        #expect(backend.commands.withLock { $0.count } == 2)
    }

    func eventually(seconds: Double = 3, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return condition()
    }
}

extension OneRequest {
    /// What arrived until `marker` did (or `seconds` passed).
    func read(until marker: String, seconds: Double) -> String {
        let deadline = Date().addingTimeInterval(seconds)
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while deadline.timeIntervalSinceNow > 0 {
            if String(decoding: out, as: UTF8.self).contains(marker) { break }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 50) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buffer[..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
