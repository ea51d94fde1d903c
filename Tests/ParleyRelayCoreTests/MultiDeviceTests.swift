import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// One identity online from several devices (presence sessions): calls ring every device and the first to answer
/// takes the call; a decline withdraws one device; texts reach every device; beyond
/// `maxPresenceSessionsPerIdentity` the oldest is replaced; the same token from a second address is still a replay.
@Suite("Presence on several devices: every device rings, first answer wins, texts to all, bounded, replay-safe")
struct MultiDeviceTests {
    /// A distinct token per device of one identity (tokens differ by their expiry).
    static func device(_ world: CallWorld, _ identity: String, _ n: Int64) -> FakePresenceClient {
        world.addPresence(identity, token: world.token(identity, expiresIn: 3600 + n))
    }

    @Test("two devices of one identity are both online, listed once each with the identity's session count")
    func bothOnline() {
        let world = CallWorld()
        let laptop = Self.device(world, "quinn", 1), phone = Self.device(world, "quinn", 2)
        world.registerAll()
        #expect(laptop.session.state == .registered && phone.session.state == .registered)
        let listed = world.core.presenceSnapshot()
        #expect(listed.map(\.address) == [laptop.address, phone.address])
        #expect(listed.allSatisfy { $0.identity == "quinn" && $0.sessions == 2 })
        #expect(Set(listed.map(\.presenceID)).count == 2)
        #expect(world.core.liveCounts.presenceByIdentity == 2 && world.core.liveCounts.presenceByConnection == 2)
    }

