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
/// - `GET /v1/events` (and a room's, and a page's presence stream) → `EventStreams`, parked while there is nothing to
///   send, within its identity's and the relay's bounds on streams (429/503 and the connection closed beyond them);
/// - an attachment upload or download → as an authorised request, holding one of `AttachmentPlaces`' few places while
///   it lasts (503 at once when none is free); an upload's body may be up to `attachment_max_bytes` instead of
///   `HTTPRouter.maxBodyBytes`, and must arrive within `HTTPLimits.attachmentUploadSeconds`.
///
/// Each client address gets at most `HTTPLimits.connectionsPerAddress` connections, each connection a bounded
/// memory pool; a connection where no byte moves for `idleTimeoutSeconds`, or whose request headers take longer than
/// `headerTimeoutSeconds` (`HeaderDeadlines`), is closed. Owns the daemon and stops it in `stop()`/`deinit`.
///
/// Given `HTTPTLSFiles`, it serves HTTPS instead (libmicrohttpd's own TLS, GnuTLS on Debian; TLS 1.3 and 1.2), on the
/// same thread and with the same limits; plain HTTP to that port gets no answer.
public final class HTTPServer: @unchecked Sendable {
    // Invariant: `daemon` is set in `init` and cleared only in `stop()` (called once, from the owning thread);
    // everything the C callbacks touch is immutable or `Sendable`.
    private var daemon: OpaquePointer?
    /// The router in force: a reload replaces it (`replaceRouter`) without touching connections.
    var router: HTTPRouter { routerInForce.withLock { $0 } }
    private let routerInForce: Mutex<HTTPRouter>
    /// Where it serves, and the hub its event streams read (a hand-over serves the same).
    private let address: PeerAddress
    private let hub: EventHub
    let stats: HTTPStats
    let log: LogSink
    let streams: EventStreams
    let api: APIThreads
    let deadlines: HeaderDeadlines
    /// Attachments held in memory at once.
    let places: AttachmentPlaces
    /// Nanoseconds an admitted upload's body may take to arrive.
    let uploadNanoseconds: Int64
    /// libmicrohttpd's messages come here (through `logger`), throttled.
    let libraryLog = Mutex(MessageThrottle(interval: 10_000_000_000))
    private let logger = UnsafeMutablePointer<parley_mhd_logger>.allocate(capacity: 1)
    /// The port bound (the one asked for, or the ephemeral one for port 0).
    public private(set) var port: UInt16 = 0
    /// The certificate and key handed to libmicrohttpd, kept until the daemon stops; nil for plain HTTP.
    private let pem: PEMStrings?
    /// "https" when serving TLS, else "http" (the ready line says which).
    public var scheme: String { pem == nil ? "http" : "https" }

