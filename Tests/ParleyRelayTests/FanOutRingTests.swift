import Foundation
@testable import ParleyRelay
import ParleyWire
import Synchronization
import Testing

/// The ring one worker passes forwarded packets to another through (`FanOutRing`): single producer, single consumer,
/// no locks. Order and contents survive two threads; a full ring refuses rather than overwrite; the address lists are
/// shared, not copied, and let go once sent.
@Suite("FanOutRing: one worker's packets to another, without locks")
struct FanOutRingTests {
    static let addresses = [PeerAddress(ipv4: 127, 0, 0, 1, port: 5000), PeerAddress(ipv4: 127, 0, 0, 1, port: 5001)]

    @Test("full: push refuses (nothing overwritten); drained, it takes more; too large a packet is refused")
    func bounded() {
        let ring = FanOutRing(capacity: 4, slotSize: 64)
        for k in 0..<4 { #expect([UInt8(k)].withUnsafeBytes { ring.push($0, to: Self.addresses) }) }
        #expect(![UInt8(9)].withUnsafeBytes { ring.push($0, to: Self.addresses) })
        #expect([UInt8](repeating: 0, count: 65).withUnsafeBytes { !ring.push($0, to: []) })
        var seen: [UInt8] = []
        var lists: [[PeerAddress]] = []
        let drained = ring.drain { bytes, addresses in
            seen.append(bytes[0])
            lists.append(addresses)
        }
        #expect(drained == 4)
        #expect(lists.allSatisfy { $0 == Self.addresses })
        #expect(seen == [0, 1, 2, 3] && ring.count == 0)
        #expect([UInt8(4)].withUnsafeBytes { ring.push($0, to: Self.addresses) })
        #expect(ring.count == 1)
    }

    @Test("two threads: 200,000 packets through a ring of 64, every one once and in order, bytes intact")
    func twoThreads() throws {
        let ring = FanOutRing(capacity: 64, slotSize: 16)
        let total = 200_000
        let producerDone = Flag()
        let producer = Thread {
            var k = 0
            while k < total {
                let pushed = withUnsafeBytes(of: UInt64(k).littleEndian) { ring.push($0, to: FanOutRingTests.addresses) }
                if pushed { k += 1 }
            }
            producerDone.set()
        }
        producer.start()
        var next: UInt64 = 0
        var wrong = 0
        let deadline = Date().addingTimeInterval(30)
        while next < UInt64(total), Date() < deadline {
            ring.drain { bytes, addresses in
                let value = bytes.loadUnaligned(as: UInt64.self)
                if value != next || bytes.count != 8 || addresses.count != 2 { wrong += 1 }
                next += 1
            }
        }
        #expect(next == UInt64(total))
        #expect(wrong == 0)
        #expect(ring.count == 0)
        let done = Date().addingTimeInterval(5)
        while !producerDone.isSet, Date() < done { Thread.sleep(forTimeInterval: 0.01) }
        let finished = producerDone.isSet
        #expect(finished)
    }
}

/// A flag one thread sets and another reads.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
