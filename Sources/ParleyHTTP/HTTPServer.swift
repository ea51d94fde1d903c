import CMicroHTTPD
import Foundation
import ParleyNet
import ParleyRelay
import ParleyRelayCore
import ParleyWire
import Synchronization

/// The HTTP API served by libmicrohttpd: one thread per connection, requests handed to `HTTPRouter`,
/// `GET /v1/events` streamed from the relay's `EventHub`. Owns the daemon and stops it in `stop()`/`deinit`.
public final class HTTPServer: @unchecked Sendable {
    // Invariant: `daemon` is set in `init` and cleared only in `stop()` (called once, from the owning thread);
    // everything the C callbacks touch is immutable or `Sendable`.
    private var daemon: OpaquePointer?
    let router: HTTPRouter
    let events: EventHub
    let log: LogSink
    let stopping = Atomic<Bool>(false)
    /// The port bound (the one asked for, or the ephemeral one for port 0).
    public private(set) var port: UInt16 = 0
    /// Seconds between keepalive comments on an idle event stream.
    static let keepaliveSeconds = 15.0

    /// Binds `address` (IPv4) and starts serving; throws a one-line message on failure.
    public init(address: PeerAddress, router: HTTPRouter, events: EventHub, log: LogSink) throws(ConfigError) {
        self.router = router
        self.events = events
        self.log = log
        guard address.isIPv4 else { throw ConfigError("http must be an IPv4 address for now") }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = address.port.bigEndian
        sin.sin_addr.s_addr = address.ipv4Value.bigEndian
        let cls = Unmanaged.passUnretained(self).toOpaque()
        let started = withUnsafePointer(to: &sin) { parley_mhd_start($0, Self.access, cls, Self.completed, 1024) }
        guard let started else { throw ConfigError("cannot serve HTTP on \(address) (port taken?)") }
        daemon = started
        port = parley_mhd_port(started)
    }

    /// Stops accepting and waits for the connection threads (event streams end within a second).
    public func stop() {
        stopping.store(true, ordering: .releasing)
        events.wakeAll()
        if let d = daemon { MHD_stop_daemon(d) }
        daemon = nil
    }

    deinit { if daemon != nil { stop() } }

    // MARK: C callbacks

    /// Per-request state behind `con_cls`: the body so far.
    final class RequestState {
        var body: [UInt8] = []
        var tooLarge = false
    }

    static let access: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, conCls in
        let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
        guard let conCls, let uploadSize else { return MHD_NO }
        guard let raw = conCls.pointee else {
            conCls.pointee = Unmanaged.passRetained(RequestState()).toOpaque()
            return MHD_YES
        }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            if !state.tooLarge, let uploadData {
                if state.body.count + uploadSize.pointee > HTTPRouter.maxBodyBytes {
                    state.tooLarge = true
                    state.body = []
                } else {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) {
                        state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: uploadSize.pointee))
                    }
                }
            }
            uploadSize.pointee = 0
            return MHD_YES
        }
        let methodText = method.map { String(cString: $0) } ?? "GET"
        let path = url.map { String(cString: $0) } ?? "/"
        let auth = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Authorization").map { String(cString: $0) }
        let response: HTTPResponse
        if state.tooLarge {
            response = APIError(413, "body_too_large", "the body is larger than \(HTTPRouter.maxBodyBytes) bytes").response
        } else {
            response = server.router.route(HTTPRequest(method: methodText, path: path, authorization: auth, body: state.body),
                                           now: Int64(Clock.unixSeconds()))
        }
        if response.isEventStream { return server.startEventStream(connection) }
        return server.queue(response, on: connection)
    }

    static let completed: MHD_RequestCompletedCallback = { _, _, conCls, _ in
        guard let conCls, let raw = conCls.pointee else { return }
        Unmanaged<RequestState>.fromOpaque(raw).release()
        conCls.pointee = nil
    }

    func queue(_ response: HTTPResponse, on connection: OpaquePointer?) -> MHD_Result {
        let r = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), MHD_RESPMEM_MUST_COPY)
        }
        guard let r else { return MHD_NO }
        MHD_add_response_header(r, "Content-Type", response.contentType)
        let result = MHD_queue_response(connection, UInt32(response.status), r)
        MHD_destroy_response(r)
        return result
    }

    // MARK: Event stream

    /// One event-stream connection: where it is in the hub, and what is left of the chunk being sent.
    final class EventStream {
        let server: HTTPServer
        var sequence: UInt64
        var pending: [UInt8]
        var lastSent = Date()
        init(server: HTTPServer) {
            self.server = server
            sequence = server.events.head
            pending = Array(": parley events\n\n".utf8)
        }
    }

    func startEventStream(_ connection: OpaquePointer?) -> MHD_Result {
        let stream = Unmanaged.passRetained(EventStream(server: self)).toOpaque()
        guard let r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, Self.readEvents, stream, Self.freeStream) else {
            Unmanaged<EventStream>.fromOpaque(stream).release()
            return MHD_NO
        }
        MHD_add_response_header(r, "Content-Type", "text/event-stream")
        MHD_add_response_header(r, "Cache-Control", "no-cache")
        let result = MHD_queue_response(connection, 200, r)
        MHD_destroy_response(r)
        return result
    }

    /// Fills `buf` with `data: {json}\n\n` lines; blocks up to a second for new events; a comment every 15 s.
    static let readEvents: MHD_ContentReaderCallback = { cls, _, buf, max in
        let stream = Unmanaged<EventStream>.fromOpaque(cls!).takeUnretainedValue()
        if stream.server.stopping.load(ordering: .acquiring) { return parley_mhd_end_of_stream() }
        if stream.pending.isEmpty {
            let (events, next) = stream.server.events.events(from: stream.sequence, waitingUpTo: 1)
            stream.sequence = next
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            for e in events {
                guard let json = try? encoder.encode(API.Event(e)) else { continue }
                stream.pending += Array("event: \(e.kind.rawValue)\ndata: ".utf8) + Array(json) + [0x0A, 0x0A]
            }
            if stream.pending.isEmpty, Date().timeIntervalSince(stream.lastSent) >= keepaliveSeconds {
                stream.pending = Array(": keepalive\n\n".utf8)
            }
        }
        guard !stream.pending.isEmpty, let buf else { return 0 }
        let n = min(max, stream.pending.count)
        stream.pending.withUnsafeBytes { UnsafeMutableRawPointer(buf).copyMemory(from: $0.baseAddress!, byteCount: n) }
        stream.pending.removeFirst(n)
        stream.lastSent = Date()
        return n
    }

    static let freeStream: MHD_ContentReaderFreeCallback = { cls in
        if let cls { Unmanaged<EventStream>.fromOpaque(cls).release() }
    }
}

// libmicrohttpd's closed enums import as Swift enums; these name the values used here.
let MHD_YES = MHD_Result(rawValue: 1)!
let MHD_NO = MHD_Result(rawValue: 0)!
let MHD_HEADER_KIND = MHD_ValueKind(rawValue: 1)!
let MHD_RESPMEM_MUST_COPY = MHD_ResponseMemoryMode(rawValue: 2)!  // PERSISTENT = 0, MUST_FREE = 1, MUST_COPY = 2
let MHD_SIZE_UNKNOWN = UInt64.max
