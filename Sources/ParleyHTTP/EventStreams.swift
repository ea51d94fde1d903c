import CMicroHTTPD
import Foundation
import ParleyNet
import ParleyRelay
import ParleyRelayCore

/// The event streams (`GET /v1/events`) of one HTTP server. A stream's connection is parked — suspended in
/// libmicrohttpd — whenever it has nothing to send; one thread waits on the `EventHub` and wakes the parked streams
/// when an event is published, a keepalive is due, or the server stops. No libmicrohttpd callback ever waits:
///
///     reader callback (libmicrohttpd's thread)      waker thread
///     ─────────────────────────────────────────     ───────────────────────────────────────────
///     bytes pending → copy them out                 head = hub.wait(past: seen, 1 s)
///     none → take ≤ 64 events from the hub          lock: take the parked streams whose events came
///     still none → park: lock, suspend, add           (head past theirs) or whose keepalive is due
///       (not if the hub moved meanwhile)            resume each (each parked stream is resumed once)
///
/// A parked stream runs no libmicrohttpd timer, so the idle timeout never closes a stream waiting for events. Once
/// woken with bytes to send, its own timeout (`HTTPLimits.eventStreamStallSeconds`) runs while its reader takes
/// none: then libmicrohttpd closes it and the server counts it. Its kernel send buffer is capped
/// (`eventStreamSendBufferBytes`) and it holds at most one batch of encoded events, so a reader that stops reading
/// costs a bounded amount until it is closed.
final class EventStreams: @unchecked Sendable {
    // Invariant: `parked` and `closing` change only under `lock`; a stream is in `parked` exactly from the moment
    // `park` suspended its connection until one caller removed it and resumes it.
    let hub: EventHub
    let limits: HTTPLimits
    let stats: HTTPStats
    private let lock = NSLock()
    private var parked: [ObjectIdentifier: EventStream] = [:]
    private var closing = false
    private let wakerDone = DispatchSemaphore(value: 0)
    /// Nanoseconds between keepalive comments on a stream with no events.
    static let keepaliveNanoseconds: Int64 = 15_000_000_000
    /// Events encoded per fill of a stream's buffer.
    static let eventsPerFill = 64

    init(hub: EventHub, limits: HTTPLimits, stats: HTTPStats) {
        self.hub = hub
        self.limits = limits
        self.stats = stats
        let t = Thread { [self] in wake() }
        t.name = "parley-events"
        t.start()
    }

    /// Which events a stream shows.
    enum Scope: Equatable {
        /// Every public event (the backend's `/v1/events`).
        case all
        /// One room's public events (a member's).
        case room(String)
        /// The private events of one web page's presence stream (`RelayEvent.recipient`).
        case recipient(UInt64)

        func shows(_ e: RelayEvent) -> Bool {
            switch self {
            case .all: e.recipient == 0
            case .room(let room): e.recipient == 0 && e.room == room
            case .recipient(let id): e.recipient == id
            }
        }
    }

    /// Queues the streaming response on `connection`: its own stall timeout and send buffer, the reader below.
    /// `onClose` runs once when the stream ends, on libmicrohttpd's thread (it must not wait).
    /// Its first event is the hub's `sequence` (default: the next one published).
    func start(on connection: OpaquePointer, scope: Scope = .all, from sequence: UInt64? = nil,
               onClose: (@Sendable () -> Void)? = nil) -> MHD_Result {
        let stream = EventStream(streams: self, connection: connection, sequence: sequence ?? hub.head, scope: scope,
                                 now: Clock.monotonicNanoseconds())
        stream.onClose = onClose
        let cls = Unmanaged.passRetained(stream).toOpaque()
        stats.eventStreamOpened()
        guard let r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, Self.read, cls, Self.free) else {
            Self.free(cls)
            return MHD_NO
        }
        MHD_add_response_header(r, "Content-Type", "text/event-stream")
        MHD_add_response_header(r, "Cache-Control", "no-cache")
        if scope != .all { MHD_add_response_header(r, "Access-Control-Allow-Origin", "*") }  // a member's stream serves pages
        parley_mhd_set_timeout(connection, UInt32(limits.eventStreamStallSeconds))
        let fd = parley_mhd_socket(connection)
        var size = Int32(clamping: limits.eventStreamSendBufferBytes)
        if fd >= 0 { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        let result = MHD_queue_response(connection, 200, r)
        MHD_destroy_response(r)
        return result
    }

    /// Wakes every parked stream (they end their response) and stops the waker; returns once it has. Called before
    /// the daemon stops: libmicrohttpd must not be stopped with a connection suspended.
    func stop() {
        let all = lock.withLock {
            closing = true
            defer { parked.removeAll() }
            return Array(parked.values)
        }
        for s in all { MHD_resume_connection(s.connection) }
        hub.wakeAll()
        wakerDone.wait()
    }

