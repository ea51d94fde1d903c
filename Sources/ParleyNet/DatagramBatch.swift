import Glibc
import CParleySys
import ParleyWire

/// Batched datagram I/O with every buffer, `mmsghdr`, `iovec` and address allocated once at creation:
/// `receive` fills up to `capacity` slots with one recvmmsg; `append`+`flush` send up to `sendCapacity` datagrams
/// per sendmmsg (a relay sends several times what it receives: one datagram per listener).
///
/// Errors are values. A full socket (EAGAIN) keeps the unsent datagrams, copied, in a bounded pending queue that
/// `flush` and `sendPending` (on POLLOUT) send first, in order; a full queue drops and counts. Any other error skips
/// that one datagram and counts it by kind. `counters` says what the kernel accepted, byte for byte.
/// Zero allocations per datagram. Owned by one thread.
public final class DatagramBatch {
    /// Receive slots per call.
    public let capacity: Int
    /// Send entries per sendmmsg.
    public let sendCapacity: Int
    /// Bytes per receive slot.
    public let slotSize: Int
    private let socket: UDPSocket
    private let calls: SystemCalls
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
    /// Copies of what a full socket refused, waiting for POLLOUT.
    private let pending: PendingDatagrams
    /// Datagrams received by the last `receive()`.
    public private(set) var receivedCount = 0
    /// Datagrams queued for the next `flush()`.
    public var queuedCount: Int { queued }
    @usableFromInline var queued = 0
    /// Datagrams waiting for the socket to have room again (see `sendPending`).
    public var pendingCount: Int { pending.count }
    /// Slots in the pending queue.
    public var pendingCapacity: Int { pending.capacity }
    /// What the kernel accepted and refused, what waited and what was dropped.
    public private(set) var counters = DatagramCounters()

    /// Allocates every slot for `socket` (`sendCapacity` defaults to `capacity`; `pendingCapacity`, the datagrams
    /// that can wait for a full socket, to `sendCapacity`, each up to `slotSize` bytes). `calls` stands in for the
    /// kernel in tests (the socket's calls unless given).
    public init(socket: UDPSocket, capacity: Int = 64, sendCapacity: Int? = nil, slotSize: Int = 1536,
                pendingCapacity: Int? = nil, calls: SystemCalls? = nil) {
        self.socket = socket
        self.calls = calls ?? socket.calls
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
        pending = PendingDatagrams(capacity: pendingCapacity ?? self.sendCapacity, slotSize: slotSize)
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

    /// Receives up to `capacity` datagrams without blocking; returns how many (0 when none waits). Any other
    /// error is thrown (and counted in `counters.receiveFailures`); nothing was received then.
    public func receive() throws(SocketError) -> Int {
        for i in 0..<capacity {
            var h = msghdr()
            h.msg_name = UnsafeMutableRawPointer(receiveNames + i)
            h.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
            h.msg_iov = receiveIOV + i
            h.msg_iovlen = 1
            receiveHeaders[i] = parley_mmsg(msg_hdr: h, msg_len: 0)
        }
        let n = calls.recvmmsg(socket.fd, receiveHeaders, UInt32(capacity))
        receivedCount = max(0, Int(n))
        guard n < 0 else { return receivedCount }
        let error = SocketError(errno: -n)
        if error == .wouldBlock { return 0 }
        counters.countReceiveFailure(error)
        throw error
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

    /// Sends every queued datagram with as few sendmmsg calls as the kernel allows, after the datagrams still
    /// pending from a full socket (order is kept). A datagram the kernel refuses is counted by kind and skipped.
    /// When the socket is full (EAGAIN) the rest are copied into the pending queue (they may point into buffers the
    /// caller reuses next), or dropped and counted once it is full. Nothing queued points into the caller's memory
    /// afterwards.
    public func flush() {
        guard queued > 0 else { return }
        if pending.count > 0 { sendPending() }
        var sent = 0
        if pending.count == 0 {
            while sent < queued {
                let n = calls.sendmmsg(socket.fd, sendHeaders + sent, UInt32(queued - sent))
                if n > 0 {
                    let accepted = sent + Int(n)
                    for i in sent..<accepted { counters.bytesSent &+= UInt64(sendIOV[i].iov_len) }
                    counters.packetsSent &+= UInt64(n)
                    sent = accepted
                    continue
                }
                let error = SocketError(errno: -n)   // 0 (never returned for a non-empty batch) counts as other(0)
                if error == .wouldBlock { break }
                counters.countSendFailure(error)
                sent += 1
            }
        }
        for i in sent..<queued { keepPending(i) }
        queued = 0
    }

    /// Sends the pending datagrams, oldest first, until none is left or the socket is full again (the loop calls
    /// it when the socket turns writable; `flush` calls it first). Refused ones are counted and skipped.
    public func sendPending() {
        while pending.count > 0 {
            let run = pending.firstRun
            let n = calls.sendmmsg(socket.fd, run.headers, UInt32(run.count))
            if n > 0 {
                for k in 0..<Int(n) { counters.bytesSent &+= UInt64(pending.length(k)) }
                counters.packetsSent &+= UInt64(n)
                pending.removeFirst(Int(n))
                continue
            }
            let error = SocketError(errno: -n)
            if error == .wouldBlock { return }
            counters.countSendFailure(error)
            pending.removeFirst(1)
        }
    }

    /// Sends one datagram at once through `socket` (another socket than the batch's: the relay's public port) and
    /// counts the outcome with this batch's. It is not batched and never waits: a full socket drops it, counted
    /// as a `wouldBlock` failure.
    public func sendNow(_ bytes: UnsafeRawBufferPointer, to address: PeerAddress, through socket: UDPSocket) {
        do {
            try socket.send(bytes, to: address)
            counters.countSent(bytes: bytes.count)
        } catch {
            counters.countSendFailure(error)
        }
    }

    /// Copies queued entry `i` into the pending queue, or counts why it cannot wait.
    private func keepPending(_ i: Int) {
        let bytes = UnsafeRawBufferPointer(start: sendIOV[i].iov_base, count: sendIOV[i].iov_len)
        if let reason = pending.push(bytes, name: UnsafeRawPointer(sendNames + i), nameLength: sendHeaders[i].msg_hdr.msg_namelen) {
            counters.countDrop(reason)
        } else {
            counters.sendsDeferred &+= 1
        }
    }

    /// The bytes of the `offset`-th oldest pending datagram (valid until it is sent or dropped).
    public func pendingDatagram(_ offset: Int) -> UnsafeRawBufferPointer { pending.datagram(offset) }
}
