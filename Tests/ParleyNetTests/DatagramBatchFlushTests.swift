import Glibc
import ParleyNet
import ParleyWire
import Testing

/// Datagrams `0..<count`, each `[index, 0xAB, 0xCD]`, in one buffer that stands for the receive buffers the
/// batch's entries point into (the next receive overwrites it).
final class SourceBuffer {
    let bytes: UnsafeMutableRawBufferPointer
    let count: Int
    static let size = 3
    init(count: Int) {
        self.count = count
        bytes = .allocate(byteCount: count * Self.size, alignment: 16)
        for i in 0..<count { bytes[i * Self.size] = UInt8(i); bytes[i * Self.size + 1] = 0xAB; bytes[i * Self.size + 2] = 0xCD }
    }
    deinit { bytes.deallocate() }
    subscript(i: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[i * Self.size ..< (i + 1) * Self.size]) }
    /// What the next receive does to the memory.
    func overwrite() { for i in 0..<bytes.count { bytes[i] = 0xEE } }
    static func payload(_ i: Int) -> [UInt8] { [UInt8(i), 0xAB, 0xCD] }
}

@Suite("DatagramBatch.flush against a scripted kernel: EAGAIN keeps copies in order, other errors skip one and count")
struct DatagramBatchFlushTests {
    static let to = PeerAddress(ipv4: 192, 0, 2, 7, port: 40_000)
    let socket: UDPSocket
    let kernel = FakeKernel()

    init() throws { socket = try UDPSocket(bindingTo: PeerAddress(ipv4: 127, 0, 0, 1, port: 0)) }

    func batch(sendCapacity: Int = 16, pendingCapacity: Int = 16, slotSize: Int = 1536) -> DatagramBatch {
        DatagramBatch(socket: socket, capacity: 4, sendCapacity: sendCapacity, slotSize: slotSize,
                      pendingCapacity: pendingCapacity, calls: kernel.calls)
    }

    @Test("no error: one sendmmsg, counters are what the kernel took, nothing pending")
    func steadyState() {
        let out = batch()
        let source = SourceBuffer(count: 5)
        for i in 0..<5 { out.append(source[i], to: Self.to) }
        out.flush()
        #expect(kernel.offered == [5])
        #expect(kernel.deliveredBytes == (0..<5).map(SourceBuffer.payload))
        #expect(kernel.delivered.allSatisfy { $0.to == Self.to })
        #expect(out.counters.packetsSent == 5 && out.counters.bytesSent == 15)
        #expect(out.counters.problems == 0 && out.counters.sendsDeferred == 0)
        #expect(out.pendingCount == 0 && out.queuedCount == 0)
    }

    @Test("EAGAIN after 3 of 10: 3 counted as sent, 7 copied; the source is reused; POLLOUT sends the 7 first, then the new ones")
    func wouldBlockKeepsCopiesInOrder() {
        let out = batch()
        let first = SourceBuffer(count: 10)
        kernel.sendScript = [.accept(3), .fail(EAGAIN)]
        for i in 0..<10 { out.append(first[i], to: Self.to) }
        out.flush()
        #expect(kernel.deliveredBytes == (0..<3).map(SourceBuffer.payload))
        #expect(out.counters.packetsSent == 3 && out.counters.bytesSent == 9)
        #expect(out.pendingCount == 7 && out.counters.sendsDeferred == 7)
        #expect(out.counters.problems == 0)   // EAGAIN is not a failure
        first.overwrite()                       // the next receive reuses the buffers the entries pointed into
        #expect(Array(out.pendingDatagram(0)) == SourceBuffer.payload(3))

        // Still full: flush tries the pending ones first, then keeps the new ones behind them.
        let second = SourceBuffer(count: 12)
        kernel.sendScript = [.fail(EAGAIN)]
        for i in 10..<12 { out.append(second[i], to: Self.to) }
        out.flush()
        second.overwrite()
        #expect(out.pendingCount == 9 && out.counters.sendsDeferred == 9)
        #expect(kernel.delivered.count == 3)

        // Writable again.
        out.sendPending()
        #expect(kernel.deliveredBytes == (0..<12).map(SourceBuffer.payload))
        #expect(kernel.delivered.allSatisfy { $0.to == Self.to })
        #expect(out.counters.packetsSent == 12 && out.counters.bytesSent == 36)
        #expect(out.pendingCount == 0 && out.counters.problems == 0)
    }

