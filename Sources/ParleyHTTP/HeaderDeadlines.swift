import Foundation
import ParleyNet

/// The connections still sending a request's headers, and since when. libmicrohttpd's own timeout closes a
/// connection only when no byte moved for `idle_timeout_s`, so a client sending its headers a byte every few seconds
/// (a slowloris) would keep its connection for ever. Every half second a sweep shuts down the socket of each one that
/// took longer than `http_header_timeout_s`; libmicrohttpd then reads the end of the stream and closes it as usual.
///
///     connection opened ──▶ waiting since t0 ──(headers in)──▶ not waiting ──(answer sent, kept alive)──▶ waiting since t1
///                                  └──(now − t0 > timeout: sweep)──▶ shutdown(socket) ──▶ libmicrohttpd closes it
///
/// libmicrohttpd notifies a close (NOTIFY_CLOSED) on its thread before it closes the socket, and the entry is removed
/// then, under the lock the sweep holds while it shuts sockets down: a socket number is never shut after its reuse.
final class HeaderDeadlines: @unchecked Sendable {
    // Invariant: `connections` changes only under `lock`; the sweep shuts sockets down only while holding it.
    struct Entry {
        let socket: Int32
        var waitingSince: Int64?
    }
    private let lock = NSLock()
    private var connections: [OpaquePointer: Entry] = [:]
    /// Nanoseconds a connection may take to send one request's headers.
    let timeout: Int64
    private let stats: HTTPStats
    private let stopRequested = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    /// Deadlines of `timeoutSeconds`; `sweeping` starts the thread that enforces them (tests sweep by hand).
    init(timeoutSeconds: Int, stats: HTTPStats, sweeping: Bool = true) {
        timeout = Int64(timeoutSeconds) * 1_000_000_000
        self.stats = stats
        guard sweeping else {
            stopped.signal()
            return
        }
        let t = Thread { [self] in
            while stopRequested.wait(timeout: .now() + 0.5) == .timedOut {
                sweep(now: Clock.monotonicNanoseconds()) { shutdown($0, Int32(SHUT_RDWR)) }
            }
            stopped.signal()
        }
        t.name = "parley-http-deadlines"
        t.start()
    }

    /// Ends the sweeping thread; returns once it has.
    func stop() {
        stopRequested.signal()
        stopped.wait()
    }

    /// A connection was accepted: its first request's headers are due.
    func opened(_ connection: OpaquePointer, socket: Int32, now: Int64) {
        lock.withLock { connections[connection] = Entry(socket: socket, waitingSince: now) }
    }

    /// A request's headers are in.
    func headersIn(_ connection: OpaquePointer) {
        lock.withLock { connections[connection]?.waitingSince = nil }
    }

    /// A request ended; if the connection stays open, the next request's headers are due.
    func requestEnded(_ connection: OpaquePointer, now: Int64) {
        lock.withLock { connections[connection]?.waitingSince = now }
    }

    /// The connection is closing (its socket is still open).
    func closed(_ connection: OpaquePointer) {
        lock.withLock { connections[connection] = nil }
    }

    /// Calls `shut` with the socket of every connection whose headers are overdue (once each); returns how many.
    @discardableResult
    func sweep(now: Int64, shut: (Int32) -> Void) -> Int {
        lock.withLock {
            var late = 0
            for (c, e) in connections {
                guard let since = e.waitingSince, now - since > timeout else { continue }
                shut(e.socket)
                connections[c]?.waitingSince = nil
                late += 1
            }
            for _ in 0..<late { stats.headerTimedOut() }
            return late
        }
    }

    /// Connections tracked (open and not yet notified closed).
    var count: Int { lock.withLock { connections.count } }
}