    /// Binds `address` (IPv4) and starts serving; throws a one-line message on failure.
    /// With `tls`, HTTPS (check the files with `checkTLS` first: a refusal here reads as a failure to start).
    /// `listenSocket` ≥ 0: serves on that listening socket instead of binding (`handOver`), and owns it.
    public init(address: PeerAddress, router: HTTPRouter, events: EventHub, limits: HTTPLimits = HTTPLimits(),
                stats: HTTPStats = HTTPStats(), log: LogSink, tls: HTTPTLSFiles? = nil,
                listenSocket: Int32 = -1) throws(ConfigError) {
        pem = tls.map(PEMStrings.init)
        routerInForce = Mutex(router)
        self.address = address
        hub = events
        self.stats = stats
        self.log = log
        streams = EventStreams(hub: events, limits: limits, stats: stats)
        api = APIThreads(count: limits.apiThreads, capacity: limits.apiQueueLength)
        deadlines = HeaderDeadlines(timeoutSeconds: limits.headerTimeoutSeconds, stats: stats)
        places = AttachmentPlaces(uploads: limits.attachmentUploads, downloads: limits.attachmentDownloads)
        uploadNanoseconds = Int64(limits.attachmentUploadSeconds) * 1_000_000_000
        // IPv4 as a sockaddr_in; IPv6 as a sockaddr_in6, and the IPv6 wildcard dual stack (IPv4 clients as mapped).
        var storage = sockaddr_storage()
        let ipv6 = !address.isIPv4
        _ = withUnsafeMutableBytes(of: &storage) { address.write(to: $0.baseAddress!, ipv4Socket: !ipv6) }
        let cls = Unmanaged.passUnretained(self).toOpaque()
        logger.initialize(to: parley_mhd_logger(line: Self.libraryLine, cls: cls))
        let c = parley_mhd_limits(max_connections: UInt32(clamping: limits.maxConnections), per_address: UInt32(clamping: limits.connectionsPerAddress),
                                  idle_timeout_seconds: UInt32(clamping: limits.idleTimeoutSeconds), memory_bytes: limits.connectionMemoryBytes)
        let started = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                parley_mhd_start($0, ipv6 ? 1 : 0, ipv6 && address.isWildcard ? 1 : 0, listenSocket, Self.access, cls,
                                 Self.completed,
                                 Self.notify, logger, c, pem?.certificate, pem?.key)
            }
        }
        guard let started else {
            streams.stop()
            api.stop()
            deadlines.stop()
            throw ConfigError(pem == nil ? "cannot serve HTTP on \(address) (port taken?)"
                                         : "cannot serve HTTPS on \(address) (port taken? the log says more)")
        }
        daemon = started
        port = listenSocket >= 0 ? address.port : parley_mhd_port(started)
    }

    /// Replaces the router (a reload: new keys, limits, TURN servers): requests admitted from now on use it.
    public func replaceRouter(_ router: HTTPRouter) { routerInForce.withLock { $0 = router } }

    /// A reload that needs a new daemon (a renewed certificate, new connection limits): starts one serving the same
    /// listening socket with `tls`, `limits` and `router`, then stops this one (its requests answered, its event
    /// streams ended:
    /// their clients reconnect to the new one). No connection attempt is refused meanwhile: the socket never closes,
    /// and both daemons accept from it until this one is quiesced. Throws, leaving this one serving, when the new one
    /// cannot start.
    public func handOver(tls: HTTPTLSFiles?, limits: HTTPLimits, router: HTTPRouter) throws(ConfigError) -> HTTPServer {
        guard let d = daemon else { throw ConfigError("the HTTP server has stopped") }
        let listener = parley_mhd_listen_fd(d)
        let copy = listener >= 0 ? dup(listener) : -1
        guard copy >= 0 else {
            throw ConfigError("cannot hand the HTTP socket over (\(String(cString: strerror(errno))))")
        }
        let next: HTTPServer
        do {
            var at = address
            at.port = port
            next = try HTTPServer(address: at, router: router, events: hub, limits: limits, stats: stats, log: log,
                tls: tls,
                                  listenSocket: copy)
        } catch {
            close(copy)
            throw error
        }
        stop()
        return next
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
        // This daemon's connections (the stats count those of a successor too, after a hand-over).
        while parley_mhd_connections(d) > 0 && Clock.monotonicNanoseconds() < deadline { usleep(10_000) }
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
        /// The longest body read; beyond it the rest is dropped and 413 answered (`tooLargeResponse`, or the usual one).
        var bodyLimit = HTTPRouter.maxBodyBytes
        var tooLarge = false
        var tooLargeResponse: HTTPResponse?
        var isEventStream = false
        var response: HTTPResponse?
        /// The attachment place this request holds, given back when it ends (or when its body is dropped).
        var place: HTTPRouter.AttachmentTransfer?
        /// Monotonic nanoseconds by which an upload's body must be in.
        var bodyDeadline: Int64?
        init(_ request: HTTPRequest) { self.request = request }
    }

    /// A suspended connection, handed to the API thread that will resume it.
    struct SuspendedConnection: @unchecked Sendable {
        // Invariant: used only to resume the connection, once, by the job it was handed to.
        let pointer: OpaquePointer
    }

    /// The client's address (IPv4 clients of a dual-stack server as plain IPv4), or nil.
    static func client(_ connection: OpaquePointer) -> PeerAddress? {
        var storage = sockaddr_storage()
        guard parley_mhd_client_address(connection, &storage) == 1 else { return nil }
        return withUnsafeBytes(of: &storage) { PeerAddress(storage: $0.baseAddress!) }
    }

    /// The query arguments the routes read (`HTTPRequest.queryKeys`).
    static func query(_ connection: OpaquePointer) -> [String: String] {
        var query: [String: String] = [:]
        for key in HTTPRequest.queryKeys {
            query[key] = parley_mhd_query_value(connection, key).map { String(cString: $0) }
        }
        return query
    }

    static let access: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, conCls in
        let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
        guard let connection, let conCls, let uploadSize else { return MHD_NO }
        guard let raw = conCls.pointee else {
            // The headers are in: answer what needs no worker now, before reading a body.
            server.deadlines.headersIn(connection)
            let request = HTTPRequest(method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/",
                                      authorization: MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Authorization").map { String(cString: $0) },
                                      client: HTTPServer.client(connection),
                                      contentType: MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Content-Type").map { String(cString: $0) },
                                      query: HTTPServer.query(connection),
                                      contentLength: MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Content-Length").flatMap { UInt64(String(cString: $0)) })
            let admission = server.router.admit(request, now: Int64(Clock.unixSeconds()))
            if case .answer(let response) = admission { return server.queue(response, on: connection) }
            if case .attachment(let kind, _) = admission, !server.places.take(kind) {
                server.stats.requestShed()
                let what = kind == .upload ? "uploads" : "downloads"
                return server.queue(HTTPRouter.withCORS(APIError(503, "unavailable", "too many attachment \(what) at once (\(server.places.capacity(kind))); retry").response),
                                    on: connection)
            }
            let holder: StreamHolder? = switch admission {
            case .eventStream(_, let holder), .presenceStream(let holder, _): holder
            default: nil
            }
            if let holder, let refusal = server.streams.seat(holder) {
                // Beyond its identity's streams or the relay's: refused, and the connection closed after the answer.
                var response = refusal.response
                response.headers["Connection"] = "close"
                if case .eventStream(nil, _) = admission {} else { response = HTTPRouter.withCORS(response) }
                return server.queue(response, on: connection)
            }
            let state = RequestState(request)
            conCls.pointee = Unmanaged.passRetained(state).toOpaque()
            switch admission {
            case .eventStream(let room, let holder):
                state.isEventStream = true
                return server.streams.start(on: connection, holder: holder, scope: room.map { .room($0) } ?? .all)
            case .presenceStream(let holder, let name):
                // The page goes online, and its stream reads from the hub's head as it was before: it sees the
                // worker's `presence_online` whenever that is published. The close (when the stream ends, or at once
                // if it cannot start) follows the open through the same inbox. Nothing here waits.
                state.isEventStream = true
                let stream = UInt64.random(in: 1 ... .max)
                let backend = server.router.backend
                let head = server.streams.hub.head
                backend.post(.openWebPresence(stream: stream, identity: holder.identity, name: name))
                return server.streams.start(on: connection, holder: holder, scope: .recipient(stream), from: head) {
                    backend.post(.closeWebPresence(stream: stream, identity: nil))
                }
            case .attachment(let kind, let maxBodyBytes):
                // The place taken above is given back when the request ends (`completed`).
                state.place = kind
                state.bodyLimit = maxBodyBytes
                state.tooLargeResponse = HTTPRouter.withCORS(APIError(413, "body_too_large", kind == .upload
                    ? "the attachment is larger than \(maxBodyBytes) bytes (attachment_max_bytes)" : "a download takes no body").response)
                if kind == .upload {
                    state.bodyDeadline = Clock.monotonicNanoseconds() + server.uploadNanoseconds
                    // Admission refused a longer declared length: this reserves at most the limit, in a bounded place.
                    if let length = request.contentLength { state.request.body.reserveCapacity(Int(min(length, UInt64(maxBodyBytes)))) }
                }
            default: break
            }
            return MHD_YES
        }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            if let deadline = state.bodyDeadline, Clock.monotonicNanoseconds() > deadline {
                // Too slow to keep an upload place, or still sending what will be dropped: cut off (libmicrohttpd 0.9.75
                // cannot queue an answer in the middle of a body, so the client gets no status).
                return MHD_NO
            }
            if !state.tooLarge, let uploadData {
                if state.request.body.count + uploadSize.pointee > state.bodyLimit {
                    state.tooLarge = true
                    state.request.body = []  // the memory goes back now; the rest of the body is read and dropped
                    if let kind = state.place {
                        server.places.give(kind)
                        state.place = nil
                    }
                } else {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) {
                        state.request.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: uploadSize.pointee))
                    }
                }
            }
            uploadSize.pointee = 0
            return MHD_YES
        }
        if let response = state.response {
            state.response = nil  // libmicrohttpd copies it: an attachment is not held twice
            return server.queue(response, on: connection)
        }
        if state.tooLarge {
            return server.queue(state.tooLargeResponse ?? APIError(413, "body_too_large", "the body is larger than \(HTTPRouter.maxBodyBytes) bytes").response,
                                on: connection)
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
        if let kind = state.place, let cls { Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().places.give(kind) }
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
        let level = libraryLineLevel(message)
        guard level >= server.log.threshold else { return }
        if let line = server.libraryLog.withLock({ $0.admit(message, now: Clock.monotonicNanoseconds()) }) {
            server.log.write(level, "http: \(line)")
        }
    }

    /// How loud a libmicrohttpd line is: a warning, except the line it writes when an event stream ends because its
    /// reader went away (a browser closed the page or its `EventSource`): `EventStreams` ends such a stream with an
    /// error so that libmicrohttpd closes its connection at once, and libmicrohttpd calls that an application error.
    /// Nothing went wrong: debug.
    static func libraryLineLevel(_ message: String) -> LogLevel {
        message.hasPrefix("Closing connection (application error generating response)") ? .debug : .warning
    }

    func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        if let path = response.file {
            // libmicrohttpd sends the file from its descriptor (and closes it); the file may still be growing (a
            // recording that runs): the answer is what is on disk now.
            let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            var info = stat()
            guard fd >= 0, fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                  let r = MHD_create_response_from_fd(Int(info.st_size), fd) else {
                if fd >= 0 { close(fd) }
                return queue(APIError(404, "not_found", "no such recording file").response, on: connection)
            }
            if !response.contentType.isEmpty { MHD_add_response_header(r, "Content-Type", response.contentType) }
            for (name, value) in response.headers { MHD_add_response_header(r, name, value) }
            let result = MHD_queue_response(connection, UInt32(response.status), r)
            MHD_destroy_response(r)
            return result
        }
        let r = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), MHD_RESPMEM_MUST_COPY)
        }
        guard let r else { return MHD_NO }
        if !response.contentType.isEmpty { MHD_add_response_header(r, "Content-Type", response.contentType) }
        for (name, value) in response.headers { MHD_add_response_header(r, name, value) }
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
