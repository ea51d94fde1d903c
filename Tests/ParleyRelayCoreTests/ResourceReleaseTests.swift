import ParleyAuth
import ParleyClientCore
import ParleyCrypto
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// Weak references to the core's objects (rooms, members, presence sessions, calls), to check they were freed.
final class ObjectWatch {
    private final class Reference {
        weak var object: AnyObject?
        let label: String
        init(_ object: AnyObject, _ label: String) {
            self.object = object
            self.label = label
        }
    }

    private var references: [ObjectIdentifier: Reference] = [:]

    /// Watches every room, member, presence session and call the cores hold right now.
    func watchEverything(in cores: [RelayCore]) {
        for core in cores {
            for room in core.rooms.values {
                watch(room, "room \(room.name)")
                for m in room.members { watch(m, "member \(m.identity) of \(room.name)") }
            }
            for entry in core.sessions.byConnection.values {
                switch entry {
                case .member(let m): watch(m, "member \(m.identity) of \(m.room.name)")
                case .presence(let p): watch(p, "presence \(p.identity)")
                }
            }
            for c in core.calls.active.values { watch(c, "call \(c.caller.identity) → \(c.calleeIdentity)") }
        }
    }

    private func watch(_ object: AnyObject, _ label: String) {
        let id = ObjectIdentifier(object)
        if references[id]?.object == nil { references[id] = Reference(object, label) }
    }

    /// How many objects were watched.
    var watched: Int { references.count }
    /// The watched objects still allocated.
    var alive: [String] { references.values.filter { $0.object != nil }.map(\.label).sorted() }
}

@Suite("Resource release: whatever a member, endpoint, presence session, call or room holds is freed when it ends")
struct ResourceReleaseTests {
    static func config() -> RelayCoreConfig {
        var config = RelayCoreConfig()
        config.emptyRoomTimeout = .seconds(2)
        return config
    }

    /// Every table of every core empty.
    static func expectEmpty(_ world: CallWorld, _ watch: ObjectWatch, sourceLocation: SourceLocation = #_sourceLocation) {
        for core in world.net.cores {
            #expect(core.liveCounts == .empty, "worker \(core.workerIndex): \(core.liveCounts)", sourceLocation: sourceLocation)
        }
        #expect(world.net.shared.openRooms == 0, sourceLocation: sourceLocation)
        #expect(watch.alive == [], "still allocated", sourceLocation: sourceLocation)
    }

    @Test("forward room: leave, timeout, kick, replacement, rejoin and room close free every member and the room",
          arguments: [1, 2])
    func forwardRoom(workers: Int) {
        let world = CallWorld(config: Self.config(), workers: workers)
        let net = world.net
        let watch = ObjectWatch()
        let names = ["alice", "bob", "carol", "dave", "erin", "frank"]
        let c = names.map { net.addClient($0) }
        net.joinAll()
        #expect(c.allSatisfy { $0.session.state == .joined })
        // Speech from two members: the fan-out table is built, NACK histories filled, speaker lists pushed.
        net.advance(milliseconds: 400, stepMilliseconds: 20) {
            c[0].speak(level: 20)
            c[1].speak(level: 30)
        }
        watch.watchEverything(in: net.cores)
        #expect(watch.watched == names.count + 1)

        c[1].session.leave(now: net.instant)                     // bob leaves
        net.exchange()
        c[2].online = false                                          // carol's client dies: timeout
        let owner = net.cores[net.shared.worker(forRoom: "lobby")]
        #expect(owner.kick(room: "lobby", identity: "dave", now: net.now) == .ok)
        let erin = net.addClient("erin", token: net.token("erin", expiresIn: 7200))  // a new device replaces erin
        net.joinAll()
        #expect(erin.session.state == .joined)
        net.advance(milliseconds: 200, stepMilliseconds: 20) { c[0].speak(level: 20) }
        watch.watchEverything(in: net.cores)
        net.advance(milliseconds: 16_000, stepMilliseconds: 100) { c[0].speak(level: 20) }
        #expect(owner.counters.timeouts == 1)
        #expect(owner.snapshot().first?.members.map(\.identity).sorted() == ["alice", "erin", "frank"])
        watch.watchEverything(in: net.cores)

        #expect(owner.closeRoom(name: "lobby", reason: "closed by the backend", now: net.now) == .ok)
        net.exchange()
        #expect(owner.memberCount == 0)
        Self.expectEmpty(world, watch)
    }

