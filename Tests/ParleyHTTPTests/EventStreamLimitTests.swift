import Foundation
import Glibc
import ParleyAuth
@testable import ParleyHTTP
import ParleyWire
import ParleyRelay
import ParleyRelayCore
import Testing

/// `EventStreamSeats`: how many event streams one identity and the relay hold, and who is refused.
@Suite("Event streams: seats per identity and in all (pure)")
struct EventStreamSeatsTests {
    static func member(_ identity: String) -> StreamHolder { StreamHolder(identity: identity, admin: false, expiresAt: 0) }

    @Test("an identity gets its bound and no more; another identity its own; a seat given back is taken again")
    func perIdentity() {
        var seats = EventStreamSeats(perIdentity: 2, total: 10)
        #expect(seats.take(Self.member("eve")) == nil)
        #expect(seats.take(Self.member("eve")) == nil)
        #expect(seats.take(Self.member("eve")) == .identityFull(identity: "eve", limit: 2))
        #expect(seats.take(Self.member("bob")) == nil)
        #expect(seats.open == 3 && seats.byIdentity == ["eve": 2, "bob": 1])
        seats.give(Self.member("eve"))
        #expect(seats.take(Self.member("eve")) == nil)
        seats.give(Self.member("bob"))
        #expect(seats.byIdentity["bob"] == nil, "no entry is left for an identity with no stream")
    }

    @Test("the relay's bound holds across identities; admins are neither counted nor refused; refusals change nothing")
    func total() {
        var seats = EventStreamSeats(perIdentity: 4, total: 3)
        for name in ["a", "b", "c"] { #expect(seats.take(Self.member(name)) == nil) }
        let before = seats
        #expect(seats.take(Self.member("d")) == .relayFull(limit: 3))
        #expect(seats == before)
        let ops = StreamHolder(identity: "ops", admin: true, expiresAt: 0)
        for _ in 0..<10 { #expect(seats.take(ops) == nil) }
        seats.give(ops)
        #expect(seats == before)
        // Giving back what was never taken changes nothing either.
        seats.give(Self.member("nobody"))
        #expect(seats == before)
    }

    @Test("the refusals' answers: 429 too_many_streams for an identity, 503 unavailable for the relay, naming the setting")
    func answers() {
        let mine = EventStreamSeats.Refusal.identityFull(identity: "eve", limit: 4).error
        #expect(mine.status == 429 && mine.code == "too_many_streams" && mine.message.contains("event_streams_per_identity"))
        let all = EventStreamSeats.Refusal.relayFull(limit: 256).error
        #expect(all.status == 503 && all.code == "unavailable" && all.message.contains("event_streams_max"))
    }

    @Test("the relay-wide bound is at most half the connections, whatever event_streams_max says")
    func capBelowConnections() {
        var limits = HTTPLimits()
        #expect(limits.eventStreamCap == 256)
        limits.maxConnections = 100
        #expect(limits.eventStreamCap == 50)
        limits.eventStreamsMax = 10
        #expect(limits.eventStreamCap == 10)
    }
}

/// A client reading an HTTP answer as it comes (an event stream), on a plain socket the test owns.
final class StreamReader {
    let fd: Int32
    private(set) var received: [UInt8] = []
    private(set) var ended = false

    init(port: UInt16, _ path: String, token: String) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let ok = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard ok == 0 else { throw POSIXError(.ECONNREFUSED) }
        let bytes = Array("GET \(path) HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(token)\r\n\r\n".utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    var text: String { String(decoding: received, as: UTF8.self) }
    /// The answer's status (0 before its first line is in).
    var status: Int { Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0 }

    /// Reads until `done` holds on what came, the server closes, or `seconds` pass; returns whether `done` held.
    @discardableResult
    func read(seconds: Double, until done: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !done(text) && !ended && deadline.timeIntervalSinceNow > 0 {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(deadline.timeIntervalSinceNow * 1000) + 1) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { ended = true } else { received += buffer[..<n] }
        }
        return done(text)
    }

    deinit { close(fd) }
}

/// The bounds on event streams against a real server (issue 33, finding 3): a member token filled every connection
/// with streams, and a stream whose client left held its connection until its next keepalive.
@Suite("HTTP server: event streams bounded per identity and in all, ended at their token's expiry, closed as their client leaves")
struct EventStreamLimitTests {
    static func member(_ identity: String, room: String = "R", expiresIn: Int64 = 600) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        return TokenSigner(apiKey: "k", apiSecret: RouterTests.secret).mint(
            TokenClaims(identity: identity, room: room, expiresAt: now + expiresIn, grants: Grants()))
    }

    static func admin(expiresIn: Int64 = 600) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        return TokenSigner(apiKey: "k", apiSecret: RouterTests.secret).mint(
            TokenClaims(identity: "ops", room: nil, expiresAt: now + expiresIn, grants: Grants(admin: true)))
    }

