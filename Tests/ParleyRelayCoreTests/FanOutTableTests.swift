import ParleyWire
import Testing
@testable import ParleyRelayCore

@Suite("Fan-out table: rebuilt when listeners change, never per packet; per-listener counts stay exact")
struct FanOutTableTests {
    func lobby(_ net: FakeNetwork) throws -> Room { try #require(net.core.rooms["lobby"]) }

    func stats(_ net: FakeNetwork, _ identity: String) -> MemberStats? {
        net.core.snapshot().first?.members.first { $0.identity == identity }?.stats
    }

    func speak(_ net: FakeNetwork, _ speaker: FakeClient, packets: Int) {
        for _ in 0..<packets {
            speaker.speak(level: 30)
            net.exchange()
        }
    }

    @Test("a join or a leave rebuilds the table once; the next packet follows the change; a mute does not")
    func rebuiltOnChange() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob"), carol = net.addClient("carol")
        net.joinAll()
        let room = try lobby(net)
        speak(net, alice, packets: 5)
        let afterFirst = room.fanOut.rebuilds
        speak(net, alice, packets: 20)
        #expect(room.fanOut.rebuilds == afterFirst)   // steady forwarding reads the table, never rebuilds it
        #expect(room.fanOut.count == 3)

        let dave = net.addClient("dave")
        net.joinAll()
        #expect(room.fanOut.isStale)
        speak(net, alice, packets: 5)
        #expect(room.fanOut.rebuilds == afterFirst + 1)
        #expect(dave.media[alice.ssrc]?.count == 5)

        carol.session.leave(now: net.instant)
        net.exchange()
        speak(net, alice, packets: 5)
        #expect(carol.media[alice.ssrc]?.count == 30)   // 5 + 20 + 5 before she left
        #expect(bob.media[alice.ssrc]?.count == 35)
        #expect(room.fanOut.count == 3)

        // A mute changes who is forwarded, not who listens: no rebuild.
        let rebuilds = room.fanOut.rebuilds
        bob.session.setMuted(true, now: net.instant)
        net.exchange()
        speak(net, alice, packets: 3)
        #expect(room.fanOut.rebuilds == rebuilds)
        #expect(bob.media[alice.ssrc]?.count == 38)
        #expect(alice.media.isEmpty)   // the speaker's own entry is skipped
    }

    @Test("per-listener packets and bytes out match what each received, across rebuilds and repeated reads")
    func countsSurviveRebuilds() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let size = UInt64(alice.rtp(level: 30).count)
        speak(net, alice, packets: 7)
        #expect(stats(net, "bob")?.packetsOut == 7)
        let carol = net.addClient("carol")
        net.joinAll()   // the next packet rebuilds the table: bob's 7 are folded into his stats first
        speak(net, alice, packets: 4)
        let bobStats = try #require(stats(net, "bob"))
        #expect(bobStats.packetsOut == 11)
        #expect(bobStats.bytesOut == 11 * size)
        #expect(stats(net, "bob") == bobStats)   // reading twice does not count twice
        #expect(carol.media[alice.ssrc]?.count == 4)
        #expect(stats(net, "carol")?.packetsOut == 4)
        #expect(stats(net, "alice")?.packetsOut == 0)
        #expect(stats(net, "alice")?.packetsIn == 11)
        #expect(net.core.counters.forwarded == 15)
        #expect(bob.media[alice.ssrc]?.count == 11)
    }
}
