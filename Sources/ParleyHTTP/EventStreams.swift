import CMicroHTTPD
import Foundation
import ParleyNet
import ParleyRelay
import ParleyRelayCore

/// The event streams (`GET /v1/events`, a room's, a page's presence stream) of one HTTP server. A stream's connection
/// is parked — suspended in libmicrohttpd — whenever it has nothing to send; one thread waits on the `EventHub` and
/// wakes the parked streams when an event is published, a keepalive or the token's expiry is due, or the server
/// stops; another waits on a `HangUpWatch` over the parked streams' sockets and wakes a stream whose client went
/// away, which then ends at once. No libmicrohttpd callback ever waits:
///
///     reader callback (libmicrohttpd's thread)    waker thread                       hang-up thread
///     ────────────────────────────────────────    ─────────────────────────────     ────────────────────────────
///     client gone → end with error (close)        head = hub.wait(past: seen, 1 s)  ids = hangUps.wait(1 s)
///     bytes pending → copy them out               lock: unpark those whose events   lock: unpark those ids,
///     token expired → a last `stream_closed`        came, or keepalive/expiry due     mark their client gone
///       event, then the end                       resume each                       resume each
///     none → take ≤ 64 events from the hub
///     still none → park: lock, suspend, add, watch its socket (not if the hub moved meanwhile)
///
/// Each parked stream is unparked (its socket forgotten by the watch, while libmicrohttpd still holds it open) and
/// resumed exactly once. A parked stream runs no libmicrohttpd timer, so the idle timeout never closes a stream
/// waiting for events. Once woken with bytes to send, its own timeout (`HTTPLimits.eventStreamStallSeconds`) runs
/// while its reader takes none: then libmicrohttpd closes it and the server counts it. Its kernel send buffer is
/// capped (`eventStreamSendBufferBytes`) and it holds at most one batch of encoded events, so a reader that stops
/// reading costs a bounded amount until it is closed.
///
/// Streams are bounded (`EventStreamSeats`): `event_streams_per_identity` per member identity, `eventStreamCap` in
/// all; the server takes a seat (`seat`) before it starts a stream, and the stream gives it back when it ends.
final class EventStreams: @unchecked Sendable {
    // Invariant: `parked`, `seats`, `nextID` and `closing` change only under `lock`; a stream is in `parked` — and its
    // socket in `hangUps` — exactly from the moment `park` suspended its connection until one caller unparked it
    // (`unpark`, under the lock) and resumes it.
    let hub: EventHub
    let limits: HTTPLimits
    let stats: HTTPStats
    private let lock = NSLock()
    private var parked: [UInt64: EventStream] = [:]
    private var seats: EventStreamSeats
    private var nextID: UInt64 = 1  // 0 is the hang-up watch's own token
    private var closing = false
    /// The parked streams' sockets; nil when no epoll set could be made (a gone client is then noticed at a keepalive).
    private let hangUps: HangUpWatch?
    private let threadsDone = DispatchSemaphore(value: 0)
    private let threads: Int
    /// Nanoseconds between keepalive comments on a stream with no events.
    static let keepaliveNanoseconds: Int64 = 15_000_000_000
    /// Events encoded per fill of a stream's buffer.
    static let eventsPerFill = 64