    func server(stats: HTTPStats, perIdentity: Int = 4, maxConnections: Int = 1024) throws -> HTTPServer {
        var limits = HTTPLimits()
        limits.eventStreamsPerIdentity = perIdentity
        limits.maxConnections = maxConnections
        limits.connectionsPerAddress = maxConnections
        let backend = GatedBackend(waitLimit: 0.1)
        backend.open()
        let router = HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]), signer: nil,
                                config: RelayCoreConfig(), httpStats: stats)
        return try HTTPServer(address: PeerAddress(ipv4: 127, 0, 0, 1, port: 0), router: router, events: EventHub(),
                              limits: limits, stats: stats, log: MemoryLogSink(threshold: .error))
    }

    func eventually(seconds: Double = 3, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition()
    }

    @Test("one identity holds event_streams_per_identity streams (room and presence streams alike); the next is 429 and its connection closed; another identity still gets one; a closed one frees its seat")
    func perIdentity() throws {
        let stats = HTTPStats()
        let http = try server(stats: stats, perIdentity: 3)
        defer { http.stop() }
        let eve = Self.member("eve")
        var open = try (0..<3).map { _ in try StreamReader(port: http.port, "/v1/rooms/R/events", token: eve) }
        for s in open { #expect(s.read(seconds: 2) { $0.contains(": parley events") }, "\(s.text)") }
        let refused = try StreamReader(port: http.port, "/v1/presence/events", token: eve)
        #expect(refused.read(seconds: 2) { _ in false } == false && refused.ended, "the refused connection stays open: \(refused.text)")
        #expect(refused.status == 429 && refused.text.contains("too_many_streams") && refused.text.contains("Access-Control-Allow-Origin: *"),
                "\(refused.text)")
        #expect(stats.snapshot.eventStreamsRefused == 1)
        let bob = try StreamReader(port: http.port, "/v1/rooms/R/events", token: Self.member("bob"))
        #expect(bob.read(seconds: 2) { $0.contains(": parley events") })
        // eve leaves one stream: her next one opens.
        open.removeFirst()
        #expect(eventually { stats.snapshot.eventStreams == 3 })
        let again = try StreamReader(port: http.port, "/v1/rooms/R/events", token: eve)
        #expect(again.read(seconds: 2) { $0.contains(": parley events") }, "\(again.text)")
        #expect(http.streams.seatsTaken.byIdentity == ["eve": 3, "bob": 1])
    }

    @Test("the relay's bound is below its connections: with member streams at it, the next is 503, while requests and the backend's own stream still get through")
    func relayWide() throws {
        let stats = HTTPStats()
        let http = try server(stats: stats, maxConnections: 8)  // streams: at most 4
        defer { http.stop() }
        let members = try (0..<4).map { try StreamReader(port: http.port, "/v1/rooms/R/events", token: Self.member("m\($0)")) }
        for s in members { #expect(s.read(seconds: 2) { $0.contains(": parley events") }) }
        let fifth = try StreamReader(port: http.port, "/v1/rooms/R/events", token: Self.member("m4"))
        fifth.read(seconds: 2) { _ in false }
        #expect(fifth.status == 503 && fifth.ended, "\(fifth.text)")
        #expect(try OneRequest(port: http.port, "GET", "/v1/rooms", token: Self.admin()).status(within: 2) == 200)
        let backend = try StreamReader(port: http.port, "/v1/events", token: Self.admin())
        #expect(backend.read(seconds: 2) { $0.contains(": parley events") }, "\(backend.text)")
        #expect(stats.snapshot.eventStreams == 5)
    }

    @Test("a parked stream whose client closes its connection is closed at once, not at its next keepalive (15 s), and its seat is free")
    func clientLeaves() throws {
        let stats = HTTPStats()
        let http = try server(stats: stats, perIdentity: 1)
        defer { http.stop() }
        var reader: StreamReader? = try StreamReader(port: http.port, "/v1/rooms/R/events", token: Self.member("eve"))
        #expect(reader?.read(seconds: 2) { $0.contains(": parley events") } == true)
        #expect(eventually { stats.snapshot.eventStreams == 1 })
        Thread.sleep(forTimeInterval: 0.2)  // parked by now: nothing to send
        reader = nil  // closes the socket
        let start = Date()
        #expect(eventually(seconds: 3) { stats.snapshot.eventStreams == 0 && stats.snapshot.connections == 0 },
                "still \(stats.snapshot.eventStreams) streams after \(Date().timeIntervalSince(start)) s")
        #expect(Date().timeIntervalSince(start) < 1.5)
        #expect(stats.snapshot.eventStreamsHungUp == 1)
        #expect(http.streams.seatsTaken.open == 0)
        // Her next stream (one allowed) opens: the seat came back.
        let next = try StreamReader(port: http.port, "/v1/rooms/R/events", token: Self.member("eve"))
        #expect(next.read(seconds: 2) { $0.contains(": parley events") })
    }

    @Test("a stream ends at its token's expiry with a last stream_closed event saying why, a member's and the backend's alike")
    func tokenExpires() throws {
        let stats = HTTPStats()
        let http = try server(stats: stats)
        defer { http.stop() }
        let member = try StreamReader(port: http.port, "/v1/rooms/R/events", token: Self.member("eve", expiresIn: 2))
        let backend = try StreamReader(port: http.port, "/v1/events", token: Self.admin(expiresIn: 2))
        let start = Date()
        for s in [member, backend] {
            s.read(seconds: 6) { _ in false }
            #expect(s.ended, "still open after \(Date().timeIntervalSince(start)) s: \(s.text)")
            #expect(s.text.contains("event: stream_closed\ndata: {") && s.text.contains("token_expired"), "\(s.text)")
        }
        #expect(member.text.contains(#""room":"R""#))
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(eventually { stats.snapshot.eventStreams == 0 })
        #expect(stats.snapshot.eventStreamsExpired == 2)
    }
}