    @Test("while datagrams are pending, a flush on a writable socket sends them before the new ones")
    func flushDrainsPendingFirst() {
        let out = batch()
        let source = SourceBuffer(count: 6)
        kernel.sendScript = [.fail(EAGAIN)]
        for i in 0..<4 { out.append(source[i], to: Self.to) }
        out.flush()
        #expect(out.pendingCount == 4)
        for i in 4..<6 { out.append(source[i], to: Self.to) }
        out.flush()
        #expect(kernel.offered == [4, 4, 2])
        #expect(kernel.deliveredBytes == (0..<6).map(SourceBuffer.payload))
        #expect(out.pendingCount == 0 && out.counters.packetsSent == 6)
    }

    @Test("a full pending queue drops the newest and counts them as queue_full; the kept ones still leave in order")
    func queueFull() {
        let out = batch(pendingCapacity: 4)
        let source = SourceBuffer(count: 6)
        kernel.sendScript = [.fail(EAGAIN)]
        for i in 0..<6 { out.append(source[i], to: Self.to) }
        out.flush()
        #expect(out.pendingCount == 4)
        #expect(out.counters.sendDrops(.queueFull) == 2 && out.counters.sendsDeferred == 4)
        out.sendPending()
        #expect(kernel.deliveredBytes == (0..<4).map(SourceBuffer.payload))
        #expect(out.pendingCount == 0 && out.counters.packetsSent == 4)
    }

    @Test("a datagram larger than a pending slot cannot wait: dropped as too_large_to_queue")
    func tooLargeToQueue() {
        let out = batch(slotSize: 64)
        let big = [UInt8](repeating: 7, count: 65)
        kernel.sendScript = [.fail(EAGAIN)]
        big.withUnsafeBytes { out.append($0, to: Self.to) }
        out.flush()
        #expect(out.pendingCount == 0)
        #expect(out.counters.sendDrops(.tooLargeToQueue) == 1 && out.counters.sendsDeferred == 0)
    }

    @Test("other errors skip just that datagram and are counted by kind; the rest leave in the same flush")
    func failuresByKind() {
        let out = batch()
        let source = SourceBuffer(count: 6)
        kernel.sendScript = [.accept(2), .fail(EMSGSIZE), .fail(ECONNREFUSED), .fail(EINVAL)]
        for i in 0..<6 { out.append(source[i], to: Self.to) }
        out.flush()
        #expect(kernel.deliveredBytes == [0, 1, 5].map(SourceBuffer.payload))
        #expect(out.counters.sendFailures(.messageTooLarge) == 1)
        #expect(out.counters.sendFailures(.connectionRefused) == 1)
        #expect(out.counters.sendFailures(.other) == 1 && out.counters.lastOtherErrno == EINVAL)
        #expect(out.counters.packetsSent == 3 && out.counters.bytesSent == 9)
        #expect(out.counters.problems == 3)
        #expect(out.pendingCount == 0 && out.counters.sendsDeferred == 0)
    }

    @Test("an error while sending pending datagrams skips that one; EAGAIN again leaves the rest waiting")
    func errorsWhileDraining() {
        let out = batch()
        let source = SourceBuffer(count: 5)
        kernel.sendScript = [.fail(EAGAIN)]
        for i in 0..<5 { out.append(source[i], to: Self.to) }
        out.flush()
        kernel.sendScript = [.accept(1), .fail(ENOBUFS), .fail(EAGAIN)]
        out.sendPending()
        #expect(kernel.deliveredBytes == [SourceBuffer.payload(0)])
        #expect(out.counters.sendFailures(.noBuffers) == 1)
        #expect(out.pendingCount == 3)
        out.sendPending()
        #expect(kernel.deliveredBytes == [0, 2, 3, 4].map(SourceBuffer.payload))
        #expect(out.pendingCount == 0 && out.counters.packetsSent == 4)
    }