    @Test("a call rings every device; the first to answer takes it, the others are told; the caller sees one call")
    func firstAnswerWins() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice")
        let laptop = Self.device(world, "bob", 1), phone = Self.device(world, "bob", 2)
        world.registerAll()
        let aliceID = try #require(alice.session.call("bob", now: world.net.instant))
        world.exchange()
        let (laptopID, _) = try #require(laptop.incoming.first), (phoneID, _) = try #require(phone.incoming.first)
        #expect(laptopID == phoneID)
        #expect(world.core.callSnapshot().map(\.ringingSessions) == [2])
        #expect(world.core.presenceSnapshot().filter { $0.identity == "bob" }.allSatisfy { $0.callID == laptopID })
        world.answer(phone, phoneID)
        #expect(laptop.lastStatus(laptopID)! == (.ended, "answered on another device"))
        #expect(laptop.session.calls.isEmpty)
        let room = try #require(phone.answered(phoneID)).room
        #expect(alice.answered(aliceID)?.room == room)
        #expect(alice.statuses.map(\.1) == [.ringing, .answered])
        // The late answer from the laptop finds the call over; nothing changes for the parties.
        world.answer(laptop, laptopID)
        #expect(world.core.callSnapshot().count == 1 && world.core.callSnapshot()[0].answered)
        // Hanging up on the answering device ends the call for the caller.
        phone.session.hangUp(phoneID, now: world.net.instant)
        world.exchange()
        #expect(alice.lastStatus(aliceID)! == (.ended, "hung up by bob"))
        #expect(world.eventSummary == ["started alice→bob", "answered alice→bob", "ended:hung_up alice→bob"])
        #expect(world.settled)
    }

    @Test("a decline withdraws one device; the call keeps ringing the others and is declined when the last declines")
    func declineOnOneDevice() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice")
        let laptop = Self.device(world, "bob", 1), phone = Self.device(world, "bob", 2)
        world.registerAll()
        let aliceID = try #require(alice.session.call("bob", now: world.net.instant))
        world.exchange()
        let id = try #require(laptop.incoming.first).0
        world.answer(laptop, id, accept: false)
        #expect(alice.lastStatus(aliceID)! == (.ringing, ""))
        #expect(world.core.callSnapshot().map(\.ringingSessions) == [1])
        world.answer(phone, id, accept: false)
        #expect(alice.lastStatus(aliceID)! == (.declined, "declined by bob"))
        #expect(world.eventSummary == ["started alice→bob", "ended:declined alice→bob"])
        #expect(world.settled)
    }

    @Test("the ring timeout ends the call on every device still ringing")
    func ringTimeoutOnEveryDevice() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice")
        let laptop = Self.device(world, "bob", 1), phone = Self.device(world, "bob", 2)
        world.registerAll()
        let aliceID = try #require(alice.session.call("bob", now: world.net.instant))
        world.exchange()
        let id = try #require(laptop.incoming.first).0
        world.advance(milliseconds: 31_000)
        #expect(alice.lastStatus(aliceID)! == (.noAnswer, "no answer after 30 s"))
        #expect(laptop.lastStatus(id)! == (.ended, "no answer") && phone.lastStatus(id)! == (.ended, "no answer"))
        #expect(world.settled)
    }

    @Test("a ringing device that goes away stops ringing; when the last one goes, the caller hears connection lost")
    func ringingDeviceLeaves() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice")
        let laptop = Self.device(world, "bob", 1), phone = Self.device(world, "bob", 2)
        world.registerAll()
        let aliceID = try #require(alice.session.call("bob", now: world.net.instant))
        world.exchange()
        laptop.session.leave(now: world.net.instant)
        world.exchange()
        #expect(alice.lastStatus(aliceID)! == (.ringing, ""))
        phone.session.leave(now: world.net.instant)
        world.exchange()
        #expect(alice.lastStatus(aliceID)! == (.ended, "connection lost"))
        #expect(world.settled)
    }

    @Test("an identity in a call on one device is busy to callers and cannot place a second call from another")
    func oneCallPerIdentity() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice"), carol = world.addPresence("carol")
        let laptop = Self.device(world, "bob", 1), phone = Self.device(world, "bob", 2)
        world.registerAll()
        let aliceID = try #require(alice.session.call("bob", now: world.net.instant))
        world.exchange()
        let id = try #require(laptop.incoming.first).0
        world.answer(laptop, id)
        // Carol calls bob: his phone is idle, but bob is in a call.
        let carolID = try #require(carol.session.call("bob", now: world.net.instant))
        world.exchange()
        #expect(carol.lastStatus(carolID)! == (.declined, "busy"))
        #expect(phone.incoming.count == 1)
        // Bob's phone calls carol: refused, and the laptop's call goes on.
        let fromPhone = try #require(phone.session.call("carol", now: world.net.instant))
        world.exchange()
        #expect(phone.lastStatus(fromPhone)! == (.failed, "you are already in a call on another device"))
        #expect(carol.incoming.isEmpty)
        #expect(world.core.callSnapshot().count == 1 && alice.lastStatus(aliceID)! == (.answered, ""))
    }

    @Test("a one-shot session (register, text, leave) leaves the identity's running session online and in its call")
    func oneShotDoesNotDisturb() throws {
        let world = CallWorld()
        let (alice, bob, aliceID, bobID) = try world.aliceRingsBob()
        world.answer(bob, bobID)
        let pat = world.addPresence("pat")
        let oneShot = Self.device(world, "bob", 7)
        world.registerAll()
        let mid = try #require(oneShot.session.sendText(to: "pat", "hi", now: world.net.instant))
        world.exchange()
        #expect(oneShot.events.contains(.textStatus(messageID: mid, delivered: true, reason: "")))
        oneShot.session.leave(now: world.net.instant)
        world.exchange()
        #expect(pat.events.contains(.text(from: "bob", text: "hi")))
        #expect(bob.session.state == .registered && !bob.events.contains { if case .goodbye = $0 { true } else { false } })
        #expect(world.core.presenceSnapshot().filter { $0.identity == "bob" }.map(\.address) == [bob.address])
        #expect(world.core.callSnapshot().count == 1 && alice.lastStatus(aliceID)! == (.answered, ""))
    }

    @Test("a direct text reaches every device of the recipient")
    func textsToEveryDevice() throws {
        let world = CallWorld()
        let pat = world.addPresence("pat")
        let laptop = Self.device(world, "quinn", 1), phone = Self.device(world, "quinn", 2)
        world.registerAll()
        let mid = try #require(pat.session.sendText(to: "quinn", "hi", now: world.net.instant))
        world.exchange()
        #expect(laptop.events.contains(.text(from: "pat", text: "hi")))
        #expect(phone.events.contains(.text(from: "pat", text: "hi")))
        #expect(pat.events.contains(.textStatus(messageID: mid, delivered: true, reason: "")))
    }

    @Test("beyond the bound the oldest device is replaced, and told why", arguments: [2, 3])
    func boundReplacesOldest(bound: Int) {
        var config = RelayCoreConfig()
        config.maxPresenceSessionsPerIdentity = bound
        let world = CallWorld(config: config)
        let devices = (0..<bound).map { Self.device(world, "quinn", Int64($0)) }
        world.registerAll()
        #expect(devices.allSatisfy { $0.session.state == .registered })
        let newest = Self.device(world, "quinn", 99)
        world.registerAll()
        let reason = "replaced by a new session (at most \(bound) devices online per identity; this was the oldest)"
        #expect(devices[0].events.contains(.goodbye(.replaced, reason)))
        #expect(devices.dropFirst().allSatisfy { $0.session.state == .registered } && newest.session.state == .registered)
        #expect(world.core.presenceSnapshot().map(\.address) == (devices.dropFirst() + [newest]).map(\.address))
    }

    @Test("the same token from a second address while its session lives is a replay; a second device's own token is not")
    func replayStillDropped() {
        let world = CallWorld()
        let token = world.token("quinn")
        let owner = world.addPresence("quinn", token: token)
        world.registerAll()
        let thief = world.addPresence("quinn", token: token)
        world.registerAll()
        #expect(thief.session.state != .registered)
        #expect(world.core.counters.drops(.tokenReplay) >= 1)
        #expect(owner.session.state == .registered)
        let phone = Self.device(world, "quinn", 5)
        world.registerAll()
        #expect(phone.session.state == .registered)
        #expect(world.core.presenceSnapshot().map(\.address) == [owner.address, phone.address])
    }
}
