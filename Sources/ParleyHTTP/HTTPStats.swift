import Synchronization

/// What the HTTP server counts about its own connections, for `/metrics`: written by libmicrohttpd's thread and the
/// API threads, read by whoever renders the metrics. Passed to both `HTTPServer` and `HTTPRouter`.
public final class HTTPStats: Sendable {
    private let connectionsOpen = Atomic<Int>(0)
    private let eventStreamsOpen = Atomic<Int>(0)
    private let eventStreamsStalled = Atomic<UInt64>(0)
    private let requestsShed = Atomic<UInt64>(0)
    private let headersLate = Atomic<UInt64>(0)

    /// Empty counters.
    public init() {}

    /// The counters at one moment.
    public struct Snapshot: Sendable, Equatable {
        /// Connections open (event streams included).
        public var connections: Int
        /// Event streams open.
        public var eventStreams: Int
        /// Event streams closed because their reader stopped taking bytes for `event_stream_stall_timeout_s`.
        public var eventStreamsDropped: UInt64
        /// Requests answered 503 at once because every API thread was busy and the queue full.
        public var requestsShed: UInt64
        /// Connections closed because a request's headers took longer than `http_header_timeout_s`.
        public var headerTimeouts: UInt64
    }

    /// The counters now.
    public var snapshot: Snapshot {
        Snapshot(connections: connectionsOpen.load(ordering: .relaxed), eventStreams: eventStreamsOpen.load(ordering: .relaxed),
                 eventStreamsDropped: eventStreamsStalled.load(ordering: .relaxed), requestsShed: requestsShed.load(ordering: .relaxed),
                 headerTimeouts: headersLate.load(ordering: .relaxed))
    }

    func connectionOpened() { connectionsOpen.add(1, ordering: .relaxed) }
    func connectionClosed() { connectionsOpen.subtract(1, ordering: .relaxed) }
    func eventStreamOpened() { eventStreamsOpen.add(1, ordering: .relaxed) }
    func eventStreamClosed() { eventStreamsOpen.subtract(1, ordering: .relaxed) }
    func eventStreamDropped() { eventStreamsStalled.add(1, ordering: .relaxed) }
    func requestShed() { requestsShed.add(1, ordering: .relaxed) }
    func headerTimedOut() { headersLate.add(1, ordering: .relaxed) }
}
