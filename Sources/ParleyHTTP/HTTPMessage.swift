import ParleyWire

/// One HTTP request as the router sees it: no sockets, the body complete.
public struct HTTPRequest: Sendable {
    /// `GET`, `POST`, ...
    public var method: String
    /// The path, percent-decoded, without the query.
    public var path: String
    /// The `Authorization` header, if any.
    public var authorization: String?
    /// The body.
    public var body: [UInt8]
    /// True when the client's address is loopback (127.0.0.0/8 or ::1): it runs on the relay's host.
    public var fromLoopback: Bool
    /// The client's address (nil in tests that do not give one): which of the relay's addresses it is told.
    public var client: PeerAddress?
    /// The `Content-Type` header, if any (WHIP and WHEP offers must be `application/sdp`).
    public var contentType: String?
    /// The query arguments the routes read (`HTTPRequest.queryKeys`), percent-decoded.
    public var query: [String: String]
    /// The `Content-Length` header as a number, if any (nil too for a chunked body, whose length comes as it is read).
    public var contentLength: UInt64?

    /// The query arguments the server passes on: a page of a member list (`limit`, `after`).
    public static let queryKeys = ["limit", "after", "recording", "before"]

    /// A request.
    public init(method: String, path: String, authorization: String? = nil, body: [UInt8] = [], fromLoopback: Bool = false,
                client: PeerAddress? = nil, contentType: String? = nil, query: [String: String] = [:],
                contentLength: UInt64? = nil) {
        self.client = client
        self.query = query
        self.contentLength = contentLength
        self.method = method
        self.path = path
        self.authorization = authorization
        self.body = body
        self.fromLoopback = fromLoopback || client?.isLoopback == true
        self.contentType = contentType
    }
}

/// One HTTP response, or the signal to start the event stream.
public struct HTTPResponse: Sendable, Equatable {
    /// Status code.
    public var status: Int
    /// Content type.
    public var contentType: String
    /// Body.
    public var body: [UInt8]
    /// True for `GET /v1/events` once authorised: the server streams events instead of `body`.
    public var isEventStream = false
    /// Further headers (`Location`, CORS), by name.
    public var headers: [String: String] = [:]
    /// A file sent as the body instead of `body` (a recording): opened when the response is queued, never through a
    /// symbolic link; 404 if it is gone by then.
    public var file: String?

    /// A response.
    public init(status: Int, contentType: String = "application/json", body: [UInt8], isEventStream: Bool = false,
                headers: [String: String] = [:], file: String? = nil) {
        self.file = file
        self.status = status
        self.contentType = contentType
        self.body = body
        self.isEventStream = isEventStream
        self.headers = headers
    }

    /// The body as text (tests, logs).
    public var text: String { String(decoding: body, as: UTF8.self) }
}