    init(hub: EventHub, limits: HTTPLimits, stats: HTTPStats) {
        self.hub = hub
        self.limits = limits
        self.stats = stats
        seats = EventStreamSeats(perIdentity: limits.eventStreamsPerIdentity, total: limits.eventStreamCap)
        hangUps = try? HangUpWatch()
        threads = hangUps == nil ? 1 : 2
        let waker = Thread { [self] in wake() }
        waker.name = "parley-events"
        waker.start()
        if let hangUps {
            let watcher = Thread { [self] in watchHangUps(hangUps) }
            watcher.name = "parley-events-hup"
            watcher.start()
        }
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
            case .all: e.recipient == 0 && !e.operatorOnly
            case .room(let room): e.recipient == 0 && !e.operatorOnly && e.room == room
            case .recipient(let id): e.recipient == id && !e.operatorOnly
            }
        }

        /// The room its events are of, "" for none.
        var room: String {
            if case .room(let room) = self { return room }
            return ""
        }
    }

    /// Takes a seat for a stream of `holder`, or says why it may not start (answer that, and start nothing). A seat
    /// taken is given back when the stream `start`ed for it ends: call `start` next, whatever happens.
    func seat(_ holder: StreamHolder) -> APIError? {
        guard let refusal = lock.withLock({ seats.take(holder) }) else { return nil }
        stats.eventStreamRefused()
        return refusal.error
    }

    /// Queues the streaming response on `connection` for `holder` (who holds a `seat`): its own stall timeout and send
    /// buffer, the reader below; it ends at the token's expiry. `onClose` runs once when the stream ends, on
    /// libmicrohttpd's thread (it must not wait). Its first event is the hub's `sequence` (default: the next one
    /// published).
    func start(on connection: OpaquePointer, holder: StreamHolder, scope: Scope = .all, from sequence: UInt64? = nil,
               onClose: (@Sendable () -> Void)? = nil) -> MHD_Result {
        let now = Clock.monotonicNanoseconds()
        let secondsLeft = max(0, holder.expiresAt - Int64(Clock.unixSeconds()))
        let id = lock.withLock { defer { nextID &+= 1 }; return nextID }
        let stream = EventStream(streams: self, id: id, connection: connection, socket: parley_mhd_socket(connection), holder: holder,
                                 sequence: sequence ?? hub.head, scope: scope, now: now,
                                 closesAt: now &+ min(secondsLeft, Int64.max / 2_000_000_000) * 1_000_000_000)
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
        if stream.socket >= 0 {
            var size = Int32(clamping: limits.eventStreamSendBufferBytes)
            setsockopt(stream.socket, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let result = MHD_queue_response(connection, 200, r)
        MHD_destroy_response(r)
        return result
    }

    /// Wakes every parked stream (they end their response) and stops both threads; returns once they have. Called
    /// before the daemon stops: libmicrohttpd must not be stopped with a connection suspended.
    func stop() {
        let all = lock.withLock {
            closing = true
            return parked.keys.compactMap(unpark)
        }
        for s in all { MHD_resume_connection(s.connection) }
        hub.wakeAll()
        hangUps?.wake()
        for _ in 0..<threads { threadsDone.wait() }
    }

    var isClosing: Bool { lock.withLock { closing } }

    /// Streams open per identity and in all (member tokens'), for tests and the metrics.
    var seatsTaken: EventStreamSeats { lock.withLock { seats } }

    /// Takes stream `id` out of `parked` and its socket out of the watch; the caller holds `lock` and resumes it.
    private func unpark(_ id: UInt64) -> EventStream? {
        guard let stream = parked.removeValue(forKey: id) else { return nil }
        if stream.socket >= 0 { hangUps?.forget(stream.socket) }
        return stream
    }

    // MARK: libmicrohttpd's thread

    /// Suspends `stream`'s connection and parks it, its socket watched, unless the hub moved past it meanwhile or the
    /// server stops; returns whether it did.
    private func park(_ stream: EventStream) -> Bool {
        lock.withLock {
            guard !closing, hub.head <= stream.sequence else { return false }
            stream.wakeAt = min(stream.lastSent + Self.keepaliveNanoseconds, stream.closesAt)
            MHD_suspend_connection(stream.connection)
            parked[stream.id] = stream
            if stream.socket >= 0 { hangUps?.watch(stream.socket, token: stream.id) }
            return true
        }
    }

    /// Fills `buf` with what `stream` has to send: `event: TYPE\ndata: {json}\n\n` lines, a keepalive comment every 15
    /// s, or at the token's expiry a last `stream_closed` event; parks the stream (returning 0) when there is nothing.
    /// A stream whose client went away ends with an error: libmicrohttpd closes its connection at once.
    private func fill(_ stream: EventStream, _ buf: UnsafeMutablePointer<CChar>?, _ max: Int) -> Int {
        if isClosing { return parley_mhd_end_of_stream() }
        if stream.clientGone { return parley_mhd_end_with_error() }
        let now = Clock.monotonicNanoseconds()
        if stream.sent == stream.pending.count {
            if stream.ending { return parley_mhd_end_of_stream() }  // its last event is out
            stream.pending.removeAll(keepingCapacity: true)
            stream.sent = 0
            if now >= stream.closesAt {
                stream.pending = Self.closingEvent(stream.scope)
                stream.ending = true
                stats.eventStreamExpired()
            } else {
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
        }
        guard let buf else { return 0 }
        let n = min(max, stream.pending.count - stream.sent)
        stream.pending.withUnsafeBytes { UnsafeMutableRawPointer(buf).copyMemory(from: $0.baseAddress! + stream.sent, byteCount: n) }
        stream.sent += n
        stream.lastSent = now
        return n
    }

    /// The last event of a stream whose token expired: `event: stream_closed`, why, and what to do.
    static func closingEvent(_ scope: Scope) -> [UInt8] {
        let event = API.Event(type: "stream_closed", room: scope.room,
                              detail: "token_expired: the token of this stream expired; open a new one with a fresh token",
                              at: Int64(Clock.unixMilliseconds()))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = (try? encoder.encode(event)).map(Array.init) ?? Array("{}".utf8)
        return Array("event: stream_closed\ndata: ".utf8) + json + [0x0A, 0x0A]
    }

    private func closed(_ stream: EventStream) {
        lock.withLock {
            _ = unpark(stream.id)
            seats.give(stream.holder)
        }
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
                let ids = parked.values.filter { head > $0.sequence || $0.wakeAt <= now }.map(\.id)
                return (ids.compactMap(unpark), closing)
            }
            for s in due { MHD_resume_connection(s.connection) }
            if stop { break }
        }
        threadsDone.signal()
    }

    // MARK: The hang-up thread

    /// Wakes each parked stream whose client closed its connection (the kernel says so at once: `HangUpWatch`); its
    /// reader then ends it, which closes the connection and gives its seat back.
    private func watchHangUps(_ watch: HangUpWatch) {
        while true {
            let ids = watch.wait(timeoutMilliseconds: 1_000)
            let (gone, stop) = lock.withLock {
                let gone = ids.compactMap(unpark)
                for s in gone { s.clientGone = true }
                return (gone, closing)
            }
            for s in gone {
                stats.eventStreamHungUp()
                MHD_resume_connection(s.connection)
            }
            if stop { break }
        }
        threadsDone.signal()
    }
}

