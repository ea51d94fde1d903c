import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

@Suite("Presence: register, replacement, timeout and resume, direct texts, call log")
struct CallPresenceTests {
    @Test("register takes a cookie round trip (no reply larger than the request) and puts the identity online")
    func register() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice")
        world.registerAll()
        let retry = try #require(world.net.sent.first)
        #expect(retry.bytes.count <= alice.sentToRelay[0].count)
        guard case .retry = try SignalDatagram(parsing: retry.bytes).message else { Issue.record("no retry"); return }
        #expect(alice.session.state == .registered)
        let w = try #require(alice.session.welcome)
        #expect(w.room == "" && w.mode == "presence" && w.identity == "alice" && w.port == 7400 && w.sessionSecret.count == 32)
        #expect(world.core.presenceSnapshot().map(\.identity) == ["alice"])
        #expect(world.core.counters.presenceRegistered == 1)
        #expect(world.core.memberCount == 0 && world.core.hasMembers)
    }

    @Test("a forged cookie on a register gets only a retry, no larger than the register")
    func noAmplification() throws {
        let world = CallWorld()
        let attacker = PeerAddress(ipv4: 203, 0, 113, 9, port: 4444)
        let register = try SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: .register(RegisterRequest(
            token: world.token("eve"), cookie: [UInt8](repeating: 0xAB, count: JoinCookie.size), nonce: [UInt8](repeating: 1, count: 16)))).serialized()
        world.net.deliverToRelay(register, from: attacker, port: 7400)
        world.exchange()
        let answers = world.net.sent.filter { $0.to == attacker }
        #expect(answers.count == 1 && answers[0].bytes.count <= register.count)
        #expect(world.core.presenceSnapshot().isEmpty)
    }

    @Test("the token is checked as for a join; its room claim is ignored")
    func tokens() {
        let world = CallWorld()
        let roomToken = world.addPresence("alice", token: world.token("alice", room: "lobby"))
        let expired = world.addPresence("eve", token: world.token("eve", expiresIn: -60))
        let noJoin = world.addPresence("mallory", token: world.token("mallory", grants: Grants(join: false)))
        world.registerAll()
        #expect(roomToken.session.state == .registered)
        #expect(expired.events.contains { if case .refused(.tokenExpired, _) = $0 { true } else { false } })
        #expect(noJoin.events.contains { if case .refused(.tokenMissingGrant, _) = $0 { true } else { false } })
        #expect(world.core.presenceSnapshot().map(\.identity) == ["alice"])
    }

    @Test("a register arriving at another worker is handed to worker 0, which holds all presence")
    func handoff() throws {
        let world = CallWorld(workers: 2)
        let from = PeerAddress(ipv4: 172, 16, 9, 9, port: 9999)
        let cookie = world.net.shared.cookies.mint(for: from, unixSeconds: world.net.now.unixSeconds)
        let register = try SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: .register(RegisterRequest(
            token: world.token("alice"), cookie: cookie, nonce: [UInt8](repeating: 1, count: 16)))).serialized()
        world.net.deliverToRelay(register, from: from, port: 7401)
        #expect(world.net.cores[0].presenceSnapshot().map(\.identity) == ["alice"])
        #expect(world.net.cores[1].presenceSnapshot().isEmpty)
    }

    @Test("with one session per identity configured, a second register replaces the first, ending its call for the other party")
    func replaced() throws {
        var config = RelayCoreConfig()
        config.maxPresenceSessionsPerIdentity = 1
        let world = CallWorld(config: config)
        let (alice, bob, aliceID, _) = try world.aliceRingsBob()
        let newBob = world.addPresence("bob", token: world.token("bob", expiresIn: 7200))
        world.registerAll()
        #expect(newBob.session.state == .registered)
        #expect(bob.events.contains(.goodbye(.replaced, "replaced by a new session")))
        #expect(bob.session.state == .ended("replaced by a new session"))
        #expect(alice.lastStatus(aliceID)! == (.ended, "connection lost"))
        #expect(world.core.presenceSnapshot().first { $0.identity == "bob" }?.address == newBob.address)
        #expect(world.settled)
    }

    @Test("a party whose presence times out during a call ends it for the other")
    func timeoutDuringCall() throws {
        let world = CallWorld()
        let (alice, bob, aliceID, bobID) = try world.aliceRingsBob()
        world.answer(bob, bobID)
        world.advance(milliseconds: 20_000)
        #expect(world.core.callSnapshot().count == 1)  // keepalives hold an answered call
        bob.online = false
        world.advance(milliseconds: 21_000)
        #expect(alice.lastStatus(aliceID)! == (.ended, "connection lost"))
        #expect(world.core.presenceSnapshot().map(\.identity) == ["alice"])
        #expect(world.core.recentCallEvents.last?.endReason == .connectionLost)
        #expect(world.settled)
    }

    @Test("leaving during a ringing call ends it for the other; the leaver's client forgets its calls")
    func leaveDuringCall() throws {
        let world = CallWorld()
        let (alice, bob, _, bobID) = try world.aliceRingsBob()
        alice.session.leave(now: world.net.instant)
        world.exchange()
        #expect(bob.lastStatus(bobID)! == (.ended, "connection lost"))
        #expect(alice.session.calls.isEmpty && world.settled)
    }

    @Test("a presence session moving to a new address resumes and keeps its call")
    func resume() throws {
        let world = CallWorld()
        let (alice, bob, aliceID, bobID) = try world.aliceRingsBob()
        world.answer(bob, bobID)
        bob.address = PeerAddress(ipv4: 198, 51, 100, 7, port: 61_000)
        world.advance(milliseconds: 6_000)
        #expect(bob.events.contains(.resumed) && bob.session.state == .registered)
        #expect(world.core.presenceSnapshot().first { $0.identity == "bob" }?.address == bob.address)
        bob.session.hangUp(bobID, now: world.net.instant)
        world.exchange()
        #expect(alice.lastStatus(aliceID)! == (.ended, "hung up by bob"))
    }

    @Test("direct texts reach an online identity's presence, with delivered or failed status")
    func directTexts() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice"), bob = world.addPresence("bob")
        world.registerAll()
        let long = String(repeating: "é", count: 2048)  // 4096 UTF-8 bytes, 5 fragments
        let toBob = try #require(alice.session.sendText(to: "bob", long, now: world.net.instant))
        let toDave = try #require(alice.session.sendText(to: "dave", "hello?", now: world.net.instant))
        world.exchange()
        #expect(bob.events.contains(.text(from: "alice", text: long)))
        #expect(alice.events.contains(.textStatus(messageID: toBob, delivered: true, reason: "")))
        #expect(alice.events.contains(.textStatus(messageID: toDave, delivered: false, reason: "dave is not online")))
        #expect(world.net.sent.allSatisfy { $0.bytes.count <= Signalling.maxDatagramSize })
    }

    @Test("call events are recorded in order, drained once, and the log is bounded")
    func callEvents() throws {
        var config = RelayCoreConfig()
        config.callEventCapacity = 6
        let world = CallWorld(config: config)
        let alice = world.addPresence("alice"), bob = world.addPresence("bob")
        world.registerAll()
        _ = alice.session.call("dave", now: world.net.instant)
        world.exchange()
        let (_, first) = try #require(world.ring(alice, bob))
        world.answer(bob, first, accept: false)
        let (_, second) = try #require(world.ring(alice, bob))
        world.answer(bob, second)
        bob.session.hangUp(second, now: world.net.instant)
        world.exchange()
        // 7 events into a log of 6: the oldest is overwritten.
        #expect(world.eventSummary == ["ended:unavailable alice→dave", "started alice→bob", "ended:declined alice→bob",
                                       "started alice→bob", "answered alice→bob", "ended:hung_up alice→bob"])
        #expect(world.core.callEventsOverwritten == 1)
        let events = world.core.recentCallEvents
        #expect(events[4].room == events[5].room && events[5].detail == "hung up by bob")
        #expect(events.map(\.unixMilliseconds) == events.map(\.unixMilliseconds).sorted())
        #expect(world.core.drainCallEvents().count == 6)
        #expect(world.core.recentCallEvents.isEmpty && world.core.drainCallEvents().isEmpty)
        #expect(world.core.counters.callsStarted == 2 && world.core.counters.callsAnswered == 1)
    }

    @Test("shutdown tells presence sessions goodbye and ends their calls")
    func shutdown() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice"), bob = world.addPresence("bob")
        world.registerAll()
        _ = try #require(world.ring(alice, bob))
        world.core.shutdown(now: world.net.now)
        world.exchange()
        for p in [alice, bob] {
            #expect(p.events.contains(.goodbye(.relayShutdown, "the relay is shutting down")))
            #expect(p.session.calls.isEmpty)
        }
        #expect(world.core.presenceSnapshot().isEmpty && world.core.callSnapshot().isEmpty)
        #expect(world.core.recentCallEvents.last?.endReason == .connectionLost)
    }

    @Test("a presence client that hears nothing gives up: no answer to register, or lost contact ending its calls")
    func clientGivesUp() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice"), bob = world.addPresence("bob")
        let ghost = world.addPresence("ghost")
        ghost.deaf = true
        world.registerAll()
        world.advance(milliseconds: 6_000)
        #expect(ghost.events.last == .ended("no answer from the relay at \(world.net.publicAddress)"))
        #expect(ghost.sentToRelay.count == 10)

        let (aliceID, _) = try #require(world.ring(alice, bob))
        alice.deaf = true
        world.advance(milliseconds: 21_000)
        #expect(alice.session.state == .ended("lost contact with the relay"))
        #expect(alice.events.suffix(2) == [.ended("lost contact with the relay"),
                                           .callStatus(callID: aliceID, state: .ended, reason: "connection lost", room: nil, token: nil)])
        #expect(alice.session.calls.isEmpty)
    }
}