    var isClosing: Bool { lock.withLock { closing } }

    // MARK: libmicrohttpd's thread

    /// Suspends `stream`'s connection and parks it, unless the hub moved past it meanwhile or the server stops;
    /// returns whether it did.
    private func park(_ stream: EventStream) -> Bool {
        lock.withLock {
            guard !closing, hub.head <= stream.sequence else { return false }
            stream.keepaliveDue = stream.lastSent + Self.keepaliveNanoseconds
            MHD_suspend_connection(stream.connection)
            parked[ObjectIdentifier(stream)] = stream
            return true
        }
    }

    /// Fills `buf` with what `stream` has to send: `event: TYPE\ndata: {json}\n\n` lines, or a keepalive comment
    /// every 15 s; parks the stream (returning 0) when there is nothing.
    private func fill(_ stream: EventStream, _ buf: UnsafeMutablePointer<CChar>?, _ max: Int) -> Int {
        if isClosing { return parley_mhd_end_of_stream() }
        let now = Clock.monotonicNanoseconds()
        if stream.sent == stream.pending.count {
            stream.pending.removeAll(keepingCapacity: true)
            stream.sent = 0
            let (events, next) = hub.events(from: stream.sequence, limit: Self.eventsPerFill)
            stream.sequence = next
            for e in events where stream.scope.shows(e) {
                guard let json = try? stream.encoder.encode(API.Event(e)) else { continue }
                stream.pending += Array("event: \(e.kind.rawValue)\ndata: ".utf8) + Array(json) + [0x0A, 0x0A]
            }
            if stream.pending.isEmpty, now - stream.lastSent >= Self.keepaliveNanoseconds {
                stream.pending = Array(": keepalive\n\n".utf8)
            }
            if stream.pending.isEmpty {
                if park(stream) { return 0 }
                // An event came since the read above (libmicrohttpd calls again at once), or the server stops.
                return isClosing ? parley_mhd_end_of_stream() : 0
            }
        }
        guard let buf else { return 0 }
        let n = min(max, stream.pending.count - stream.sent)
        stream.pending.withUnsafeBytes { UnsafeMutableRawPointer(buf).copyMemory(from: $0.baseAddress! + stream.sent, byteCount: n) }
        stream.sent += n
        stream.lastSent = now
        return n
    }

    private func closed(_ stream: EventStream) {
        lock.withLock { parked[ObjectIdentifier(stream)] = nil }
        stats.eventStreamClosed()
        stream.onClose?()
    }

    static let read: MHD_ContentReaderCallback = { cls, _, buf, max in
        let stream = Unmanaged<EventStream>.fromOpaque(cls!).takeUnretainedValue()
        return stream.streams.fill(stream, buf, max)
    }

    static let free: MHD_ContentReaderFreeCallback = { cls in
        guard let cls else { return }
        let stream = Unmanaged<EventStream>.fromOpaque(cls).takeRetainedValue()
        stream.streams.closed(stream)
    }

    // MARK: The waker thread

    private func wake() {
        var seen = hub.head
        while true {
            let head = hub.wait(past: seen, seconds: 1)
            seen = head
            let now = Clock.monotonicNanoseconds()
            let (due, stop) = lock.withLock {
                let due = parked.values.filter { head > $0.sequence || $0.keepaliveDue <= now }
                for s in due { parked[ObjectIdentifier(s)] = nil }
                return (due, closing)
            }
            for s in due { MHD_resume_connection(s.connection) }
            if stop { break }
        }
        wakerDone.signal()
    }
}

/// One event-stream connection: where it is in the hub, the bytes encoded and not yet handed to libmicrohttpd.
final class EventStream {
    // Invariant: libmicrohttpd's thread owns every field while the stream is not parked; while it is parked (its
    // connection suspended) only the waker reads `sequence` and `keepaliveDue`, under `EventStreams.lock`, which
    // `park` held when it wrote them.
    let streams: EventStreams
    let connection: OpaquePointer
    var sequence: UInt64
    /// Which events it shows.
    let scope: EventStreams.Scope
    /// Runs when the stream ends (a page's presence goes offline).
    var onClose: (@Sendable () -> Void)?
    var pending = Array(": parley events\n\n".utf8)
    var sent = 0
    var lastSent: Int64
    var keepaliveDue: Int64 = 0
    let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    init(streams: EventStreams, connection: OpaquePointer, sequence: UInt64, scope: EventStreams.Scope, now: Int64) {
        self.streams = streams
        self.connection = connection
        self.sequence = sequence
        self.scope = scope
        lastSent = now
    }
}
