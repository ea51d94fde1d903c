import Glibc
import ParleyWire

/// The host's own IP addresses (getifaddrs), for a relay bound to a wildcard: what it may tell clients to reach it at.
public enum InterfaceAddresses {
    /// Every IPv4 and IPv6 address of an interface that is up, port 0, in the kernel's order.
    public static func current() -> [PeerAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var out: [PeerAddress] = []
        var next: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = next {
            next = entry.pointee.ifa_next
            guard entry.pointee.ifa_flags & UInt32(IFF_UP) != 0, let address = entry.pointee.ifa_addr,
                  let peer = PeerAddress(storage: UnsafeRawPointer(address))
            else { continue }
            if !out.contains(peer) { out.append(peer) }
        }
        return out
    }
}