    @Test("the pending ring wraps: runs are sent oldest first, one sendmmsg per contiguous run")
    func ringWraps() {
        let out = batch(pendingCapacity: 4)
        let source = SourceBuffer(count: 6)
        kernel.sendScript = [.fail(EAGAIN)]
        for i in 0..<3 { out.append(source[i], to: Self.to) }          // slots 0, 1, 2
        out.flush()
        kernel.sendScript = [.accept(2), .fail(EAGAIN)]
        out.sendPending()                                                // 0 and 1 leave; 2 waits in slot 2
        kernel.sendScript = [.fail(EAGAIN)]
        for i in 3..<6 { out.append(source[i], to: Self.to) }          // slots 3, 0, 1
        out.flush()
        #expect(out.pendingCount == 4 && out.counters.sendDrops(.queueFull) == 0)
        let callsBefore = kernel.offered.count
        out.sendPending()
        #expect(Array(kernel.offered.dropFirst(callsBefore)) == [2, 2])  // slots 2–3, then 0–1
        #expect(kernel.deliveredBytes == (0..<6).map(SourceBuffer.payload))
        #expect(out.pendingCount == 0)
    }

    @Test("appending past sendCapacity flushes; an EAGAIN there keeps the copies and the later ones queue behind them")
    func appendFlushesWhenFull() {
        let out = batch(sendCapacity: 4)
        let source = SourceBuffer(count: 6)
        kernel.sendScript = [.accept(1), .fail(EAGAIN), .fail(EAGAIN)]
        for i in 0..<6 { out.append(source[i], to: Self.to) }   // the 5th append flushes 0–3: 0 leaves, 1–3 wait
        #expect(out.pendingCount == 3 && out.queuedCount == 2)
        out.flush()                                              // still full: 4–5 join the queue
        #expect(out.pendingCount == 5)
        out.sendPending()
        #expect(kernel.deliveredBytes == (0..<6).map(SourceBuffer.payload))
        #expect(out.pendingCount == 0)
    }

    @Test("pending datagrams keep their own addresses", arguments: [true, false])
    func addressesKept(ipv4Socket: Bool) throws {
        let socket = try UDPSocket(bindingTo: ipv4Socket ? PeerAddress(ipv4: 127, 0, 0, 1, port: 0) : PeerAddress(high: 0, low: 1, port: 0))
        let out = DatagramBatch(socket: socket, capacity: 4, sendCapacity: 8, calls: kernel.calls)
        let source = SourceBuffer(count: 3)
        let addresses = [PeerAddress(ipv4: 192, 0, 2, 1, port: 1), PeerAddress(ipv4: 198, 51, 100, 2, port: 65_535),
                         PeerAddress(ipv4: 203, 0, 113, 3, port: 5_004)]
        kernel.sendScript = [.fail(EAGAIN)]
        for i in 0..<3 { out.append(source[i], to: addresses[i]) }
        out.flush()
        out.sendPending()
        #expect(kernel.delivered.map(\.to) == addresses)
    }

    @Test("receive: EAGAIN is 0 datagrams, not a failure; any other errno is thrown as a value and counted")
    func receiveErrors() throws {
        let inbound = batch()
        kernel.receiveScript = [-EAGAIN, -ENOBUFS, -EBADF]
        #expect(try inbound.receive() == 0)
        #expect(throws: SocketError.noBuffers) { try inbound.receive() }
        #expect(throws: SocketError.other(EBADF)) { try inbound.receive() }
        #expect(inbound.receivedCount == 0)
        #expect(inbound.counters.receiveFailures(.noBuffers) == 1 && inbound.counters.receiveFailures(.other) == 1)
        #expect(inbound.counters.receiveFailures(.wouldBlock) == 0)
    }
}
