import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

@Suite("The media path's sender lookup (RecentSenders in front of the session table)")
struct RecentSendersTests {
    @Test("a thousand members on one host, by port, spread over the slots (the mix is not degenerate)")
    func spread() {
        let ports = (0..<1000).map { PeerAddress(ipv4: 127, 0, 0, 1, port: UInt16(40_000 + $0)) }
        let hosts = (0..<1000).map { PeerAddress(ipv4: 10, 0, UInt8($0 >> 8), UInt8($0 & 0xFF), port: 5004) }
        for addresses in [ports, hosts] {
            let slots = Set(addresses.map(RecentSenders.slot(of:)))
            #expect(slots.allSatisfy { (0..<RecentSenders.slots).contains($0) })
            #expect(slots.count >= 600, "\(slots.count) slots for 1,000 addresses")
        }
    }

    /// Alice and bob in a room, bob heard once: his address is remembered.
    func bobSpokeOnce() -> (FakeNetwork, alice: FakeClient, bob: FakeClient) {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        bob.speak(level: 20)
        net.exchange()
        #expect(alice.media[bob.ssrc]?.count == 1)
        return (net, alice, bob)
    }

    @Test("a member that spoke and left is a stranger at its old address")
    func leaverIsForgotten() {
        let (net, alice, bob) = bobSpokeOnce()
        let late = bob.rtp(level: 20)
        bob.session.leave(now: net.instant)
        net.exchange()
        let before = net.core.counters.drops(.unknownSender)
        net.deliverToRelay(late, from: bob.address, port: 7400)
        #expect(net.core.counters.drops(.unknownSender) == before + 1)
        #expect(alice.media[bob.ssrc]?.count == 1)
    }

    @Test("a member that spoke and moved is found at its new address only; a newcomer at the old one is itself")
    func moverAndNewcomer() {
        let (net, alice, bob) = bobSpokeOnce()
        let old = bob.address
        bob.address = PeerAddress(ipv4: 198, 51, 100, 7, port: 61_000)  // NAT rebinding
        net.advance(milliseconds: 6_000, stepMilliseconds: 100)
        #expect(net.core.counters.resumes == 1)
        bob.speak(level: 20)
        net.exchange()
        #expect(alice.media[bob.ssrc]?.count == 2)
        let before = net.core.counters.drops(.unknownSender)
        net.deliverToRelay(bob.rtp(level: 20), from: old, port: 7400)
        #expect(net.core.counters.drops(.unknownSender) == before + 1)
        #expect(alice.media[bob.ssrc]?.count == 2)

        // Another member joins from bob's old address: its packets are its own, not bob's.
        let carol = net.addClient("carol", port: old.port)
        carol.address = old
        net.joinAll()
        carol.speak(level: 20)
        net.exchange()
        #expect(alice.media[carol.ssrc]?.count == 1)
        #expect(alice.media[bob.ssrc]?.count == 2)
    }
}
