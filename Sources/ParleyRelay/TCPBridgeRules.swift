import ParleyWire
import Synchronization

/// The relay's TCP port carries what a client could not send over UDP: Parley's own client (tunnel frames, each a relay
/// port and a datagram: `RelayTunnel`) and browsers' ICE-TCP (RFC 6544: STUN, DTLS and SRTP in RFC 4571 frames). The
/// bridge (`TCPBridge`) gives each connection a UDP socket on loopback and passes its datagrams to the workers' ports
/// and back, so the workers see one more UDP peer and nothing else changes. These are its rules, apart from the I/O.
public struct TCPBridgeRules: Sendable {
    /// Connections at once, in all.
    public var maxConnections = 1_024
    /// Connections at once from one address (IPv4, or IPv6 /64).
    public var connectionsPerAddress = 8
    /// The first frame must come within this (milliseconds): a connection that says nothing is closed.
    public var firstFrameMilliseconds: Int64 = 5_000
    /// A connection that sent no frame for this long is closed (the protocol pings every few seconds; ICE consent
    /// every 5 s).
    public var idleMilliseconds: Int64 = 60_000
    /// The longest frame payload taken (a datagram the relay takes fits in 1,500 bytes; a tunnel frame adds 2).
    public var maxFrame = 1_502
    /// Bytes waiting to be written to one connection; datagrams past this are dropped, as UDP would drop them.
    public var maxQueuedBytes = 256 * 1024

    public init() {}

    /// The source key for the per-address limit: the IPv4 address, or an IPv6 address's /64.
    public static func sourceKey(_ address: PeerAddress) -> UInt64 {
        address.isIPv4 ? UInt64(address.ipv4Value) : address.high
    }

    /// The loopback address a connection's UDP socket binds to: 127.x.y.z with x.y.z from the client's source key, so
    /// the workers' per-source join budget tells one address's connections from another's (a hash: two addresses may
    /// share one). Never 127.0.0.1.
    public static func loopbackSource(for client: PeerAddress) -> PeerAddress {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a over the key's bytes
        var key = sourceKey(client)
        for _ in 0..<8 {
            h = (h ^ (key & 0xFF)) &* 0x0000_0100_0000_01B3
            key >>= 8
        }
        var low = UInt32(truncatingIfNeeded: h) & 0x00FF_FFFF
        if low <= 1 { low += 2 }  // not 127.0.0.0 or 127.0.0.1
        return PeerAddress(ipv4: 0x7F00_0000 | low, port: 0)
    }

    /// Where a connection's datagram goes: a tunnel frame's port must be one of the relay's worker ports (anything
    /// else would make the bridge a proxy to the host's other services); nil refuses it.
    public static func tunnelTarget(port: UInt16, workerPorts: [UInt16]) -> UInt16? {
        workerPorts.contains(port) ? port : nil
    }
}

/// Counts connections per source (`TCPBridgeRules.sourceKey`) against the limits.
public struct TCPConnectionCount: Sendable {
    private var bySource: [UInt64: Int] = [:]
    public private(set) var total = 0

    public init() {}

    /// Takes a place for a connection from `address`; false when a limit is reached.
    public mutating func take(_ address: PeerAddress, rules: TCPBridgeRules) -> Bool {
        let key = TCPBridgeRules.sourceKey(address)
        guard total < rules.maxConnections, bySource[key, default: 0] < rules.connectionsPerAddress else { return false }
        bySource[key, default: 0] += 1
        total += 1
        return true
    }

    /// Gives back the place of a connection from `address`.
    public mutating func release(_ address: PeerAddress) {
        let key = TCPBridgeRules.sourceKey(address)
        guard let n = bySource[key] else { return }
        if n <= 1 { bySource[key] = nil } else { bySource[key] = n - 1 }
        total -= 1
    }
}

/// Which worker port a browser's ICE-TCP connection goes to, by the relay's ICE ufrag of its answer (the first part of
/// its checks' USERNAME): the HTTP API notes it when it answers an offer; the bridge looks it up at the first check.
/// Entries expire (`lifetimeMilliseconds`): a browser that never connects over TCP leaves nothing behind for long.
public final class ICETCPRoutes: Sendable {
    private let routes = Mutex<[String: (port: UInt16, expires: Int64)]>([:])
    /// How long an answer's route waits for its browser.
    public let lifetimeMilliseconds: Int64
    /// The most routes kept (the oldest go first past it).
    public let capacity: Int

    public init(lifetimeMilliseconds: Int64 = 60_000, capacity: Int = 65_536) {
        self.lifetimeMilliseconds = lifetimeMilliseconds
        self.capacity = capacity
    }

    /// Notes that checks naming `ufrag` belong to the worker at `port`.
    public func note(ufrag: String, port: UInt16, now: Int64) {
        routes.withLock { routes in
            if routes.count >= capacity {
                routes = routes.filter { $0.value.expires > now }
                if routes.count >= capacity, let oldest = routes.min(by: { $0.value.expires < $1.value.expires }) {
                    routes[oldest.key] = nil
                }
            }
            routes[ufrag] = (port, now + lifetimeMilliseconds)
        }
    }

    /// The worker port for a check whose USERNAME is `username` (`relayUfrag:browserUfrag`), or nil.
    public func port(forUsername username: String, now: Int64) -> UInt16? {
        guard let colon = username.firstIndex(of: ":") else { return nil }
        let ufrag = String(username[..<colon])
        return routes.withLock { routes in
            guard let route = routes[ufrag] else { return nil }
            guard route.expires > now else {
                routes[ufrag] = nil
                return nil
            }
            return route.port
        }
    }
}
