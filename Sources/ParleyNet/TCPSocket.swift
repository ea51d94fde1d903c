import CParleySys
import Glibc
import ParleyWire

/// A non-blocking TCP socket: a listener (`listening(on:)`) or a connection (accepted, or `connect(to:)`). Closes its
/// descriptor in `deinit`. Owned by one thread.
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
        let fd = socket(address.isIPv4 ? AF_INET : AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno) }
        let s = TCPSocket(fd: fd, peer: nil)
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
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
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let c = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { parley_accept4(fd, $0, &length) }
        }
        guard c >= 0 else { return nil }
        let peer = withUnsafeBytes(of: &storage) { PeerAddress(storage: $0.baseAddress!) }
        var on: Int32 = 1
        setsockopt(c, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        return TCPSocket(fd: c, peer: peer)
    }

    /// Connects to `address`, waiting at most `timeoutMilliseconds`; the socket is non-blocking afterwards.
    public static func connect(to address: PeerAddress, timeoutMilliseconds: Int32) throws(SystemError) -> TCPSocket {
        let fd = socket(address.isIPv4 ? AF_INET : AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno) }
        let s = TCPSocket(fd: fd, peer: address)
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        var storage = sockaddr_storage()
        let length = withUnsafeMutableBytes(of: &storage) { address.write(to: $0.baseAddress!, ipv4Socket: address.isIPv4) }
        let rc = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) } }
        if rc != 0 {
            guard errno == EINPROGRESS else { throw SystemError("connect tcp \(address)", errno) }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&p, 1, timeoutMilliseconds) == 1 else { throw SystemError("connect tcp \(address): no answer", ETIMEDOUT) }
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size)
            guard error == 0 else { throw SystemError("connect tcp \(address)", error) }
        }
        return s
    }

    /// The port the socket is bound to.
    public var localPort: UInt16? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard rc == 0 else { return nil }
        return withUnsafeBytes(of: &storage) { PeerAddress(storage: $0.baseAddress!)?.port }
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
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { return .bytes(n) }
            if n == 0 { return .closed }
            if errno == EINTR { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK ? .wouldBlock : .closed
        }
    }

    /// Writes as much of `bytes` as the socket takes now.
    public func write(_ bytes: UnsafeRawBufferPointer) -> Transfer {
        while true {
            let n = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            if n >= 0 { return .bytes(n) }
            if errno == EINTR { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK ? .wouldBlock : .closed
        }
    }
}
