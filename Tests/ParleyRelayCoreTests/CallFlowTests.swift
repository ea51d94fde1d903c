import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

@Suite("Calls: ringing, answer into a private room, decline, no answer, unavailable, busy, hang-ups")
struct CallFlowTests {
    @Test("an answered call gives both parties the same private room and their own tokens; only they can join it",
          arguments: [1, 2])
    func answered(workers: Int) throws {
        let world = CallWorld(workers: workers)
        let alice = world.addPresence("alice"), bob = world.addPresence("bob")
        world.registerAll()
        var aliceID: UInt32 = 0, bobID: UInt32 = 0
        // With two workers, call until the room hashes to worker 1, so the join crosses workers.
        for _ in 0..<64 {
            (aliceID, bobID) = try #require(world.ring(alice, bob))
            #expect(aliceID & PresenceSession.outgoingCallIDBit != 0)
            #expect(bob.events.contains(.incomingCall(callID: bobID, from: "alice", name: "Alice")))
            #expect(alice.lastStatus(aliceID)! == (.ringing, ""))
            #expect(alice.session.calls[aliceID]?.phase == .ringing)
            #expect(bob.session.calls[bobID]?.phase == .incoming)
            world.answer(bob, bobID)
            let room = try #require(alice.answered(aliceID)).room
            if world.net.shared.worker(forRoom: room) == workers - 1 { break }
            alice.session.hangUp(aliceID, now: world.net.instant)
            world.exchange()
        }
        let a = try #require(alice.answered(aliceID)), b = try #require(bob.answered(bobID))
        #expect(world.net.shared.worker(forRoom: a.room) == workers - 1)
        #expect(a.room == b.room && a.room.hasPrefix("call-") && a.room.count == 37)
        #expect(a.token != b.token)
        #expect(alice.session.calls[aliceID]?.phase == .answered(room: a.room, token: a.token))
        #expect(world.core.callSnapshot().map(\.answered) == [true])

        // Both join the room with real ClientSessions (on whichever worker owns it).
        let aliceMedia = world.net.addClient("alice", room: a.room, token: a.token)
        let bobMedia = world.net.addClient("bob", room: b.room, token: b.token)
        world.net.joinAll()
        #expect(aliceMedia.session.state == .joined && bobMedia.session.state == .joined)
        let owner = world.net.cores[world.net.shared.worker(forRoom: a.room)]
        #expect(owner.snapshot().first { $0.name == a.room }?.members.map(\.identity).sorted() == ["alice", "bob"])
        bobMedia.speak(level: 20)
        world.net.exchange()
        #expect(aliceMedia.media[bobMedia.ssrc]?.count == 1)

        // A third identity cannot: not with a token for that room (private), nor with a token naming no room (which
        // admits to no room at all).
        for (token, code) in [(world.net.token("carol", room: a.room), RefusalCode.privateRoom), (world.token("carol"), .tokenWrongRoom)] {
            let carol = world.net.addClient("carol", room: a.room, token: token)
            world.net.joinAll()
            #expect(carol.events.contains { if case .refused(code, _) = $0 { true } else { false } })
        }
        // A call-claim token minted with the API secret (an app backend can) still meets the two-member limit.
        let minted = TokenSigner(apiKey: "devkey", apiSecret: FakeNetwork.apiSecret).mint(TokenClaims(
            identity: "carol", room: a.room, expiresAt: world.net.now.unixSeconds + 60, grants: Grants(), call: true))
        let carol = world.net.addClient("carol", room: a.room, token: minted)
        world.net.joinAll()
        #expect(carol.events.contains { if case .refused(.roomFull, _) = $0 { true } else { false } })
        #expect(owner.snapshot().first { $0.name == a.room }?.members.count == 2)
    }

    @Test("a relay-minted call token names the room, carries the call claim, and expires with callTokenLifetimeSeconds")
    func callToken() throws {
        let world = CallWorld()
        let (alice, bob, aliceID, bobID) = try world.aliceRingsBob()
        world.answer(bob, bobID)
        let a = try #require(alice.answered(aliceID))
        let claims = try world.net.shared.verifier.verify(a.token, now: world.net.now.unixSeconds)
        #expect(claims.identity == "alice" && claims.room == a.room && claims.call == true)
        #expect(claims.grants == Grants(join: true, publish: true, subscribe: true, admin: false, create: true))
        #expect(claims.expiresAt == world.net.now.unixSeconds + 3600)
    }

    @Test("a declined call tells the caller who declined")
    func declined() throws {
        let world = CallWorld()
        let (alice, bob, aliceID, bobID) = try world.aliceRingsBob()
        world.answer(bob, bobID, accept: false)
        #expect(alice.lastStatus(aliceID)! == (.declined, "declined by bob"))
        #expect(bob.statuses.isEmpty)
        #expect(world.eventSummary == ["started alice→bob", "ended:declined alice→bob"])
        #expect(world.settled)
    }

