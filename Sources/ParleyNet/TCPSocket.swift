import CParleySys
import Glibc
import ParleyWire

/// A non-blocking TCP socket: a listener (`listening(on:)`) or a connection (accepted, or `connect(to:)`). Closes its
/// descriptor in `deinit`. Owned by one thread. Its socket calls are CParleySys's (`parley_tcp_*`).
public final class TCPSocket: @unchecked Sendable {
    /// The descriptor.
    public let fd: Int32
    /// The other end (connections only).
    public let peer: PeerAddress?

    private init(fd: Int32, peer: PeerAddress?) {
        self.fd = fd
        self.peer = peer
    }

    deinit { close(fd) }

    /// A listener on `address` (the IPv6 wildcard is dual stack), backlog 512.
    public static func listening(on address: PeerAddress) throws(SystemError) -> TCPSocket {
        let fd = parley_tcp_socket(address.isIPv4 ? 0 : 1)
        guard fd >= 0 else { throw SystemError("socket", -fd) }
        let s = TCPSocket(fd: fd, peer: nil)
        var storage = sockaddr_storage()
        let length = withUnsafeMutableBytes(of: &storage) { address.write(to: $0.baseAddress!, ipv4Socket: address.isIPv4) }
        let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { throw SystemError("bind tcp \(address)", errno) }
        guard listen(fd, 512) == 0 else { throw SystemError("listen tcp \(address)", errno) }
        return s
    }

    /// The next waiting connection, non-blocking; nil when none waits (or accept failed: EMFILE and the like).
    public func accept() -> TCPSocket? {
        var storage = sockaddr_storage()
        var length = UInt32(MemoryLayout<sockaddr_storage>.size)
        let c = withUnsafeMutablePointer(to: &storage) { parley_accept4(fd, $0, &length) }
        guard c >= 0 else { return nil }
        let peer = withUnsafeBytes(of: &storage) { PeerAddress(storage: $0.baseAddress!) }
        return TCPSocket(fd: c, peer: peer)
    }

    /// Connects to `address`, waiting at most `timeoutMilliseconds`; the socket is non-blocking afterwards.
    public static func connect(to address: PeerAddress, timeoutMilliseconds: Int32) throws(SystemError) -> TCPSocket {
        let fd = parley_tcp_socket(address.isIPv4 ? 0 : 1)
        guard fd >= 0 else { throw SystemError("socket", -fd) }
        let s = TCPSocket(fd: fd, peer: address)
        var storage = sockaddr_storage()
        let length = withUnsafeMutableBytes(of: &storage) { address.write(to: $0.baseAddress!, ipv4Socket: address.isIPv4) }
        let rc = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) } }
        if rc != 0 {
            guard errno == EINPROGRESS else { throw SystemError("connect tcp \(address)", errno) }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&p, 1, timeoutMilliseconds) == 1 else { throw SystemError("connect tcp \(address): no answer", ETIMEDOUT) }
            let error = parley_socket_error(fd)
            guard error == 0 else { throw SystemError("connect tcp \(address)", error) }
        }
        return s
    }

    /// What one non-blocking read or write did.
    public enum Transfer: Equatable {
        /// This many bytes moved (a read of 0 is `.closed`).
        case bytes(Int)
        /// Nothing now: try again when poll says so.
        case wouldBlock
        /// The other end closed (read), or the connection failed.
        case closed
    }

    /// Reads what is waiting into `buffer`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Transfer {
        Self.transfer(parley_tcp_recv(fd, buffer.baseAddress, UInt(buffer.count)), endAtZero: true)
    }

    /// Writes as much of `bytes` as the socket takes now.
    public func write(_ bytes: UnsafeRawBufferPointer) -> Transfer {
        Self.transfer(parley_tcp_send(fd, bytes.baseAddress, UInt(bytes.count)), endAtZero: false)
    }

    private static func transfer(_ n: Int, endAtZero: Bool) -> Transfer {
        if n > 0 || (n == 0 && !endAtZero) { return .bytes(n) }
        if n == 0 { return .closed }
        return -n == EAGAIN || -n == EWOULDBLOCK ? .wouldBlock : .closed
    }
}
