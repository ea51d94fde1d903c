import CParleySys
import Glibc
import ParleyWire

// Conversions between `PeerAddress` and the kernel's socket address structures.

extension PeerAddress {
    /// Converts from a `sockaddr_storage` filled by the kernel (AF_INET or AF_INET6); nil for other families.
    public init?(storage: UnsafeRawPointer) {
        let family = storage.load(as: sa_family_t.self)
        if family == sa_family_t(AF_INET) {
            let sin = storage.load(as: sockaddr_in.self)
            self.init(ipv4: UInt32(bigEndian: sin.sin_addr.s_addr), port: UInt16(bigEndian: sin.sin_port))
        } else if family == sa_family_t(AF_INET6) {
            let sin6 = storage.load(as: sockaddr_in6.self)
            var high: UInt64 = 0, low: UInt64 = 0
            withUnsafeBytes(of: sin6.sin6_addr) { b in
                for i in 0..<8 { high = high << 8 | UInt64(b[i]) }
                for i in 8..<16 { low = low << 8 | UInt64(b[i]) }
            }
            self.init(high: high, low: low, port: UInt16(bigEndian: sin6.sin6_port))
        } else {
            return nil
        }
    }

    /// Writes this address as a `sockaddr_in6` (IPv4 as mapped) or `sockaddr_in` when `ipv4Socket`; returns its length.
    @inlinable
    public func write(to storage: UnsafeMutableRawPointer, ipv4Socket: Bool) -> socklen_t {
        if ipv4Socket {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr.s_addr = ipv4Value.bigEndian
            storage.storeBytes(of: sin, as: sockaddr_in.self)
            return socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        var sin6 = sockaddr_in6()
        sin6.sin6_family = sa_family_t(AF_INET6)
        sin6.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &sin6.sin6_addr) { b in
            for i in 0..<8 {
                b[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * i))
                b[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * i))
            }
        }
        storage.storeBytes(of: sin6, as: sockaddr_in6.self)
        return socklen_t(MemoryLayout<sockaddr_in6>.size)
    }
}