    @Test("a room whose members all left closes after its empty timeout and is freed with them")
    func emptiedRoomTimesOut() {
        let world = CallWorld(config: Self.config())
        let net = world.net
        let watch = ObjectWatch()
        let c = ["alice", "bob", "carol"].map { net.addClient($0) }
        net.joinAll()
        net.advance(milliseconds: 400, stepMilliseconds: 20) { c[0].speak(level: 20) }
        watch.watchEverything(in: net.cores)
        for client in c { client.session.leave(now: net.instant) }
        net.exchange()
        #expect(net.core.roomCount == 1)  // kept until the empty timeout
        net.advance(milliseconds: 2_100, stepMilliseconds: 100)
        Self.expectEmpty(world, watch)
    }

    @Test("mix room: the mixer's inputs and the members it last mixed for are freed")
    func mixRoom() throws {
        let world = CallWorld(config: Self.config())
        let net = world.net
        let watch = ObjectWatch()
        let speakers = try ["mia", "max"].enumerated().map { i, n in
            try ToneMember(net.addClient(n, room: "mixroom", token: net.token(n, room: "mixroom", mode: "mix")), frequency: 440 + 300 * Double(i))
        }
        let lou = net.addClient("lou", room: "mixroom", token: net.token("lou", room: "mixroom", grants: Grants(publish: false), mode: "mix"))
        net.joinAll()
        net.advance(milliseconds: 600, stepMilliseconds: 20) { for s in speakers { try? s.send() } }
        #expect(net.core.rooms["mixroom"]?.mix?.encodes ?? 0 > 0)
        watch.watchEverything(in: net.cores)
        for client in speakers.map(\.client) + [lou] { client.session.leave(now: net.instant) }
        net.exchange()
        net.advance(milliseconds: 2_100, stepMilliseconds: 20)
        Self.expectEmpty(world, watch)
    }

    @Test("RTP endpoints: deleted, timed out, latched or waiting, and removed with their room, are freed")
    func rtpEndpoints() throws {
        let world = CallWorld(config: Self.config())
        let net = world.net
        let core = net.core
        let watch = ObjectWatch()
        #expect(core.createRoom(name: "studio", mode: nil, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        let sam = net.addClient("sam", room: "studio")
        net.joinAll()
        // SRTP endpoints, so their libsrtp sessions are among what must be freed (the senders' cleartext packets are
        // dropped unauthenticated; the endpoints are freed all the same).
        let keys = RTPEndpointKeys(endpointSends: SDESKey(bytes: Array(repeating: 1, count: 30))!,
                                   relaySends: SDESKey(bytes: Array(repeating: 2, count: 30))!)
        func create(_ identity: String, publish: Bool, subscribe: Bool, source: PeerAddress?, receive: PeerAddress?) {
            let result = core.createRTPEndpoint(room: "studio", identity: identity, displayName: nil, publish: publish,
                                                subscribe: subscribe, source: source, receive: receive, keys: keys, now: net.now)
            if case .rtpEndpoint = result {} else { Issue.record("\(identity): \(result)") }
        }
        let camAddress = PeerAddress(ipv4: 172, 16, 0, 9, port: 40_000), micAddress = PeerAddress(ipv4: 172, 16, 0, 9, port: 40_004)
        create("cam", publish: true, subscribe: true, source: nil, receive: camAddress)                // sends, then deleted
        create("mic", publish: true, subscribe: false, source: micAddress, receive: nil)               // sends, then times out
        create("rec", publish: false, subscribe: true, source: nil, receive: PeerAddress(ipv4: 172, 16, 0, 9, port: 40_002))  // until the room closes
        create("idle", publish: true, subscribe: true, source: PeerAddress(ipv4: 172, 16, 0, 9, port: 40_006), receive: nil)  // never sends: times out
        create("ear", publish: false, subscribe: true, source: nil, receive: PeerAddress(ipv4: 172, 16, 0, 9, port: 40_008))  // until the room closes
        let cam = PlainRTPSender(address: camAddress, ssrc: 77)
        let mic = PlainRTPSender(address: micAddress, ssrc: 78)
        net.advance(milliseconds: 400, stepMilliseconds: 20) {
            cam.send(net)
            sam.speak(level: 20)
        }
        mic.send(net)
        watch.watchEverything(in: net.cores)
        // sam; the sources of cam, mic and idle; and the RTCP addresses, all named at creation, not learned: the next
        // port of each source (tools without RTCP multiplexing), a subscriber's receive address and the next.
        #expect(core.liveCounts.byAddress == 11)
        #expect(core.deleteRTPEndpoint(room: "studio", identity: "cam", now: net.now) == .ok)
        net.advance(milliseconds: 16_000, stepMilliseconds: 100) { sam.speak(level: 20) }
        #expect(core.snapshot().first?.members.map(\.identity).sorted() == ["ear", "rec", "sam"])
        #expect(core.closeRoom(name: "studio", reason: "done", now: net.now) == .ok)
        net.exchange()
        Self.expectEmpty(world, watch)
    }

