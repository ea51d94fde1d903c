import ParleySIP
import Testing

@Suite("SIP: RFC 4733 telephone-events sent to a phone")
struct DTMFSenderTests {
    @Test("a digit is 5 growing packets (marker on the first), 3 ends, 3 silent ticks; the collector reads it back")
    func oneDigit() {
        var sender = DTMFSender(clockRate: 8_000)
        #expect(sender.idle)
        let queued = sender.enqueue("5")
        #expect(queued)
        var packets: [DTMFSender.Packet?] = []
        for _ in 0..<11 { packets.append(sender.tick()) }
        #expect(sender.idle)
        let sent = packets.compactMap { $0 }
        #expect(sent.map(\.duration) == [160, 320, 480, 640, 800, 800, 800, 800])
        #expect(sent.map(\.end) == [false, false, false, false, false, true, true, true])
        #expect(sent.map(\.starts) == [true, false, false, false, false, false, false, false])
        #expect(packets.suffix(3) == [nil, nil, nil])
        #expect(sent[0].payload == [5, 10, 0, 160] && sent[7].payload == [5, 0x8A, 3, 32])
        // What the gateway's own reader (the PIN lobby's) makes of it: one press of 5.
        var collector = DTMFCollector()
        for p in sent { _ = p.payload.withUnsafeBytes { collector.take($0, timestamp: 1_000) } }
        #expect(collector.digits == ["5"])
    }

    @Test("digits follow one another; keys are 0-9 * # A-D in either case; anything else or too many is refused")
    func digits() {
        var sender = DTMFSender(clockRate: 8_000)
        let queued = sender.enqueue("1*#d")
        #expect(queued)
        var events: [UInt8] = []
        for _ in 0..<44 { if let p = sender.tick(), p.starts { events.append(p.event) } }
        #expect(events == [1, 10, 11, 15] && sender.idle)
        let refused = sender.enqueue("12x")
        #expect(!refused && sender.idle)
        #expect(DTMFSender.codes("") == [] && DTMFSender.codes("9a") == [9, 12])
        let full = sender.enqueue(String(repeating: "1", count: DTMFSender.capacity))
        let over = sender.enqueue("1")
        #expect(full && !over)
    }
}
