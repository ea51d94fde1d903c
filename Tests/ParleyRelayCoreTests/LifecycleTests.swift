import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

@Suite("Member lifecycle: leave, timeout, keepalive, resume, mute, text, shutdown")
struct LifecycleTests {
    @Test("leave is immediate and the room is told")
    func leave() {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        bob.session.leave(now: net.instant)
        net.exchange()
        #expect(alice.memberEvents.last! == (.left, "bob", "left"))
        #expect(net.core.memberCount == 1)
        let goodbye = net.sent.filter { $0.to == bob.address }.compactMap { try? SignalDatagram(parsing: $0.bytes).message }.last
        #expect(goodbye == .goodbye(code: .left, reason: "left"))
    }

    @Test("keepalives hold a member; one silent past the timeout is removed and the others told")
    func timeout() {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        net.advance(milliseconds: 30_000, stepMilliseconds: 100)
        #expect(net.core.memberCount == 2)  // pings every 5 s kept both
        bob.online = false                   // killed: sends nothing more (its last ping was 0–5 s ago)
        net.advance(milliseconds: 9_000, stepMilliseconds: 100)
        #expect(net.core.memberCount == 2)
        net.advance(milliseconds: 7_000, stepMilliseconds: 100)
        #expect(net.core.memberCount == 1)
        #expect(alice.memberEvents.last! == (.left, "bob", "timed out"))
        #expect(net.core.counters.timeouts == 1)
    }

    @Test("a member whose address changes resumes with its session secret; the old address is dropped")
    func resumeAfterRebinding() {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let old = bob.address
        bob.address = PeerAddress(ipv4: 198, 51, 100, 7, port: 61_000)  // NAT rebinding
        net.advance(milliseconds: 6_000, stepMilliseconds: 100)
        #expect(bob.session.state == .joined)
        #expect(bob.events.contains(.resumed))
        #expect(net.core.counters.resumes == 1)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "bob" }?.address == bob.address)
        #expect(!alice.memberEvents.contains { $0.0 == .left })
        // Media now flows from and to the new address; the old one is a stranger.
        bob.speak(level: 20)
        net.exchange()
        #expect(alice.media[bob.ssrc]?.count == 1)
        let stale = bob.rtp(level: 20)
        net.deliverToRelay(stale, from: old, port: 7400)
        #expect(net.core.counters.drops(.unknownSender) >= 1)
    }

    @Test("mute and unmute reach everyone; a muted member is not forwarded")
    func mute() {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        bob.session.setMuted(true, now: net.instant)
        net.exchange()
        #expect(alice.memberEvents.last!.0 == .muted)
        #expect(bob.memberEvents.last!.0 == .muted)
        bob.speak(level: 10)
        net.exchange()
        #expect(alice.media.isEmpty)
        #expect(net.core.counters.drops(.muted) == 1)
        bob.session.setMuted(false, now: net.instant)
        net.exchange()
        bob.speak(level: 10)
        net.exchange()
        #expect(alice.memberEvents.last!.0 == .unmuted)
        #expect(alice.media[bob.ssrc]?.count == 1)
    }

    @Test("a member joining muted is muted in the list others see")
    func joinMuted() {
        let net = FakeNetwork()
        let alice = net.addClient("alice")
        net.addClient("bob", muted: true)
        net.joinAll()
        #expect(alice.events.contains { if case .member(.joined, let m, _) = $0 { m.identity == "bob" && m.flags.contains(.muted) } else { false } })
    }

    @Test("texts reach the room or one identity, with delivered or failed status; 4 KB texts travel in fragments")
    func texts() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob"), carol = net.addClient("carol")
        net.joinAll()
        let long = String(repeating: "é", count: 2048)  // 4096 UTF-8 bytes
        let toRoom = try #require(alice.session.sendText(long, now: net.instant))
        let toBob = try #require(alice.session.sendText("just you", to: "bob", now: net.instant))
        let toNobody = try #require(alice.session.sendText("hello?", to: "dave", now: net.instant))
        #expect(alice.session.sendText(long + "x", now: net.instant) == nil)
        net.exchange()
        #expect(bob.events.contains(.text(from: "alice", direct: false, text: long)))
        #expect(carol.events.contains(.text(from: "alice", direct: false, text: long)))
        #expect(bob.events.contains(.text(from: "alice", direct: true, text: "just you")))
        #expect(!carol.events.contains(.text(from: "alice", direct: true, text: "just you")))
        #expect(alice.events.contains(.textStatus(messageID: toRoom, delivered: true, reason: "")))
        #expect(alice.events.contains(.textStatus(messageID: toBob, delivered: true, reason: "")))
        #expect(alice.events.contains(.textStatus(messageID: toNobody, delivered: false, reason: "dave is not in the room")))
        #expect(net.sent.allSatisfy { $0.bytes.count <= Signalling.maxDatagramSize })
    }

    @Test("signalling survives loss: messages are retransmitted with backoff until acknowledged")
    func retransmission() {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        alice.online = false  // alice hears nothing for a while
        bob.session.setMuted(true, now: net.instant)
        net.exchange()
        net.advance(milliseconds: 1_000, stepMilliseconds: 20)
        #expect(net.core.counters.signallingRetransmissions >= 2)
        alice.online = true
        net.advance(milliseconds: 3_000, stepMilliseconds: 20)
        #expect(alice.memberEvents.filter { $0.0 == .muted }.count == 1)  // delivered exactly once
    }

    @Test("an empty room closes after the empty timeout and frees its place")
    func emptyRoomCloses() {
        var config = RelayCoreConfig()
        config.emptyRoomTimeout = .seconds(5)
        let net = FakeNetwork(config: config)
        let alice = net.addClient("alice")
        net.joinAll()
        alice.session.leave(now: net.instant)
        net.exchange()
        #expect(net.core.roomCount == 1)
        net.advance(milliseconds: 4_900, stepMilliseconds: 100)
        #expect(net.core.roomCount == 1)
        net.advance(milliseconds: 200, stepMilliseconds: 100)
        #expect(net.core.roomCount == 0)
        #expect(net.shared.openRooms == 0)
    }

    @Test("shutdown tells every member the relay is going away")
    func shutdown() {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        net.core.shutdown(now: net.now)
        net.exchange()
        for c in [alice, bob] {
            #expect(c.events.contains { if case .goodbye(.relayShutdown, _) = $0 { true } else { false } })
            #expect(c.session.state == .ended("the relay is shutting down"))
        }
        #expect(net.core.memberCount == 0 && net.shared.openRooms == 0)
    }

    @Test("a long member list arrives in pages, every datagram within 1,200 bytes")
    func paging() throws {
        let net = FakeNetwork()
        for i in 0..<60 { net.addClient(String(repeating: "m", count: 100) + "\(i)") }
        net.joinAll()
        let last = net.addClient("late")
        net.joinAll()
        guard case .memberList(let list)? = last.events.first(where: { if case .memberList = $0 { true } else { false } }) else {
            Issue.record("no member list"); return
        }
        #expect(list.count == 60)
        let pages = net.sent.filter { $0.to == last.address }.compactMap { try? SignalDatagram(parsing: $0.bytes) }
            .filter { if case .memberPage = $0.message { true } else { false } }
        #expect(pages.count >= 3)
        #expect(net.sent.allSatisfy { $0.bytes.count <= Signalling.maxDatagramSize })
    }
}