    @Test("presence and calls: answered, hung up, declined, unanswered, replaced, left and timed out sessions are freed")
    func presenceAndCalls() throws {
        var config = Self.config()
        config.maxPresenceSessionsPerIdentity = 1  // so a second device replaces the first
        let world = CallWorld(config: config)
        let net = world.net
        let watch = ObjectWatch()
        let alice = world.addPresence("alice"), bob = world.addPresence("bob"), carol = world.addPresence("carol")
        let dave = world.addPresence("dave"), erin = world.addPresence("erin")
        world.registerAll()
        // alice calls bob, bob answers; both join the private room and talk; alice hangs up; both leave the room.
        let (aliceID, bobID) = try #require(world.ring(alice, bob))
        world.answer(bob, bobID)
        let a = try #require(alice.answered(aliceID)), b = try #require(bob.answered(bobID))
        let aliceMedia = net.addClient("alice", room: a.room, token: a.token), bobMedia = net.addClient("bob", room: b.room, token: b.token)
        net.joinAll()
        net.advance(milliseconds: 200, stepMilliseconds: 20) { aliceMedia.speak(level: 20) }
        // carol calls dave, who declines; then erin, whose ring times out.
        let (carolID, daveID) = try #require(world.ring(carol, dave))
        world.answer(dave, daveID, accept: false)
        #expect(carol.lastStatus(carolID)?.0 == .declined)
        _ = try #require(world.ring(carol, erin))
        watch.watchEverything(in: net.cores)
        #expect(watch.watched == 5 + 2 + 1 + 2)  // presences, calls, the call room, its members

        alice.session.hangUp(aliceID, now: net.instant)
        world.exchange()
        for m in [aliceMedia, bobMedia] { m.session.leave(now: net.instant) }
        net.exchange()
        world.advance(milliseconds: (net.shared.config.ringTimeout + .milliseconds(500)).milliseconds)
        #expect(world.core.callSnapshot().isEmpty)
        // bob registers again from a new device (replaced); dave leaves; erin's client dies (timeout).
        let newBob = world.addPresence("bob", token: world.token("bob", expiresIn: 7200))
        world.registerAll()
        dave.session.leave(now: net.instant)
        erin.online = false
        world.exchange()
        watch.watchEverything(in: net.cores)
        world.advance(milliseconds: 16_000)
        #expect(world.core.presenceSnapshot().map(\.identity) == ["alice", "bob", "carol"])
        for p in [alice, newBob, carol] { p.session.leave(now: net.instant) }
        world.exchange()
        world.advance(milliseconds: 2_100)
        Self.expectEmpty(world, watch)
    }

    @Test("shutdown frees every room, member and presence session")
    func shutdown() throws {
        let world = CallWorld(config: Self.config())
        let net = world.net
        let watch = ObjectWatch()
        let c = ["alice", "bob"].map { net.addClient($0) }
        world.addPresence("carol")
        world.addPresence("dave")
        net.joinAll()
        world.registerAll()
        net.advance(milliseconds: 400, stepMilliseconds: 20) { c[0].speak(level: 20) }
        _ = try #require(world.ring(world.presences[0], world.presences[1]))
        watch.watchEverything(in: net.cores)
        net.core.shutdown(now: net.now)
        Self.expectEmpty(world, watch)
    }
}
