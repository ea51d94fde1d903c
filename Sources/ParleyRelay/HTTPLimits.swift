/// What the HTTP API grants each connection and each client address, so that one client cannot take the API from the
/// others (RelayConfig's `http_*` and `event_stream_*` keys). `HTTPServer` hands these to libmicrohttpd.
public struct HTTPLimits: Sendable, Equatable {
    /// Connections open at once, all clients together (`http_max_connections`); more are closed as they come.
    public var maxConnections = 1024
    /// Connections open at once from one IP address (`http_connections_per_address`); more are closed as they come.
    /// Behind a reverse proxy on the same host every client shares the proxy's address: raise it there.
    public var connectionsPerAddress = 64
    /// Seconds a connection may go without a byte moving, whether its headers or body are arriving or it idles
    /// between keep-alive requests (`http_idle_timeout_s`). An event stream waiting for events is exempt.
    public var idleTimeoutSeconds = 5
    /// Seconds a connection may take to send one request's headers, however steadily the bytes come
    /// (`http_header_timeout_s`): a client sending them a byte at a time is closed.
    public var headerTimeoutSeconds = 10
    /// Seconds an event stream may hold bytes its reader does not take before it is closed and counted
    /// (`event_stream_stall_timeout_s`).
    public var eventStreamStallSeconds = 20
    /// Event streams (a room's, a page's presence stream) one identity may hold open at once
    /// (`event_streams_per_identity`); more are refused (429) until one closes. Admin tokens' streams are not counted.
    public var eventStreamsPerIdentity = 4
    /// Event streams of member tokens open at once, relay-wide (`event_streams_max`); more are refused (503). Never more
    /// than half of `maxConnections` (`eventStreamCap`), so requests always find a connection.
    public var eventStreamsMax = 256
    /// The relay-wide bound in force: `eventStreamsMax`, at most half of `maxConnections`.
    public var eventStreamCap: Int { max(1, min(eventStreamsMax, maxConnections / 2)) }
    /// Bytes libmicrohttpd may use for one connection's headers and buffers; larger headers are refused (431).
    public var connectionMemoryBytes = 16 * 1024
    /// The kernel send buffer of an event-stream connection: with the stall timeout, the most a reader that stopped
    /// reading holds in the kernel (the default lets the kernel grow it to megabytes).
    public var eventStreamSendBufferBytes = 64 * 1024
    /// Threads that answer requests needing the workers (reads, commands, metrics), off libmicrohttpd's event loop.
    public var apiThreads = 2
    /// Requests waiting for those threads at most; more are answered 503 at once.
    public var apiQueueLength = 64
    /// Attachment uploads whose bodies are being read or stored at once (each up to `attachment_max_bytes` in memory);
    /// more are answered 503 at once, before their bodies are read.
    public var attachmentUploads = 4
    /// Attachment downloads held in memory at once, from reading the file until the answer is sent; more are answered
    /// 503 at once.
    public var attachmentDownloads = 8
    /// Seconds an upload's body may take to arrive, once admitted; a slower one is cut off (its connection closed) so
    /// that trickling clients cannot keep the upload places.
    public var attachmentUploadSeconds = 120

    /// The defaults.
    public init() {}
}

/// Who must send an admin token to read `/metrics` (`metrics_require_auth`).
public enum MetricsAuth: String, Sendable, Equatable {
    /// Every client (`true`).
    case always
    /// Every client but those on a loopback address, 127.0.0.0/8 (`remote`, the default): a Prometheus on the
    /// relay's host scrapes without a token, nobody else does. A reverse proxy on the same host makes every client
    /// loopback: set `true` there.
    case remote
    /// No client (`false`).
    case never
}