/// One event-stream connection: where it is in the hub, the bytes encoded and not yet handed to libmicrohttpd.
final class EventStream {
    // Invariant: libmicrohttpd's thread owns every field while the stream is not parked; while it is parked (its
    // connection suspended) only the waker reads `sequence` and `wakeAt`, and the hang-up thread writes `clientGone`,
    // under `EventStreams.lock`, which `park` held when it wrote them; the resume hands them back.
    let streams: EventStreams
    /// Its key in `EventStreams.parked` and its token in the hang-up watch.
    let id: UInt64
    let connection: OpaquePointer
    /// The connection's socket (-1 when libmicrohttpd did not say), watched for the client's hang-up while parked.
    let socket: Int32
    /// Whose it is: its seat, and its token's expiry.
    let holder: StreamHolder
    var sequence: UInt64
    /// Which events it shows.
    let scope: EventStreams.Scope
    /// Runs when the stream ends (a page's presence goes offline).
    var onClose: (@Sendable () -> Void)?
    var pending = Array(": parley events\n\n".utf8)
    var sent = 0
    var lastSent: Int64
    /// Monotonic nanoseconds at which its token expires: its last event goes out, then it ends.
    let closesAt: Int64
    /// When the waker must resume it while parked: its next keepalive, or its expiry.
    var wakeAt: Int64 = 0
    /// Its last event is queued: once it is out, the stream ends.
    var ending = false
    /// Its client closed the connection while it was parked.
    var clientGone = false
    let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    init(streams: EventStreams, id: UInt64, connection: OpaquePointer, socket: Int32, holder: StreamHolder, sequence: UInt64,
         scope: EventStreams.Scope, now: Int64, closesAt: Int64) {
        self.streams = streams
        self.id = id
        self.connection = connection
        self.socket = socket
        self.holder = holder
        self.sequence = sequence
        self.scope = scope
        self.closesAt = closesAt
        lastSent = now
    }
}
