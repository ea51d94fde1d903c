import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// The relay's reliable queue to each session is bounded: texts to a recipient that does not keep up are refused (the
/// sender is told), speaker lists and mute events waiting to go out are replaced by newer ones, and a session that
/// cannot take even the messages it must have is removed.
@Suite("Bounded signalling queues: slow recipients, text floods, superseded messages")
struct SignallingQueueTests {
    func member(_ net: FakeNetwork, _ identity: String) -> Member? {
        net.core.member(identity: identity)
    }

    func statuses(_ client: FakeClient) -> [(id: UInt32, delivered: Bool, reason: String)] {
        client.events.compactMap { if case .textStatus(let id, let d, let r) = $0 { (id, d, r) } else { nil } }
    }

    @Test("a text flood to a member that never acknowledges holds at most the text limit; the sender hears who lags")
    func textFloodToSlowMember() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        bob.dropOutgoing = true   // bob hears everything and acknowledges nothing
        let text = String(repeating: "x", count: 900)
        var ids: [UInt32] = []
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) {
            for _ in 0..<10 { if let id = alice.session.sendText(text, now: net.instant) { ids.append(id) } }
        }
        #expect(ids.count == 500)   // 450 KB of text
        let bobs = try #require(member(net, "bob"))
        #expect(bobs.session.channel.pendingCount <= net.shared.config.textQueueLimit)
        let refused = statuses(alice).filter { !$0.delivered }
        #expect(refused.count >= 400)
        #expect(refused.allSatisfy { $0.reason == "bob is not keeping up" })
        #expect(statuses(alice).count == ids.count)   // one status per text, delivered or not
        #expect(net.core.counters.signallingDrops(.textRefused) == UInt64(refused.count))
        #expect(net.core.memberCount == 2)            // texts alone never cost bob his membership
    }

    @Test("a room text reaches those who keep up and names the one who does not")
    func roomTextSkipsOnlyTheSlowMember() throws {
        var config = RelayCoreConfig()
        config.textQueueLimit = 8
        let net = FakeNetwork(config: config)
        let alice = net.addClient("alice"), bob = net.addClient("bob"), carol = net.addClient("carol")
        net.joinAll()
        bob.dropOutgoing = true
        for _ in 0..<12 {   // one at a time: carol acknowledges each before the next
            _ = alice.session.sendText("hi", now: net.instant)
            net.exchange()
        }
        #expect(carol.events.filter { if case .text = $0 { true } else { false } }.count == 12)
        let last = try #require(statuses(alice).last)
        #expect(last.delivered && last.reason == "bob is not keeping up")
    }

    @Test("a member that cannot take the room's member events (churn past twice the room's size) is removed, told why, and counted")
    func essentialOverflowRemovesTheMember() throws {
        var config = RelayCoreConfig()
        config.signallingQueueLimit = 40
        config.textQueueLimit = 10
        config.maxMembersPerRoom = 10   // a member's queue holds max(40, 2 × 10 + 64) = 84
        let net = FakeNetwork(config: config)
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        bob.dropOutgoing = true
        for batch in 0..<10 {   // five join, then leave: 10 member events per batch, 100 in all
            let guests = (0..<5).map { net.addClient("guest\(batch * 5 + $0)") }
            net.joinAll()
            net.advance(milliseconds: 20)
            for g in guests { g.session.leave(now: net.instant) }
            net.exchange()
            for g in guests { g.online = false }
        }
        net.advance(milliseconds: 100)
        #expect(member(net, "bob") == nil)
        #expect(bob.events.contains(.goodbye(.timedOut, "not keeping up with signalling")))
        #expect(alice.memberEvents.contains { $0.0 == .left && $0.1 == "bob" && $0.2 == "not keeping up with signalling" })
        #expect(net.core.counters.slowSessionsRemoved == 1)
        #expect(net.core.counters.signallingDrops(.queueFull) >= 1)
        #expect(member(net, "alice") != nil && net.core.memberCount == 1)
    }

    @Test("a join storm that fills a big room removes nobody: each member's queue holds twice the room's size")
    func joinStormKeepsEveryone() throws {
        var config = RelayCoreConfig()
        config.signallingQueueLimit = 64
        config.maxMembersPerRoom = 200
        let net = FakeNetwork(config: config)
        let early = net.addClient("early")
        net.joinAll()
        // The early member cannot acknowledge while 199 others join (as on a real network, where 32 messages are in
        // flight per round trip and the rest wait): 199 member events pile up, far past signalling_queue_limit.
        // Before the room's size counted, the 2,001-member parley-load run lost every member this way.
        early.dropOutgoing = true
        for k in 0..<199 { net.addClient("m\(k)") }
        net.joinAll()
        #expect(member(net, "early") != nil)
        #expect(net.core.counters.slowSessionsRemoved == 0)
        early.dropOutgoing = false
        net.advance(milliseconds: 3_000, stepMilliseconds: 50)
        #expect(early.memberEvents.filter { $0.0 == .joined }.count == 199)
        #expect(net.core.memberCount == 200)
    }

    @Test("mute toggles and speaker lists waiting for a slow member are replaced by the newest, not piled up")
    func supersededMessagesDoNotPileUp() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        bob.dropOutgoing = true
        for i in 0..<600 {
            alice.session.setMuted(i % 2 == 0, now: net.instant)
            net.exchange()
        }
        net.advance(milliseconds: 2_000, stepMilliseconds: 20) { alice.speak(level: (net.instant - .origin) / .milliseconds(100) % 2 == 0 ? 10 : 127) }
        let bobs = try #require(member(net, "bob"))
        #expect(bobs.session.channel.pendingCount <= ReliableChannel.Limits().sendWindow + 2)
        #expect(net.core.counters.signallingDrops(.superseded) > 500)
        // bob catches up and sees alice's last state.
        bob.dropOutgoing = false
        net.advance(milliseconds: 10_000, stepMilliseconds: 50)
        let lastMute = bob.memberEvents.last { $0.1 == "alice" && ($0.0 == .muted || $0.0 == .unmuted) }
        #expect(lastMute?.0 == .unmuted)
        #expect(member(net, "bob")?.session.channel.pendingCount == 0)
    }

    @Test("a direct-text flood to a presence session that never acknowledges is refused once it lags")
    func directTextFloodToSlowPresence() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice"), bob = world.addPresence("bob")
        world.registerAll()
        bob.deaf = true   // acknowledges nothing it never hears
        var ids: [UInt32] = []
        for _ in 0..<200 {
            if let id = alice.session.sendText(to: "bob", String(repeating: "y", count: 900), now: world.net.instant) { ids.append(id) }
            world.exchange()
        }
        let session = try #require(world.core.presence.sessions(of: "bob").first?.session)
        #expect(session.channel.pendingCount <= world.net.shared.config.textQueueLimit)
        let failed = alice.events.filter { if case .textStatus(_, false, "bob is not keeping up") = $0 { true } else { false } }
        #expect(failed.count >= 100)
    }
}
