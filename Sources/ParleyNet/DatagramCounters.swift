/// Why a datagram was dropped before the kernel saw it.
public enum SendDropReason: Int, CaseIterable, Sendable {
    /// The socket would block and the pending queue was full.
    case queueFull
    /// The socket would block and the datagram was larger than a pending-queue slot.
    case tooLargeToQueue

    /// The metric label.
    public var label: String {
        switch self {
        case .queueFull: "queue_full"
        case .tooLargeToQueue: "too_large_to_queue"
        }
    }
}

/// What one `DatagramBatch` did with the kernel, for metrics: plain integers owned by the batch's thread (read by
/// others only through copies). Every datagram handed to the batch ends up sent, failed, dropped, or still pending.
public struct DatagramCounters: Sendable, Equatable {
    /// Datagrams and bytes the kernel accepted: the sum of sendmmsg's returned counts, plus single sends that succeeded.
    public var packetsSent: UInt64 = 0, bytesSent: UInt64 = 0
    /// Datagrams that met a full socket (EAGAIN) and were copied into the pending queue (they are counted again as
    /// sent, failed or dropped when they leave it).
    public var sendsDeferred: UInt64 = 0
    /// Sends the kernel refused, by `SocketError.Kind.rawValue`; the datagram is gone.
    public var sendFailures = [UInt64](repeating: 0, count: SocketError.Kind.allCases.count)
    /// Datagrams dropped on a full socket before the kernel saw them, by `SendDropReason.rawValue`.
    public var sendDrops = [UInt64](repeating: 0, count: SendDropReason.allCases.count)
    /// Receive calls that failed, by `SocketError.Kind.rawValue` (EAGAIN is not counted: it means nothing waits).
    public var receiveFailures = [UInt64](repeating: 0, count: SocketError.Kind.allCases.count)
    /// The errno of the last send or receive counted as `other` (0 before any), for the log line.
    public var lastOtherErrno: Int32 = 0

    /// Zeroed counters.
    public init() {}

    /// Adds `other`'s counts to these (a worker's own socket and the batches it sends other workers' shares with).
    public mutating func add(_ other: DatagramCounters) {
        packetsSent &+= other.packetsSent
        bytesSent &+= other.bytesSent
        sendsDeferred &+= other.sendsDeferred
        for i in sendFailures.indices { sendFailures[i] &+= other.sendFailures[i] }
        for i in sendDrops.indices { sendDrops[i] &+= other.sendDrops[i] }
        for i in receiveFailures.indices { receiveFailures[i] &+= other.receiveFailures[i] }
        if other.lastOtherErrno != 0 { lastOtherErrno = other.lastOtherErrno }
    }

    /// Failed sends of one kind.
    public func sendFailures(_ kind: SocketError.Kind) -> UInt64 { sendFailures[kind.rawValue] }
    /// Drops for one reason.
    public func sendDrops(_ reason: SendDropReason) -> UInt64 { sendDrops[reason.rawValue] }
    /// Failed receives of one kind.
    public func receiveFailures(_ kind: SocketError.Kind) -> UInt64 { receiveFailures[kind.rawValue] }

    /// Every failed send, dropped datagram and failed receive so far: when it has not moved, nothing needs logging.
    public var problems: UInt64 {
        var total: UInt64 = 0
        for n in sendFailures { total &+= n }
        for n in sendDrops { total &+= n }
        for n in receiveFailures { total &+= n }
        return total
    }

    /// Counts one datagram of `bytes` the kernel accepted.
    @inlinable
    public mutating func countSent(bytes: Int) {
        packetsSent &+= 1
        bytesSent &+= UInt64(bytes)
    }

    /// Counts one send the kernel refused.
    public mutating func countSendFailure(_ error: SocketError) {
        sendFailures[error.kind.rawValue] &+= 1
        if case .other(let code) = error { lastOtherErrno = code }
    }

    /// Counts one receive call that failed.
    public mutating func countReceiveFailure(_ error: SocketError) {
        receiveFailures[error.kind.rawValue] &+= 1
        if case .other(let code) = error { lastOtherErrno = code }
    }

    /// Counts one datagram dropped before the kernel saw it.
    public mutating func countDrop(_ reason: SendDropReason) {
        sendDrops[reason.rawValue] &+= 1
    }
}
