import Foundation
import Glibc
import ParleyAuth
@testable import ParleyHTTP
import ParleyWire
import ParleyRelay
import ParleyRelayCore
import Synchronization
import Testing

/// A backend whose reads and commands wait at a gate, as a worker that does not answer does (the real one gives up
/// after 0.5 s for snapshots, 2 s for commands); `waitLimit` bounds the wait here too.
final class GatedBackend: APIBackend, Sendable {
    let gate = DispatchSemaphore(value: 0)
    let waiting = Atomic<Int>(0)
    let waitLimit: Double
    init(waitLimit: Double) { self.waitLimit = waitLimit }
    private func pass() {
        waiting.add(1, ordering: .relaxed)
        if gate.wait(timeout: .now() + waitLimit) == .success { gate.signal() }
        waiting.subtract(1, ordering: .relaxed)
    }
    func snapshots() -> [WorkerSnapshot] {
        pass()
        return [WorkerSnapshot(worker: 0)]
    }
    func execute(_ command: AdminCommand) -> AdminResult? {
        pass()
        return .ok
    }
    /// Lets every waiter (and every later one) through.
    func open() { gate.signal() }
}

/// One request on its own connection (`Connection: close`), its answer read to the end.
final class OneRequest {
    let fd: Int32
    init(port: UInt16, _ method: String, _ path: String, token: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let ok = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard ok == 0 else { throw POSIXError(.ECONNREFUSED) }
        let auth = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        let bytes = Array("\(method) \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\(auth)Content-Length: 0\r\n\r\n".utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// The status of the answer, 0 when none came within `seconds`.
    func status(within seconds: Double) -> Int {
        let deadline = Date().addingTimeInterval(seconds)
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while deadline.timeIntervalSinceNow > 0 {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(deadline.timeIntervalSinceNow * 1000) + 1) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buffer[..<n]
        }
        return Int(String(decoding: out, as: UTF8.self).split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    deinit { close(fd) }
}

@Suite("HTTP server: requests waiting on a worker hold neither the event loop nor shutdown")
struct HTTPServerTests {
    static let token = RouterTests.token(admin: true)

    func server(_ backend: GatedBackend, stats: HTTPStats, threads: Int = 2, queue: Int = 4) throws -> HTTPServer {
        var limits = HTTPLimits()
        limits.apiThreads = threads
        limits.apiQueueLength = queue
        let router = HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]), signer: nil,
                                config: RelayCoreConfig(), httpStats: stats)
        return try HTTPServer(address: PeerAddress(ipv4: 127, 0, 0, 1, port: 0), router: router, events: EventHub(),
                              limits: limits, stats: stats, log: MemoryLogSink(threshold: .error))
    }

