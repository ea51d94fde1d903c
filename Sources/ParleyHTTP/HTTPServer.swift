import CMicroHTTPD
import Foundation
import ParleyNet
import ParleyRelay
import ParleyRelayCore
import ParleyWire
import Synchronization

/// The HTTP API served by libmicrohttpd. One thread runs an epoll loop over every connection and never waits:
///
/// - headers in → `HTTPRouter.admit`: health checks, refusals and unknown paths are answered at once, before any
///   body is read;
/// - an authorised request → its body is read, then the connection is suspended and `HTTPRouter.route` runs on
///   `APIThreads` (it may wait for a worker); the answer is queued when the connection resumes;
/// - `GET /v1/events` → `EventStreams`, parked while there is nothing to send.
///
/// Each client address gets at most `HTTPLimits.connectionsPerAddress` connections, each connection a bounded
/// memory pool; a connection where no byte moves for `idleTimeoutSeconds`, or whose request headers take longer than
/// `headerTimeoutSeconds` (`HeaderDeadlines`), is closed. Owns the daemon and stops it in `stop()`/`deinit`.
public final class HTTPServer: @unchecked Sendable {
    // Invariant: `daemon` is set in `init` and cleared only in `stop()` (called once, from the owning thread);
    // everything the C callbacks touch is immutable or `Sendable`.
    private var daemon: OpaquePointer?
    let router: HTTPRouter
    let stats: HTTPStats
    let log: LogSink
    let streams: EventStreams
    let api: APIThreads
    let deadlines: HeaderDeadlines
    /// libmicrohttpd's messages come here (through `logger`), throttled.
    let libraryLog = Mutex(MessageThrottle(interval: 10_000_000_000))
    private let logger = UnsafeMutablePointer<parley_mhd_logger>.allocate(capacity: 1)
    /// The port bound (the one asked for, or the ephemeral one for port 0).
    public private(set) var port: UInt16 = 0

    /// Binds `address` (IPv4) and starts serving; throws a one-line message on failure.
    public init(address: PeerAddress, router: HTTPRouter, events: EventHub, limits: HTTPLimits = HTTPLimits(),
                stats: HTTPStats = HTTPStats(), log: LogSink) throws(ConfigError) {
        self.router = router
        self.stats = stats
        self.log = log
        streams = EventStreams(hub: events, limits: limits, stats: stats)
        api = APIThreads(count: limits.apiThreads, capacity: limits.apiQueueLength)
        deadlines = HeaderDeadlines(timeoutSeconds: limits.headerTimeoutSeconds, stats: stats)
        guard address.isIPv4 else {
            streams.stop()
            api.stop()
            deadlines.stop()
            throw ConfigError("http must be an IPv4 address for now")
        }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = address.port.bigEndian
        sin.sin_addr.s_addr = address.ipv4Value.bigEndian
        let cls = Unmanaged.passUnretained(self).toOpaque()
        logger.initialize(to: parley_mhd_logger(line: Self.libraryLine, cls: cls))
        let c = parley_mhd_limits(max_connections: UInt32(clamping: limits.maxConnections), per_address: UInt32(clamping: limits.connectionsPerAddress),
                                  idle_timeout_seconds: UInt32(clamping: limits.idleTimeoutSeconds), memory_bytes: limits.connectionMemoryBytes)
        let started = withUnsafePointer(to: &sin) { parley_mhd_start($0, Self.access, cls, Self.completed, Self.notify, logger, c) }
        guard let started else {
            streams.stop()
            api.stop()
            deadlines.stop()
            throw ConfigError("cannot serve HTTP on \(address) (port taken?)")
        }
        daemon = started
        port = parley_mhd_port(started)
    }

    /// Stops accepting and ends every request: queued API requests are answered 503, requests a worker is answering
    /// finish, event streams end; the answers get up to `drainSeconds` to go out, then the daemon stops (libmicrohttpd
    /// must not be stopped with a connection suspended).
    public func stop(drainSeconds: Double = 1) {
        guard let d = daemon else { return }
        let listener = MHD_quiesce_daemon(d)
        api.stop()
        streams.stop()
        let deadline = Clock.monotonicNanoseconds() + Int64(drainSeconds * 1e9)
        while stats.snapshot.connections > 0 && Clock.monotonicNanoseconds() < deadline { usleep(10_000) }
        deadlines.stop()  // before the daemon closes sockets: no sweep may shut one it closed without a notice
        MHD_stop_daemon(d)
        if listener >= 0 { close(listener) }  // MHD_quiesce_daemon hands it over, to close after the stop
        daemon = nil
    }

    deinit {
        stop()
        logger.deallocate()
    }

    // MARK: C callbacks

    /// Per-request state behind `con_cls`, from the headers to the answer.
    final class RequestState: @unchecked Sendable {
        // Invariant: libmicrohttpd's thread owns it, except `response`, which one API thread writes while the
        // connection is suspended and before it resumes it; libmicrohttpd reads it only after the resume.
        var request: HTTPRequest
        var tooLarge = false
        var isEventStream = false
        var response: HTTPResponse?
        init(_ request: HTTPRequest) { self.request = request }
    }

