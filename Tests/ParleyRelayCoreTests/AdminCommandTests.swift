import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

@Suite("Admin commands from the HTTP API: create, close, kick, mute, backend texts, events")
struct AdminCommandTests {
    @Test("a room created empty admits joiners whose token may not create, honours max_members, and closes after its own empty timeout")
    func createRoom() {
        let net = FakeNetwork()
        #expect(net.core.createRoom(name: "lobby", mode: .mix, maxMembers: 1, emptyTimeout: .seconds(2), now: net.now) == .ok)
        #expect(net.core.createRoom(name: "lobby", mode: nil, maxMembers: nil, emptyTimeout: nil, now: net.now) == .conflict("room lobby already exists"))
        #expect(net.core.snapshot().map(\.mode) == [.mix])
        let noCreate = Grants(join: true, publish: true, subscribe: true, admin: false, create: false)
        let alice = net.addClient("alice", token: net.token("alice", grants: noCreate))
        let bob = net.addClient("bob", token: net.token("bob", grants: noCreate))
        net.joinAll()
        #expect(alice.session.welcome != nil)
        #expect(bob.events.contains { if case .refused(.roomFull, _) = $0 { true } else { false } })
        alice.session.leave(now: net.instant)
        net.exchange()
        net.advance(milliseconds: 2_100, stepMilliseconds: 100)
        #expect(net.core.roomCount == 0)
        #expect(net.shared.openRooms == 0)
        let kinds = net.core.drainEvents().map(\.kind)
        #expect(kinds == [.roomStarted, .memberJoined, .memberLeft, .roomClosed])
        #expect(net.core.drainEvents().isEmpty)
    }

    @Test("closing a room tells every member why (roomClosed) and returns its reservation")
    func closeRoom() {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        #expect(net.core.closeRoom(name: "lobby", reason: "closed by the backend", now: net.now) == .ok)
        net.exchange()
        for c in [alice, bob] { #expect(c.events.contains(.goodbye(.roomClosed, "closed by the backend"))) }
        #expect(net.core.roomCount == 0 && net.core.memberCount == 0 && net.shared.openRooms == 0)
        #expect(net.core.closeRoom(name: "lobby", reason: "x", now: net.now) == .notFound("room lobby does not exist"))
        #expect(net.core.drainEvents().last?.kind == .roomClosed)
    }

    @Test("kick and mute by room and identity; unknown rooms and members are not found")
    func kickAndMute() {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        #expect(net.core.setMuted(room: "lobby", identity: "bob", muted: true, now: net.now) == .ok)
        net.exchange()
        #expect(alice.memberEvents.contains { $0.0 == .muted && $0.1 == "bob" })
        #expect(net.core.snapshot()[0].members.first { $0.identity == "bob" }?.muted == true)
        #expect(net.core.kick(room: "lobby", identity: "bob", now: net.now) == .ok)
        net.exchange()
        #expect(bob.events.contains(.goodbye(.kicked, "kicked by the backend")))
        #expect(alice.memberEvents.last! == (.left, "bob", "kicked by the backend"))
        #expect(net.core.kick(room: "lobby", identity: "bob", now: net.now) == .notFound("bob is not in room lobby"))
        #expect(net.core.setMuted(room: "nowhere", identity: "alice", muted: true, now: net.now) == .notFound("room nowhere does not exist"))
        let kinds = net.core.drainEvents().map(\.kind)
        #expect(kinds.suffix(2) == [.memberMuted, .memberLeft])
    }

    @Test("a mute from the backend is the room's: the member is told, her own unmute is refused with why, a rejoin stays muted, the backend lifts it")
    func backendMuteHolds() {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        #expect(net.core.setMuted(room: "lobby", identity: "alice", muted: true, now: net.now) == .ok)
        net.exchange()
        func lastEntry(_ c: FakeClient, about who: FakeClient) -> (MemberEventKind, MemberEntry, String)? {
            for case .member(let kind, let m, let reason) in c.events.reversed() where m.memberID == who.memberID { return (kind, m, reason) }
            return nil
        }
        // Alice hears about herself: muted, and by the room; so does the room.
        #expect(lastEntry(alice, about: alice)?.0 == .muted)
        #expect(lastEntry(alice, about: alice)?.1.flags.contains(.mutedByRoom) == true)
        #expect(lastEntry(bob, about: alice)?.1.flags.isSuperset(of: [.muted, .mutedByRoom]) == true)
        // Her own unmute changes nothing: she is told again, with the reason; the room hears nothing new.
        let bobEvents = bob.events.count
        alice.session.setMuted(false, now: net.instant)
        net.exchange()
        #expect(net.core.member(identity: "alice")?.muted == true)
        #expect(lastEntry(alice, about: alice)?.0 == .muted)
        #expect(lastEntry(alice, about: alice)?.2 == "only the room can unmute you")
        #expect(bob.events.count == bobEvents)
        alice.speak(level: 10)
        net.exchange()
        #expect(bob.media[alice.ssrc] == nil)
        // Leaving and joining again does not escape it.
        alice.session.leave(now: net.instant)
        net.exchange()
        let again = net.addClient("alice")
        net.joinAll()
        #expect(again.session.welcome?.flags.isSuperset(of: [.muted, .mutedByRoom]) == true)
        // The backend lifts it: unmuted, flag gone, and her own mute and unmute work again.
        #expect(net.core.setMuted(room: "lobby", identity: "alice", muted: false, now: net.now) == .ok)
        net.exchange()
        #expect(lastEntry(again, about: again)?.0 == .unmuted)
        #expect(lastEntry(again, about: again)?.1.flags.contains(.mutedByRoom) == false)
        #expect(net.core.member(identity: "alice")?.muted == false)
        again.session.setMuted(true, now: net.instant)
        net.exchange()
        again.session.setMuted(false, now: net.instant)
        net.exchange()
        #expect(net.core.member(identity: "alice")?.muted == false)
        #expect(lastEntry(bob, about: again)?.0 == .unmuted)
    }

    @Test("a text from the backend reaches every member as from \"backend\"")
    func backendText() {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        #expect(net.core.sendText(room: "lobby", text: "maintenance at noon", now: net.now) == .ok)
        net.exchange()
        for c in [alice, bob] { #expect(c.events.contains(.text(from: "backend", direct: false, text: "maintenance at noon"))) }
        #expect(net.core.sendText(room: "lobby", text: "", now: net.now) != .ok)
    }

    @Test("the event log is bounded: the oldest events go first and are counted")
    func boundedLog() {
        var log = RelayEventLog(capacity: 3)
        for i in 0..<5 { log.append(RelayEvent(kind: .memberJoined, room: "r", identity: "m\(i)", unixMilliseconds: 0)) }
        #expect(log.drain().map(\.identity) == ["m2", "m3", "m4"])
        #expect(log.overwritten == 2)
        #expect(log.revision == 5)
    }
}
