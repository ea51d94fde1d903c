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
        #expect(out.queuedCount == 0 && out.sendFailures == 0)

        let inbound = DatagramBatch(socket: receiver, capacity: 16)
        let poller = Poller([receiver.fd])
        var received: [[UInt8]] = []
        for _ in 0..<50 where received.count < payloads.count {
            poller.wait(timeoutMilliseconds: 100)
            let n = inbound.receive()
            for i in 0..<n { received.append(Array(inbound.datagram(i))) }
        }
        #expect(received == payloads)
    }
}
