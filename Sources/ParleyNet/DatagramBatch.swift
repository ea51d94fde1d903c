import Glibc
import CParleySys
import ParleyWire

/// Batched datagram I/O with every buffer, `mmsghdr`, `iovec` and address allocated once at creation:
/// `receive` fills up to `capacity` slots with one recvmmsg; `append`+`flush` send up to `sendCapacity` datagrams
/// per sendmmsg (a relay sends several times what it receives: one datagram per listener).
/// Zero allocations per datagram. Owned by one thread.
public final class DatagramBatch {
    /// Receive slots per call.
    public let capacity: Int
    /// Send entries per sendmmsg.
    public let sendCapacity: Int
    /// Bytes per receive slot.
    public let slotSize: Int
    private let socket: UDPSocket
    @usableFromInline let isIPv4: Bool
    private let receiveBuffers: UnsafeMutableRawPointer
    private let receiveHeaders: UnsafeMutablePointer<parley_mmsg>
    private let receiveIOV: UnsafeMutablePointer<iovec>
    private let receiveNames: UnsafeMutablePointer<sockaddr_storage>
    @usableFromInline let sendHeaders: UnsafeMutablePointer<parley_mmsg>
    @usableFromInline let sendIOV: UnsafeMutablePointer<iovec>
    /// One `sockaddr_in6` per send entry (28 bytes, the largest address written), not a 128-byte
    /// `sockaddr_storage`: a batch of a thousand sends then spans a quarter of the cache lines.
    @usableFromInline let sendNames: UnsafeMutablePointer<sockaddr_in6>
    /// Datagrams received by the last `receive()`.
    public private(set) var receivedCount = 0
    /// Datagrams queued for the next `flush()`.
    public var queuedCount: Int { queued }
    @usableFromInline var queued = 0
    /// Datagrams the kernel refused to send (buffer full, unreachable).
    public private(set) var sendFailures = 0

    /// Allocates every slot for `socket` (`sendCapacity` defaults to `capacity`).
    public init(socket: UDPSocket, capacity: Int = 64, sendCapacity: Int? = nil, slotSize: Int = 1536) {
        self.socket = socket
        self.isIPv4 = socket.isIPv4
        self.capacity = capacity
        self.sendCapacity = sendCapacity ?? capacity
        self.slotSize = slotSize
        receiveBuffers = UnsafeMutableRawPointer.allocate(byteCount: capacity * slotSize, alignment: 16)
        receiveHeaders = .allocate(capacity: capacity)
        receiveIOV = .allocate(capacity: capacity)
        receiveNames = .allocate(capacity: capacity)
        sendHeaders = .allocate(capacity: self.sendCapacity)
        sendIOV = .allocate(capacity: self.sendCapacity)
        sendNames = .allocate(capacity: self.sendCapacity)
        for i in 0..<capacity {
            receiveIOV[i] = iovec(iov_base: receiveBuffers + i * slotSize, iov_len: slotSize)
            receiveNames[i] = sockaddr_storage()
        }
        // Every send header points at its own iovec and address slot for good (sendmmsg reads the headers and
        // writes only `msg_len`), so `append` fills in just the bytes, the length and the address.
        for i in 0..<self.sendCapacity {
            sendIOV[i] = iovec()
            sendNames[i] = sockaddr_in6()
            var h = msghdr()
            h.msg_name = UnsafeMutableRawPointer(sendNames + i)
            h.msg_iov = sendIOV + i
            h.msg_iovlen = 1
            sendHeaders[i] = parley_mmsg(msg_hdr: h, msg_len: 0)
        }
    }

    deinit {
        receiveBuffers.deallocate()
        receiveHeaders.deallocate()
        receiveIOV.deallocate()
        receiveNames.deallocate()
        sendHeaders.deallocate()
        sendIOV.deallocate()
        sendNames.deallocate()
    }

    /// Receives up to `capacity` datagrams without blocking; returns how many (0 when none waits).
    public func receive() -> Int {
        for i in 0..<capacity {
            var h = msghdr()
            h.msg_name = UnsafeMutableRawPointer(receiveNames + i)
            h.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
            h.msg_iov = receiveIOV + i
            h.msg_iovlen = 1
            receiveHeaders[i] = parley_mmsg(msg_hdr: h, msg_len: 0)
        }
        let n = parley_recvmmsg(socket.fd, receiveHeaders, UInt32(capacity))
        receivedCount = max(0, Int(n))
        return receivedCount
    }

    /// The bytes of received datagram `i` (valid until the next `receive()`).
    public func datagram(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: receiveBuffers + i * slotSize, count: Int(receiveHeaders[i].msg_len))
    }

    /// The sender of received datagram `i`.
    public func sender(_ i: Int) -> PeerAddress? {
        PeerAddress(storage: UnsafeRawPointer(receiveNames + i))
    }

    /// Queues one datagram (the bytes must stay valid until `flush()`); flushes first when the batch is full.
    /// Inlinable: the worker loop calls it once per outgoing datagram, from another module.
    @inlinable
    public func append(_ bytes: UnsafeRawBufferPointer, to address: PeerAddress) {
        if queued == sendCapacity { flush() }
        let i = queued
        sendIOV[i].iov_base = UnsafeMutableRawPointer(mutating: bytes.baseAddress)
        sendIOV[i].iov_len = bytes.count
        sendHeaders[i].msg_hdr.msg_namelen = address.write(to: UnsafeMutableRawPointer(sendNames + i), ipv4Socket: isIPv4)
        queued += 1
    }

    /// Sends every queued datagram with as few sendmmsg calls as the kernel allows.
    public func flush() {
        var sent = 0
        while sent < queued {
            let n = parley_sendmmsg(socket.fd, sendHeaders + sent, UInt32(queued - sent))
            if n <= 0 {
                // The datagram at `sent` was refused (ENOBUFS/EAGAIN/ECONNREFUSED...): count it and skip it.
                sendFailures += 1
                sent += 1
            } else {
                sent += Int(n)
            }
        }
        queued = 0
    }
}
