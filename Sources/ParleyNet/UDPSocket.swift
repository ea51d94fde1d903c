import Glibc
import ParleyWire

/// A non-blocking UDP socket bound to one address; closes its descriptor in `deinit`.
/// Owned by one thread; `sendto` on it from other threads is safe in the kernel (used only for join answers).
public final class UDPSocket: @unchecked Sendable {
    /// The descriptor.
    public let fd: Int32
    /// The calls it makes (the kernel's unless a test gave its own).
    public let calls: SystemCalls
    /// True for an AF_INET socket (addresses are written as `sockaddr_in`).
    public let isIPv4: Bool

    /// Opens a socket and binds it to `address` (port 0 = any free port).
    public init(bindingTo address: PeerAddress, bufferBytes: Int32 = 4 << 20, calls: SystemCalls = .kernel) throws(SystemError) {
        self.calls = calls
        isIPv4 = address.isIPv4
        let rc = calls.socket(isIPv4 ? AF_INET : AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard rc >= 0 else { throw SystemError("socket", -rc) }
        fd = rc
        _ = calls.setSocketBuffers(fd, bufferBytes)
        var storage = sockaddr_storage()
        let length = withUnsafeMutableBytes(of: &storage) { address.write(to: $0.baseAddress!, ipv4Socket: isIPv4) }
        let bound = withUnsafePointer(to: &storage) { [fd] in $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { calls.bind(fd, $0, length) } }
        // Every stored property is set: throwing now runs `deinit`, which closes the descriptor (once).
        guard bound == 0 else { throw SystemError("bind \(address)", -bound) }
    }

    deinit { _ = calls.close(fd) }

    /// The address the socket is bound to.
    public var localAddress: PeerAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { calls.getsockname(fd, $0, &length) } }
        guard rc == 0 else { return nil }
        return withUnsafeBytes(of: &storage) { PeerAddress(storage: $0.baseAddress!) }
    }

    /// Sends one datagram without blocking (sendto(2) with MSG_DONTWAIT, EINTR retried); throws what the kernel
    /// said when it refused it, `.wouldBlock` included (the datagram is not kept).
    public func send(_ bytes: UnsafeRawBufferPointer, to address: PeerAddress) throws(SocketError) {
        var storage = sockaddr_storage()
        let length = withUnsafeMutableBytes(of: &storage) { address.write(to: $0.baseAddress!, ipv4Socket: isIPv4) }
        let n = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { calls.sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, length) }
        }
        if n < 0 { throw SocketError(errno: Int32(-n)) }
    }

    /// Sends an array's bytes.
    public func send(_ bytes: [UInt8], to address: PeerAddress) throws(SocketError) {
        let failure: SocketError? = bytes.withUnsafeBytes { b in
            do throws(SocketError) { try send(b, to: address); return nil } catch { return error }
        }
        if let failure { throw failure }
    }

    /// Receives one datagram into `buffer` without blocking; nil when none is waiting.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, from: PeerAddress)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let n = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { calls.recvfrom(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, &length) }
        }
        guard n >= 0, let from = withUnsafeBytes(of: &storage, { PeerAddress(storage: $0.baseAddress!) }) else { return nil }
        return (n, from)
    }
}
