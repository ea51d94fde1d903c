import Glibc

/// Why a datagram did not go out or come in, from the errno of sendmmsg/recvmmsg/sendto.
///
/// `wouldBlock` (EAGAIN) is not a failure of the datagram: the socket's buffer is full (send) or empty (receive),
/// and the caller waits for POLLOUT/POLLIN. Every other case is the datagram's own fate, counted by `kind`.
public enum SocketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// EAGAIN/EWOULDBLOCK: try again once the socket is writable (or readable).
    case wouldBlock
    /// ECONNREFUSED: an ICMP port unreachable reported on this socket.
    case connectionRefused
    /// EMSGSIZE: larger than a UDP datagram (or the path MTU with DF set).
    case messageTooLarge
    /// ENOBUFS/ENOMEM: the kernel had no memory for it (an interface queue full).
    case noBuffers
    /// ENETUNREACH/EHOSTUNREACH/ENETDOWN/EHOSTDOWN: no route to the destination.
    case unreachable
    /// EACCES/EPERM: a firewall rule, or a broadcast address without SO_BROADCAST.
    case permission
    /// Any other errno.
    case other(Int32)

    /// Classifies an errno value.
    public init(errno code: Int32) {
        switch code {
        case EAGAIN, EWOULDBLOCK: self = .wouldBlock
        case ECONNREFUSED: self = .connectionRefused
        case EMSGSIZE: self = .messageTooLarge
        case ENOBUFS, ENOMEM: self = .noBuffers
        case ENETUNREACH, EHOSTUNREACH, ENETDOWN, EHOSTDOWN: self = .unreachable
        case EACCES, EPERM: self = .permission
        default: self = .other(code)
        }
    }

    /// The counter this error is counted under (every `other` errno shares one).
    public var kind: Kind {
        switch self {
        case .wouldBlock: .wouldBlock
        case .connectionRefused: .connectionRefused
        case .messageTooLarge: .messageTooLarge
        case .noBuffers: .noBuffers
        case .unreachable: .unreachable
        case .permission: .permission
        case .other: .other
        }
    }

    /// "message_too_large", or "other (errno 22: Invalid argument)".
    public var description: String {
        if case .other(let code) = self { return "other (errno \(code): \(SystemCalls.kernel.errorText(code)))" }
        return kind.label
    }

    /// The counters errors are kept under: one per case, `other` for every errno without its own case.
    public enum Kind: Int, CaseIterable, Sendable {
        case wouldBlock, connectionRefused, messageTooLarge, noBuffers, unreachable, permission, other

        /// The metric label.
        public var label: String {
            switch self {
            case .wouldBlock: "would_block"
            case .connectionRefused: "connection_refused"
            case .messageTooLarge: "message_too_large"
            case .noBuffers: "no_buffers"
            case .unreachable: "unreachable"
            case .permission: "permission"
            case .other: "other"
            }
        }
    }
}