    @Test("an unanswered call ends after the ring timeout: noAnswer for the caller, ended for the callee",
          arguments: [30, 5])
    func noAnswer(seconds: Int64) throws {
        var config = RelayCoreConfig()
        config.ringTimeout = .seconds(seconds)
        let world = CallWorld(config: config)
        let (alice, bob, aliceID, bobID) = try world.aliceRingsBob()
        world.advance(milliseconds: seconds * 1000 - 200)
        #expect(alice.lastStatus(aliceID)! == (.ringing, ""))
        #expect(world.core.callSnapshot().count == 1)
        world.advance(milliseconds: 400)
        #expect(alice.lastStatus(aliceID)! == (.noAnswer, "no answer after \(seconds) s"))
        #expect(bob.lastStatus(bobID)! == (.ended, "no answer"))
        #expect(world.core.recentCallEvents.last?.endReason == .noAnswer)
        #expect(world.settled)
        #expect(world.core.presenceSnapshot().count == 2)  // keepalives held both online meanwhile
    }

    @Test("calling an identity that is not online is unavailable at once; calling oneself fails")
    func unavailable() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice")
        world.registerAll()
        let id = try #require(alice.session.call("dave", now: world.net.instant))
        let me = try #require(alice.session.call("alice", now: world.net.instant))
        world.exchange()
        #expect(alice.lastStatus(id)! == (.unavailable, "dave is not online"))
        #expect(alice.lastStatus(me)! == (.failed, "you cannot call yourself"))
        #expect(world.eventSummary == ["started alice→dave", "ended:unavailable alice→dave"])
        #expect(world.settled)
    }

    @Test("a callee already in a call (ringing or answered) is busy")
    func busy() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice"), bob = world.addPresence("bob"), carol = world.addPresence("carol")
        world.registerAll()
        let (_, bobID) = try #require(world.ring(alice, bob))
        let first = try #require(carol.session.call("bob", now: world.net.instant))
        world.exchange()
        #expect(carol.lastStatus(first)! == (.declined, "busy"))
        world.answer(bob, bobID)
        let second = try #require(carol.session.call("alice", now: world.net.instant))
        world.exchange()
        #expect(carol.lastStatus(second)! == (.declined, "busy"))
        #expect(bob.incoming.count == 1 && alice.incoming.isEmpty)
        #expect(world.core.recentCallEvents.compactMap(\.endReason) == [.busy, .busy])
    }

    @Test("the caller hanging up while it rings cancels the call for the callee")
    func cancelledWhileRinging() throws {
        let world = CallWorld()
        let (alice, bob, aliceID, bobID) = try world.aliceRingsBob()
        alice.session.hangUp(aliceID, now: world.net.instant)
        world.exchange()
        #expect(bob.lastStatus(bobID)! == (.ended, "cancelled"))
        #expect(alice.lastStatus(aliceID)! == (.ringing, ""))  // the one hanging up is not told again
        // bob's late answer finds the call over.
        world.advance(milliseconds: 40_000)
        #expect(world.eventSummary == ["started alice→bob", "ended:cancelled alice→bob"])
        #expect(world.settled)
    }

    @Test("either party hanging up after the answer ends the call for the other", arguments: [true, false])
    func hangUpAfterAnswer(callerHangsUp: Bool) throws {
        let world = CallWorld()
        let (alice, bob, aliceID, bobID) = try world.aliceRingsBob()
        world.answer(bob, bobID)
        let (hanger, hangerID, other, otherID) = callerHangsUp ? (alice, aliceID, bob, bobID) : (bob, bobID, alice, aliceID)
        hanger.session.hangUp(hangerID, now: world.net.instant)
        world.exchange()
        #expect(other.lastStatus(otherID)! == (.ended, "hung up by \(hanger.identity)"))
        #expect(hanger.lastStatus(hangerID)?.0 == .answered)
        let ended = try #require(world.core.recentCallEvents.last)
        #expect(ended.kind == .ended && ended.endReason == .hungUp && ended.room.hasPrefix("call-"))
        #expect(world.settled)
        // Free again: they can call each other anew.
        #expect(world.ring(bob, alice) != nil)
    }

    @Test("a callee hanging up a ringing call declines it")
    func calleeHangsUpWhileRinging() throws {
        let world = CallWorld()
        let (alice, bob, aliceID, bobID) = try world.aliceRingsBob()
        bob.session.hangUp(bobID, now: world.net.instant)
        world.exchange()
        #expect(alice.lastStatus(aliceID)! == (.declined, "declined by bob"))
        #expect(world.settled)
    }
}