    @Test("while every API thread waits on a stuck worker and the queue is full: /healthz answers at once, one more request is shed with 503, the rest answer once the worker does")
    func stuckWorker() throws {
        let backend = GatedBackend(waitLimit: 10)
        let stats = HTTPStats()
        let http = try server(backend, stats: stats, threads: 2, queue: 4)
        defer { http.stop() }
        // Four requests take the four places: two wait in the backend, two in the queue.
        let stuck = try (0..<4).map { _ in try OneRequest(port: http.port, "GET", "/v1/rooms", token: Self.token) }
        #expect(eventually { backend.waiting.load(ordering: .relaxed) == 2 })
        let start = Date()
        #expect(try OneRequest(port: http.port, "GET", "/healthz").status(within: 1) == 200)
        #expect(Date().timeIntervalSince(start) < 0.5)
        #expect(try OneRequest(port: http.port, "POST", "/v1/rooms", token: Self.token).status(within: 1) == 503)
        #expect(stats.snapshot.requestsShed == 1)
        // An unauthorised request never takes a place.
        #expect(try OneRequest(port: http.port, "GET", "/v1/rooms").status(within: 1) == 401)
        backend.open()
        for r in stuck { #expect(r.status(within: 2) == 200) }
    }

    @Test("stop() with requests waiting on a worker and in the queue, and an event stream open: each gets an end, and stop returns")
    func stopWhileWaiting() throws {
        let backend = GatedBackend(waitLimit: 0.5)
        let stats = HTTPStats()
        let http = try server(backend, stats: stats, threads: 1, queue: 3)
        let waiting = try (0..<3).map { _ in try OneRequest(port: http.port, "GET", "/v1/rooms", token: Self.token) }
        #expect(eventually { backend.waiting.load(ordering: .relaxed) == 1 })
        let stream = try OneRequest(port: http.port, "GET", "/v1/events", token: Self.token)
        #expect(eventually { stats.snapshot.eventStreams == 1 })  // libmicrohttpd takes connections in order: all four are in
        let start = Date()
        http.stop()
        #expect(Date().timeIntervalSince(start) < 2)
        #expect(throws: (any Error).self) { try OneRequest(port: http.port, "GET", "/healthz") }  // no longer listening
        // The one in the backend answers once the backend gives up; the queued ones are told the relay stops.
        #expect(waiting.map { $0.status(within: 1) }.sorted() == [200, 503, 503])
        #expect(stream.status(within: 1) == 200)
        #expect(stats.snapshot.eventStreams == 0)
    }

    @Test("a reader closing its event stream (a browser leaving the page) is normal: no warning, a debug line")
    func eventStreamClosedByItsReader() throws {
        let stats = HTTPStats()
        let log = MemoryLogSink(threshold: .debug)
        let router = HTTPRouter(backend: GatedBackend(waitLimit: 0.1),
                                verifier: TokenVerifier(keys: ["k": RouterTests.secret]), signer: nil,
                                config: RelayCoreConfig(), httpStats: stats)
        let http = try HTTPServer(address: PeerAddress(ipv4: 127, 0, 0, 1, port: 0), router: router, events: EventHub(),
                                  stats: stats, log: log)
        defer { http.stop() }
        var stream: OneRequest? = try OneRequest(port: http.port, "GET", "/v1/events", token: Self.token)
        #expect(eventually { stats.snapshot.eventStreams == 1 })
        Thread.sleep(forTimeInterval: 0.1)  // parked, its socket watched
        stream = nil  // closes the socket
        #expect(stream == nil && eventually { stats.snapshot.eventStreams == 0 })
        #expect(eventually { log.entries.contains { $0.line.contains("application error") } }, "\(log.lines)")
        #expect(log.entries.allSatisfy { $0.level < .warning }, "\(log.entries)")
    }

    func eventually(seconds: Double = 3, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition()
    }
}

@Suite("HTTP server pieces: libmicrohttpd's log throttle, header deadlines")
struct HTTPServerPartsTests {
    @Test("a message repeated within the interval is held back, then written once with the count held")
    func throttle() {
        var t = MessageThrottle(interval: 10)
        #expect(t.admit("limit reached", now: 0) == "limit reached")
        #expect(t.admit("limit reached", now: 5) == nil)
        #expect(t.admit("limit reached", now: 9) == nil)
        #expect(t.admit("other", now: 9) == "other")
        #expect(t.admit("limit reached", now: 10) == "limit reached (and 2 more like it)")
        #expect(t.admit("limit reached", now: 25) == "limit reached")
    }

    @Test("the throttle remembers a bounded number of texts; new texts beyond them wait until old ones expire")
    func throttleBound() {
        var t = MessageThrottle(interval: 10)
        for k in 0..<MessageThrottle.capacity { #expect(t.admit("m\(k)", now: 0) != nil) }
        #expect(t.admit("one too many", now: 1) == nil)
        #expect(t.admit("one too many", now: 10) == "one too many")
    }

    @Test("header deadlines: a connection still sending headers past the timeout is shut once; one whose headers came, or that closed, is not")
    func headerDeadlines() {
        let stats = HTTPStats()
        let d = HeaderDeadlines(timeoutSeconds: 2, stats: stats, sweeping: false)
        defer { d.stop() }
        let (a, b, c, kept) = (OpaquePointer(bitPattern: 0x10)!, OpaquePointer(bitPattern: 0x20)!, OpaquePointer(bitPattern: 0x30)!,
                               OpaquePointer(bitPattern: 0x40)!)
        d.opened(a, socket: 10, now: 0)  // sends headers for ever
        d.opened(b, socket: 11, now: 0)
        d.headersIn(b)  // its request is being answered: no deadline
        d.opened(c, socket: 12, now: 0)
        d.closed(c)  // gone: its socket number may be reused, it must never be shut
        d.opened(kept, socket: 13, now: 0)
        d.headersIn(kept)
        d.requestEnded(kept, now: 1_500_000_000)  // answered and kept alive: the next headers are due 2 s from now
        var shut: [Int32] = []
        #expect(d.sweep(now: 2_000_000_000) { shut.append($0) } == 0)  // exactly at the deadline: not late yet
        #expect(d.sweep(now: 2_000_000_001) { shut.append($0) } == 1)
        #expect(shut == [10])
        #expect(d.sweep(now: 3_000_000_000) { shut.append($0) } == 0)  // once only
        #expect(d.sweep(now: 3_500_000_001) { shut.append($0) } == 1)
        #expect(shut == [10, 13])
        #expect(stats.snapshot.headerTimeouts == 2)
        d.closed(a); d.closed(b); d.closed(kept)
        #expect(d.count == 0)
    }
}