    /// A suspended connection, handed to the API thread that will resume it.
    struct SuspendedConnection: @unchecked Sendable {
        // Invariant: used only to resume the connection, once, by the job it was handed to.
        let pointer: OpaquePointer
    }

    static let access: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, conCls in
        let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
        guard let connection, let conCls, let uploadSize else { return MHD_NO }
        guard let raw = conCls.pointee else {
            // The headers are in: answer what needs no worker now, before reading a body.
            server.deadlines.headersIn(connection)
            let request = HTTPRequest(method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/",
                                      authorization: MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Authorization").map { String(cString: $0) },
                                      fromLoopback: parley_mhd_client_ipv4(connection) >> 24 == 127)
            let admission = server.router.admit(request, now: Int64(Clock.unixSeconds()))
            if case .answer(let response) = admission { return server.queue(response, on: connection) }
            let state = RequestState(request)
            conCls.pointee = Unmanaged.passRetained(state).toOpaque()
            if admission == .eventStream {
                state.isEventStream = true
                return server.streams.start(on: connection)
            }
            return MHD_YES
        }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            if !state.tooLarge, let uploadData {
                if state.request.body.count + uploadSize.pointee > HTTPRouter.maxBodyBytes {
                    state.tooLarge = true
                    state.request.body = []
                } else {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) {
                        state.request.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: uploadSize.pointee))
                    }
                }
            }
            uploadSize.pointee = 0
            return MHD_YES
        }
        if let response = state.response { return server.queue(response, on: connection) }
        if state.tooLarge {
            return server.queue(APIError(413, "body_too_large", "the body is larger than \(HTTPRouter.maxBodyBytes) bytes").response, on: connection)
        }
        // The request is complete: route it on an API thread, the connection suspended until the answer is in.
        guard server.api.reserve() else {
            server.stats.requestShed()
            return server.queue(APIError(503, "unavailable", "the API is busy; retry").response, on: connection)
        }
        MHD_suspend_connection(connection)
        let suspended = SuspendedConnection(pointer: connection)
        let router = server.router
        server.api.enqueue { stopping in
            state.response = stopping ? APIError(503, "unavailable", "the relay is stopping").response
                                      : router.route(state.request, now: Int64(Clock.unixSeconds()))
            MHD_resume_connection(suspended.pointer)
        }
        return MHD_YES
    }

    static let completed: MHD_RequestCompletedCallback = { cls, connection, conCls, toe in
        if let cls, let connection {
            Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().deadlines.requestEnded(connection, now: Clock.monotonicNanoseconds())
        }
        guard let conCls, let raw = conCls.pointee else { return }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
        conCls.pointee = nil
        if state.isEventStream, toe == MHD_TIMEOUT_REACHED, let cls {
            let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
            server.stats.eventStreamDropped()
            server.log.write(.info, "event stream closed: its reader took nothing for \(server.streams.limits.eventStreamStallSeconds) s")
        }
    }

    static let notify: MHD_NotifyConnectionCallback = { cls, connection, _, code in
        let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
        guard let connection else { return }
        if code == MHD_CONNECTION_STARTED {
            server.stats.connectionOpened()
            server.deadlines.opened(connection, socket: parley_mhd_socket(connection), now: Clock.monotonicNanoseconds())
        } else {
            // Called before libmicrohttpd closes the socket (HeaderDeadlines relies on it).
            server.deadlines.closed(connection)
            server.stats.connectionClosed()
        }
    }

    static let libraryLine: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?) -> Void = { cls, text in
        guard let cls, let text else { return }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        let message = String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
        if let line = server.libraryLog.withLock({ $0.admit(message, now: Clock.monotonicNanoseconds()) }) {
            server.log.write(.warning, "http: \(line)")
        }
    }

    func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let r = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), MHD_RESPMEM_MUST_COPY)
        }
        guard let r else { return MHD_NO }
        MHD_add_response_header(r, "Content-Type", response.contentType)
        let result = MHD_queue_response(connection, UInt32(response.status), r)
        MHD_destroy_response(r)
        return result
    }
}

// libmicrohttpd's closed enums import as Swift enums; these name the values used here.
let MHD_YES = MHD_Result(rawValue: 1)!
let MHD_NO = MHD_Result(rawValue: 0)!
let MHD_HEADER_KIND = MHD_ValueKind(rawValue: 1)!
let MHD_RESPMEM_MUST_COPY = MHD_ResponseMemoryMode(rawValue: 2)!  // PERSISTENT = 0, MUST_FREE = 1, MUST_COPY = 2
let MHD_TIMEOUT_REACHED = MHD_RequestTerminationCode(rawValue: 2)!  // COMPLETED_OK = 0, WITH_ERROR = 1, TIMEOUT_REACHED = 2
let MHD_CONNECTION_STARTED = MHD_ConnectionNotificationCode(rawValue: 0)!  // STARTED = 0, CLOSED = 1
let MHD_SIZE_UNKNOWN = UInt64.max
