import ParleyRelay
import ParleyRelayCore

/// What the router needs from the relay: the workers' published snapshots and a way to run a command on
/// the worker owning a room. `RelayAPI` is the real one; tests drive a `RelayCore` directly.
public protocol APIBackend: Sendable {
    /// Every worker's latest snapshot.
    func snapshots() -> [WorkerSnapshot]
    /// Runs a command on the owning worker; nil when it did not answer in time.
    func execute(_ command: AdminCommand) -> AdminResult?
    /// Posts a command to its worker without waiting (called where nothing may wait: libmicrohttpd's thread).
    func post(_ command: AdminCommand)
    /// The host plain-RTP endpoints send to (the relay's UDP address).
    var udpHost: String { get }
    /// Where room recordings are kept (nil: none are).
    var recordings: RecordingCatalog? { get }
    /// Where texts are kept (nil: nowhere).
    var messages: TextStore? { get }
    /// SHA-256 of the relay's DTLS certificate, for WebRTC answers (nil: WebRTC is unavailable).
    var dtlsFingerprint: [UInt8]? { get }
}

extension APIBackend {
    /// Runs it and drops the answer, unless the backend can post without waiting.
    public func post(_ command: AdminCommand) { _ = execute(command) }
    /// Loopback unless the backend knows better.
    public var udpHost: String { "127.0.0.1" }
    /// None unless the backend has a certificate.
    public var dtlsFingerprint: [UInt8]? { nil }
    /// None unless the backend keeps recordings.
    public var recordings: RecordingCatalog? { nil }
    /// None unless the backend keeps texts.
    public var messages: TextStore? { nil }
}

extension RelayAPI: APIBackend {
    public var dtlsFingerprint: [UInt8]? { shared.dtls?.certificate.fingerprint }
}
