import Glibc
import ParleyNet
import ParleyWire
import Testing

@Suite("DatagramBatch on loopback: sends are batched up to sendCapacity, independent of the receive slots")
struct DatagramBatchTests {
    @Test("a send batch larger than the receive batch fills before it flushes; everything arrives in order")
    func sendCapacity() throws {
        let receiver = try UDPSocket(bindingTo: PeerAddress(ipv4: 127, 0, 0, 1, port: 0))
        let sender = try UDPSocket(bindingTo: PeerAddress(ipv4: 127, 0, 0, 1, port: 0))
        let to = try #require(receiver.localAddress)
        let out = DatagramBatch(socket: sender, capacity: 2, sendCapacity: 8)
        let payloads: [[UInt8]] = (0..<9).map { [UInt8($0), 0xAB] }
        for p in payloads.prefix(8) { p.withUnsafeBytes { out.append($0, to: to) } }
        #expect(out.queuedCount == 8)   // with one capacity for both, it would have flushed at 2
        payloads[8].withUnsafeBytes { out.append($0, to: to) }   // full: the first 8 leave, the 9th waits
        #expect(out.queuedCount == 1)
        out.flush()
        #expect(out.queuedCount == 0 && out.pendingCount == 0 && out.counters.problems == 0)
        #expect(out.counters.packetsSent == 9 && out.counters.bytesSent == 18)

        let inbound = DatagramBatch(socket: receiver, capacity: 16)
        let poller = Poller([receiver.fd])
        var received: [[UInt8]] = []
        for _ in 0..<50 where received.count < payloads.count {
            poller.wait(timeoutMilliseconds: 100)
            let n = try inbound.receive()
            for i in 0..<n { received.append(Array(inbound.datagram(i))) }
        }
        #expect(received == payloads)
    }
}

@Suite("Socket errors on loopback reach the counters as values")
struct SocketErrorLoopbackTests {
    static let loopback = PeerAddress(ipv4: 127, 0, 0, 1, port: 0)

    /// Receives whatever arrives at `socket` within about `milliseconds`.
    static func drain(_ socket: UDPSocket, milliseconds: Int = 500) throws -> [[UInt8]] {
        let inbound = DatagramBatch(socket: socket, capacity: 16)
        let poller = Poller([socket.fd])
        var received: [[UInt8]] = []
        for _ in 0..<(milliseconds / 50) {
            poller.wait(timeoutMilliseconds: 50)
            let n = try inbound.receive()
            for i in 0..<n { received.append(Array(inbound.datagram(i))) }
            if n == 0 && !received.isEmpty { break }
        }
        return received
    }

    @Test("a datagram over 65,507 bytes is refused with EMSGSIZE: counted as message_too_large, its neighbours still leave")
    func messageTooLarge() throws {
        let receiver = try UDPSocket(bindingTo: Self.loopback)
        let sender = try UDPSocket(bindingTo: Self.loopback)
        let to = try #require(receiver.localAddress)
        let out = DatagramBatch(socket: sender, capacity: 2, sendCapacity: 8)
        let small: [UInt8] = [1, 2, 3]
        let oversize = [UInt8](repeating: 0x55, count: 70_000)
        let last: [UInt8] = [4, 5]
        small.withUnsafeBytes { out.append($0, to: to) }
        oversize.withUnsafeBytes { out.append($0, to: to) }
        last.withUnsafeBytes { out.append($0, to: to) }
        out.flush()
        #expect(out.counters.sendFailures(.messageTooLarge) == 1)
        #expect(out.counters.problems == 1)
        #expect(out.counters.packetsSent == 2 && out.counters.bytesSent == 5)
        #expect(out.pendingCount == 0)
        #expect(try Self.drain(receiver) == [small, last])
    }

    @Test("port 0 is refused with EINVAL: counted as other, with its errno kept for the log line")
    func otherErrno() throws {
        let sender = try UDPSocket(bindingTo: Self.loopback)
        let out = DatagramBatch(socket: sender, capacity: 2, sendCapacity: 8)
        let bytes: [UInt8] = [9]
        bytes.withUnsafeBytes { out.append($0, to: PeerAddress(ipv4: 127, 0, 0, 1, port: 0)) }
        out.flush()
        #expect(out.counters.sendFailures(.other) == 1 && out.counters.lastOtherErrno == EINVAL)
        #expect(out.counters.packetsSent == 0 && out.counters.bytesSent == 0)
    }

    @Test("a single send (the public port) throws the kernel's error; sendNow counts it with the batch's")
    func singleSend() throws {
        let receiver = try UDPSocket(bindingTo: Self.loopback)
        let publicPort = try UDPSocket(bindingTo: Self.loopback)
        let to = try #require(receiver.localAddress)
        #expect(throws: SocketError.messageTooLarge) { try publicPort.send([UInt8](repeating: 0, count: 70_000), to: to) }
        #expect(throws: Never.self) { try publicPort.send([7], to: to) }

        let worker = DatagramBatch(socket: try UDPSocket(bindingTo: Self.loopback), capacity: 2)
        [UInt8](repeating: 0, count: 70_000).withUnsafeBytes { worker.sendNow($0, to: to, through: publicPort) }
        [UInt8]([8, 8]).withUnsafeBytes { worker.sendNow($0, to: to, through: publicPort) }
        #expect(worker.counters.sendFailures(.messageTooLarge) == 1)
        #expect(worker.counters.packetsSent == 1 && worker.counters.bytesSent == 2)
        #expect(try Self.drain(receiver) == [[7], [8, 8]])
    }

    @Test("receive: an ICMP port unreachable on a connected socket comes back from recvmmsg as connectionRefused")
    func receiveConnectionRefused() throws {
        let closedPort = try #require(try UDPSocket(bindingTo: Self.loopback).localAddress)   // bound, then closed
        let socket = try UDPSocket(bindingTo: Self.loopback)
        var storage = sockaddr_storage()
        let length = withUnsafeMutableBytes(of: &storage) { closedPort.write(to: $0.baseAddress!, ipv4Socket: true) }
        let rc = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket.fd, $0, length) } }
        try #require(rc == 0)
        let batch = DatagramBatch(socket: socket, capacity: 4)
        [UInt8]([1]).withUnsafeBytes { batch.append($0, to: closedPort) }
        batch.flush()
        #expect(batch.counters.packetsSent == 1)
        let poller = Poller([socket.fd])
        poller.wait(timeoutMilliseconds: 1_000)
        #expect(poller.isReadable(0))   // POLLERR
        #expect(throws: SocketError.connectionRefused) { try batch.receive() }
        #expect(batch.counters.receiveFailures(.connectionRefused) == 1)
        #expect(try batch.receive() == 0)   // the error is reported once
    }

    @Test("the poller reports POLLOUT only while asked to watch for it")
    func watchWritable() throws {
        let socket = try UDPSocket(bindingTo: Self.loopback)
        let poller = Poller([socket.fd])
        poller.wait(timeoutMilliseconds: 0)
        #expect(!poller.isWritable(0))
        poller.watchWritable(0, true)
        poller.wait(timeoutMilliseconds: 1_000)
        #expect(poller.isWritable(0) && !poller.isReadable(0))
        poller.watchWritable(0, false)
        poller.wait(timeoutMilliseconds: 0)
        #expect(!poller.isWritable(0))
    }
}
