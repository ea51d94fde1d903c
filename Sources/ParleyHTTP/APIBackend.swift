import ParleyNet
import ParleyRelay
import ParleyRelayCore
import ParleySIP
import ParleyWire

/// What the router needs from the relay: the workers' published snapshots and a way to run a command on
/// the worker owning a room. `RelayAPI` is the real one; tests drive a `RelayCore` directly.
public protocol APIBackend: Sendable {
    /// Every worker's latest snapshot.
    func snapshots() -> [WorkerSnapshot]
    /// Runs a command on the owning worker; nil when it did not answer in time.
    func execute(_ command: AdminCommand) -> AdminResult?
    /// Posts a command to its worker without waiting (called where nothing may wait: libmicrohttpd's thread).
    func post(_ command: AdminCommand)
    /// The relay's addresses (hosts, port 0) to tell a client at `client` to send media to, most preferred first;
    /// never empty (`MediaAddresses`).
    func mediaHosts(for client: PeerAddress?) -> [PeerAddress]
    /// Whether the relay's UDP sockets reach IPv6 addresses (bound to an IPv6 address or `[::]`).
    var servesIPv6: Bool { get }
    /// The relay's TCP port for ICE-TCP (`TCPBridge`), nil without one.
    var tcpPort: UInt16? { get }
    /// Notes that ICE-TCP checks naming `ufrag` go to the worker at `port`.
    func noteICETCP(ufrag: String, port: UInt16)
    /// Where room recordings are kept (nil: none are).
    var recordings: RecordingCatalog? { get }
    /// Where texts are kept (nil: nowhere).
    var messages: TextStore? { get }
    /// SHA-256 of the relay's DTLS certificate, for WebRTC answers (nil: WebRTC is unavailable).
    var dtlsFingerprint: [UInt8]? { get }
    /// Why the relay takes no new members now ("draining", "stopping"), or nil when it does: `GET /readyz`.
    var notReadyReason: String? { get }
    /// The webhooks' counters for `/metrics` (nil: no webhooks).
    var webhookStats: WebhookStats? { get }
    /// Sets (nil: removes) a room's PIN for phones calling in (`SIPGateway.setPIN`); false: no gateway.
    func setSIPRoomPIN(_ pin: String?, room: String) -> Bool
    /// The SIP gateway's counters for `/metrics` (nil: no gateway).
    var sipCounters: SIPGateway.Counters? { get }
    /// Has the SIP gateway key `digits` to the phone of the call `identity` in `room`; nil: no gateway.
    func sendSIPDigits(_ digits: String, room: String, identity: String) -> Result<Void, SIPGateway.DigitsRefusal>?
    /// Has the SIP gateway call `to` for `room` (`SIPGateway.call`); nil: the relay runs no gateway.
    func placeSIPCall(to: SIPTarget, room: String, identity: String, name: String?) -> Result<String, SIPRoomError>?
    /// Digest credentials for a SIP device of `identity` and the registrar's URI (`SIPGateway.credentials`); nil: no
    /// gateway; a nil `minted`: the gateway mints none (no API secret, or an identity SIP cannot carry).
    func sipCredentials(identity: String, lifetime: Int64) -> (minted: SIPCredentials.Minted?, registrar: String)?
}

extension APIBackend {
    /// Runs it and drops the answer, unless the backend can post without waiting.
    public func post(_ command: AdminCommand) { _ = execute(command) }
    /// Loopback unless the backend knows better.
    public func mediaHosts(for client: PeerAddress?) -> [PeerAddress] { [PeerAddress(ipv4: 127, 0, 0, 1, port: 0)] }
    /// IPv4 only unless the backend knows better.
    public var servesIPv6: Bool { false }
    /// No TCP unless the backend has it.
    public var tcpPort: UInt16? { nil }
    public func noteICETCP(ufrag: String, port: UInt16) {}
    /// None unless the backend has a certificate.
    public var dtlsFingerprint: [UInt8]? { nil }
    /// Ready unless the backend knows better.
    public var notReadyReason: String? { nil }
    /// None unless the backend keeps recordings.
    public var recordings: RecordingCatalog? { nil }
    /// None unless the backend keeps texts.
    public var messages: TextStore? { nil }
    /// None unless the backend sends webhooks.
    public var webhookStats: WebhookStats? { nil }
    /// No gateway unless the backend has one.
    public func setSIPRoomPIN(_ pin: String?, room: String) -> Bool { false }
    /// No gateway unless the backend has one.
    public var sipCounters: SIPGateway.Counters? { nil }
    /// No gateway unless the backend has one.
    public func sendSIPDigits(_ digits: String, room: String, identity: String)
        -> Result<Void, SIPGateway.DigitsRefusal>? { nil }
    /// No gateway unless the backend has one.
    public func placeSIPCall(to: SIPTarget, room: String, identity: String, name: String?)
        -> Result<String, SIPRoomError>? { nil }
    /// No gateway unless the backend has one.
    public func sipCredentials(identity: String, lifetime: Int64)
        -> (minted: SIPCredentials.Minted?, registrar: String)? { nil }
}

extension RelayAPI: APIBackend {
    /// Through the gateway `parley-relay` started (`sipGateway`), nil before or without one.
    public func placeSIPCall(to: SIPTarget, room: String, identity: String, name: String?)
        -> Result<String, SIPRoomError>? {
        sipGateway.withLock { $0 }?.call(to, room: room, identity: identity, name: name)
    }
    /// Through the gateway `parley-relay` started; false before or without one.
    public func setSIPRoomPIN(_ pin: String?, room: String) -> Bool {
        guard let gateway = sipGateway.withLock({ $0 }) else { return false }
        gateway.setPIN(pin, for: room)
        return true
    }
    /// The gateway's counters, nil before or without one.
    public var sipCounters: SIPGateway.Counters? { sipGateway.withLock { $0 }?.snapshot }
    /// Through the gateway `parley-relay` started, nil before or without one.
    public func sendSIPDigits(_ digits: String, room: String, identity: String)
        -> Result<Void, SIPGateway.DigitsRefusal>? {
        sipGateway.withLock { $0 }?.sendDigits(digits, room: room, identity: identity)
    }
    /// From the gateway `parley-relay` started, nil before or without one.
    public func sipCredentials(identity: String, lifetime: Int64)
        -> (minted: SIPCredentials.Minted?, registrar: String)? {
        guard let gateway = sipGateway.withLock({ $0 }) else { return nil }
        return (gateway.credentials(for: identity, lifetime: lifetime), gateway.registrarURI)
    }
    public var dtlsFingerprint: [UInt8]? { shared.dtls?.certificate.fingerprint }
    public func mediaHosts(for client: PeerAddress?) -> [PeerAddress] { media.hosts(for: client) }
    public var servesIPv6: Bool { !media.bound.isIPv4 }
    /// "stopping" from SIGTERM's first moment, "draining" during a cluster drain, else nil (`GET /readyz`).
    public var notReadyReason: String? { shared.isStopping ? "stopping" : shared.isDraining ? "draining" : nil }
    public func noteICETCP(ufrag: String, port: UInt16) {
        iceTCP.note(ufrag: ufrag, port: port, now: Int64(Clock.unixMilliseconds()))
    }
}
