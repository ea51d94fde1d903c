import Synchronization

/// What the HTTP server counts about its own connections, for `/metrics`: written by libmicrohttpd's thread and the
/// API threads, read by whoever renders the metrics. Passed to both `HTTPServer` and `HTTPRouter`.
public final class HTTPStats: Sendable {
    private let connectionsOpen = Atomic<Int>(0)
    private let eventStreamsOpen = Atomic<Int>(0)
    private let eventStreamsStalled = Atomic<UInt64>(0)
    private let requestsShed = Atomic<UInt64>(0)
    private let headersLate = Atomic<UInt64>(0)
    private let eventStreamsRefusedCount = Atomic<UInt64>(0)
    private let eventStreamsHungUpCount = Atomic<UInt64>(0)
    private let eventStreamsExpiredCount = Atomic<UInt64>(0)

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
        /// Event streams refused at their start: their identity held `event_streams_per_identity` already, or the relay
        /// `event_streams_max`.
        public var eventStreamsRefused: UInt64 = 0
        /// Parked event streams closed because their client went away (noticed when it did, not at a keepalive).
        public var eventStreamsHungUp: UInt64 = 0
        /// Event streams closed because their token expired.
        public var eventStreamsExpired: UInt64 = 0
    }

    /// The counters now.
    public var snapshot: Snapshot {
        Snapshot(connections: connectionsOpen.load(ordering: .relaxed), eventStreams: eventStreamsOpen.load(ordering: .relaxed),
                 eventStreamsDropped: eventStreamsStalled.load(ordering: .relaxed), requestsShed: requestsShed.load(ordering: .relaxed),
                 headerTimeouts: headersLate.load(ordering: .relaxed), eventStreamsRefused: eventStreamsRefusedCount.load(ordering: .relaxed),
                 eventStreamsHungUp: eventStreamsHungUpCount.load(ordering: .relaxed),
                 eventStreamsExpired: eventStreamsExpiredCount.load(ordering: .relaxed))
    }

    func connectionOpened() { connectionsOpen.add(1, ordering: .relaxed) }
    func connectionClosed() { connectionsOpen.subtract(1, ordering: .relaxed) }
    func eventStreamOpened() { eventStreamsOpen.add(1, ordering: .relaxed) }
    func eventStreamClosed() { eventStreamsOpen.subtract(1, ordering: .relaxed) }
    func eventStreamDropped() { eventStreamsStalled.add(1, ordering: .relaxed) }
    func requestShed() { requestsShed.add(1, ordering: .relaxed) }
    func headerTimedOut() { headersLate.add(1, ordering: .relaxed) }
    func eventStreamRefused() { eventStreamsRefusedCount.add(1, ordering: .relaxed) }
    func eventStreamHungUp() { eventStreamsHungUpCount.add(1, ordering: .relaxed) }
    func eventStreamExpired() { eventStreamsExpiredCount.add(1, ordering: .relaxed) }
}
