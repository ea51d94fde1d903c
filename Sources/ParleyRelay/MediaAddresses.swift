import Foundation
import ParleyWire

/// The addresses a relay tells clients to send media to: WebRTC candidates, a plain-RTP endpoint's `relay_address`
/// and SDP, a cluster node's record, the ready line. In order of preference:
/// - the announced addresses (`announce`), as given: the operator knows the public side of a NAT;
/// - the address the UDP workers are bound to, when it names one interface;
/// - bound to a wildcard, the host's interface addresses of the bound family (an IPv6 wildcard is dual stack: both),
///   without loopback and link-local ones, unless the client itself is on loopback (then loopback first); loopback
///   when the host has nothing else.
/// A client is told its own family's addresses first. Pure: the interface list is given.
public struct MediaAddresses: Sendable, Equatable {
    /// `announce`: hosts only (port 0).
    public var announced: [PeerAddress]
    /// The UDP bind address (its port is ignored).
    public var bound: PeerAddress
    /// The host's addresses when the relay started (`InterfaceAddresses.current()`).
    public var interfaces: [PeerAddress]

    public init(announced: [PeerAddress] = [], bound: PeerAddress, interfaces: [PeerAddress] = []) {
        self.announced = announced.map { $0.withPort(0) }
        self.bound = bound.withPort(0)
        self.interfaces = interfaces.map { $0.withPort(0) }
    }

    /// The hosts (port 0) to tell `client` (nil: a client not known, such as another node of the cluster), most
    /// preferred first; never empty.
    public func hosts(for client: PeerAddress?) -> [PeerAddress] {
        let hosts: [PeerAddress]
        if !announced.isEmpty {
            hosts = announced
        } else if !bound.isWildcard {
            hosts = [bound]
        } else {
            // An IPv4 wildcard serves IPv4 only; the IPv6 wildcard both (the sockets are dual stack).
            let served = interfaces.filter { bound.isIPv4 ? $0.isIPv4 : true }
            let reachable = served.filter { !$0.isLoopback && !$0.isLinkLocal && !$0.isWildcard }
            let loopback = bound.isIPv4 || client?.isIPv4 == true
                ? PeerAddress(ipv4: 127, 0, 0, 1, port: 0) : PeerAddress(high: 0, low: 1, port: 0)
            if client?.isLoopback == true || reachable.isEmpty {
                hosts = [loopback] + reachable
            } else {
                hosts = reachable
            }
        }
        guard let client else { return hosts }
        // The client's family first (stable otherwise): an IPv4-only client reaches nothing at an IPv6 address.
        return hosts.filter { $0.isIPv4 == client.isIPv4 } + hosts.filter { $0.isIPv4 != client.isIPv4 }
    }

    /// Parses `announce`: IP addresses separated by commas (IPv6 with or without brackets); "" is none.
    public static func parseAnnounced(_ text: String) -> [PeerAddress]? {
        var out: [PeerAddress] = []
        for item in text.split(separator: ",") {
            let host = item.trimmingCharacters(in: .whitespaces)
            let bracketed = host.hasPrefix("[") ? host : host.contains(":") ? "[\(host)]" : host
            guard let address = PeerAddress(parsing: bracketed + ":0"), !address.isWildcard else { return nil }
            out.append(address)
        }
        return out
    }
}
