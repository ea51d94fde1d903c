import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

@Suite("Joining: cookie round trip, tokens, rooms, limits")
struct JoinTests {
    @Test("a join is answered with a cookie no larger than the join, then a welcome and the member list")
    func handshake() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice")
        net.joinAll()
        // The first datagram from an unverified address got a retry that is not larger than it.
        let firstJoin = alice.sentToRelay[0]
        let retry = try #require(net.sent.first)
        #expect(retry.bytes.count <= firstJoin.count)
        guard case .retry(let cookie) = try SignalDatagram(parsing: retry.bytes).message else { Issue.record("no retry"); return }
        #expect(cookie.count == JoinCookie.size)
        #expect(alice.session.state == .joined)
        let welcome = try #require(alice.session.welcome)
        #expect(welcome.identity == "alice" && welcome.room == "lobby" && welcome.mode == "forward")
        #expect(welcome.flags == [.publisher, .subscriber])
        #expect(welcome.sessionSecret.count == 32)
        #expect(alice.events.contains(.memberList([])))

        let bob = net.addClient("bob")
        net.joinAll()
        #expect(bob.session.state == .joined)
        guard case .memberList(let list)? = bob.events.first(where: { if case .memberList = $0 { true } else { false } }) else {
            Issue.record("bob got no member list"); return
        }
        #expect(list.map(\.identity) == ["alice"])
        #expect(alice.memberEvents.map(\.1) == ["bob"])
        #expect(alice.memberEvents.first?.0 == .joined)
        #expect(net.core.counters.joinsAccepted == 2)
    }

    @Test("no datagram to an unverified address is larger than what it sent", arguments: [0, 1, 40, 200])
    func noAmplification(padding: Int) throws {
        let net = FakeNetwork()
        let attacker = PeerAddress(ipv4: 203, 0, 113, 9, port: 4444)
        // Joins with no cookie, a forged cookie, and a cookie for a different address.
        let forged = [UInt8](repeating: 0xAB, count: JoinCookie.size)
        let otherCookie = net.shared.cookies.mint(for: PeerAddress(ipv4: 1, 2, 3, 4, port: 5), unixSeconds: net.now.unixSeconds)
        for cookie in [[], forged, otherCookie] {
            let join = try SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: .join(JoinRequest(
                token: String(repeating: "x", count: padding), room: "r", cookie: cookie, nonce: [UInt8](repeating: 1, count: 16)))).serialized()
            net.deliverToRelay(join, from: attacker, port: 7400)
            net.exchange()
            let answers = net.sent.filter { $0.to == attacker }
            #expect(answers.count == 1)
            #expect(answers.allSatisfy { $0.bytes.count <= join.count })
            net.sent.removeAll()
        }
        // A resume for an unknown session from an unverified address: refused in no more bytes than it sent.
        let resume = try SignalDatagram(connectionID: 1234, sequence: 0, ack: 0,
                                        message: .resume(timestamp: 1, proof: [UInt8](repeating: 0, count: 32))).serialized()
        net.deliverToRelay(resume, from: attacker, port: 7400)
        net.exchange()
        #expect(net.sent.allSatisfy { $0.bytes.count <= resume.count })
        #expect(net.core.counters.drops(.resumeRejected) == 1)
        #expect(net.core.memberCount == 0)
    }

    static func refusal(_ i: Int) -> (String, (FakeNetwork) -> String, RefusalCode) { [
        ("expired", { $0.token("eve", expiresIn: -60) }, .tokenExpired),
        ("not yet valid", { $0.token("eve", notBefore: $0.now.unixSeconds + 600) }, .tokenNotYetValid),
        ("wrongly signed", { $0.token("eve", secret: "another-secret-0123456789") }, .tokenBadSignature),
        ("wrong room", { $0.token("eve", room: "elsewhere") }, .tokenWrongRoom),
        ("malformed", { _ in "not.a.jwt" }, .tokenMalformed),
        ("no join grant", { $0.token("eve", grants: Grants(join: false)) }, .tokenMissingGrant),
    ][i] }

    @Test("bad tokens are refused with a reason the client shows", arguments: 0..<6)
    func refusedTokens(index: Int) {
        let (label, make, code) = Self.refusal(index)
        let net = FakeNetwork()
        let eve = net.addClient("eve", token: make(net))
        net.joinAll()
        guard case .refused(let got, let reason)? = eve.events.last else { Issue.record("\(label): not refused"); return }
        #expect(got == code, "\(label)")
        #expect(!reason.isEmpty)
        #expect(eve.session.state == .ended(reason))
        #expect(net.core.memberCount == 0)
        #expect(net.core.counters.joinsRefused[code.rawValue] == 1)
    }

    @Test("a room name over 128 bytes is refused with its reason after the cookie round trip, in no more bytes than the join",
          arguments: [129, 200, 300])
    func roomNameTooLong(bytes: Int) throws {
        let net = FakeNetwork()
        let room = String(repeating: "r", count: bytes)
        let eve = net.addClient("eve", room: room)
        net.joinAll()
        guard case .refused(let code, let reason)? = eve.events.last else { Issue.record("not refused: \(eve.events)"); return }
        #expect(code == .badRequest)
        #expect(reason == "the room name is too long: \(bytes) bytes (longest allowed: 128 bytes)")
        #expect(eve.session.state == .ended(reason))
        // The first join got a cookie; the second (with it) got the refusal: neither answer outgrew its join.
        #expect(eve.sentToRelay.count == 2)
        let answers = net.sent.filter { $0.to == eve.address }
        #expect(answers.count == 2)
        for (answer, join) in zip(answers, eve.sentToRelay) { #expect(answer.bytes.count <= join.count) }
        #expect(net.core.counters.drops(.malformedSignalling) == 0)
        #expect(net.core.counters.joinsRefused[RefusalCode.badRequest.rawValue] == 1)
        #expect(net.core.memberCount == 0 && net.shared.openRooms == 0)
    }

    @Test("a room name of exactly 128 bytes (multi-byte characters included) is admitted")
    func roomNameAtTheLimit() {
        let net = FakeNetwork()
        let room = String(repeating: "é", count: 64)  // 128 UTF-8 bytes
        let alice = net.addClient("alice", room: room)
        net.joinAll()
        #expect(alice.session.state == .joined)
        #expect(alice.session.welcome?.room == room)
    }

    @Test("a room is created only by a token with the create grant; limits on members and rooms hold")
    func roomsAndLimits() {
        var config = RelayCoreConfig()
        config.maxMembersPerRoom = 2
        config.maxRooms = 1
        let net = FakeNetwork(config: config)
        let viewer = net.addClient("viewer", token: net.token("viewer", grants: Grants(create: false)))
        net.joinAll()
        #expect(viewer.events.contains { if case .refused(.roomNotFound, _) = $0 { true } else { false } })

        net.addClient("a"); net.addClient("b")
        let c = net.addClient("c")
        net.joinAll()
        #expect(c.events.contains { if case .refused(.roomFull, _) = $0 { true } else { false } })
        let d = net.addClient("d", room: "second")
        net.joinAll()
        #expect(d.events.contains { if case .refused(.tooManyRooms, _) = $0 { true } else { false } })
        #expect(net.shared.openRooms == 1)
    }

    @Test("a listener without the publish grant joins, receives, but its RTP is dropped")
    func listenerOnly() {
        let net = FakeNetwork()
        let speaker = net.addClient("speaker")
        let listener = net.addClient("listener", token: net.token("listener", grants: Grants(publish: false)))
        net.joinAll()
        #expect(listener.session.welcome?.flags == [.subscriber])
        listener.speak(level: 20)
        speaker.speak(level: 20)
        net.exchange()
        #expect(listener.media[speaker.ssrc]?.count == 1)
        #expect(speaker.media.isEmpty)
        #expect(net.core.counters.drops(.notPublisher) == 1)
    }

    @Test("the same identity joining again replaces its old session; the same token from another address is a replay")
    func replaceAndReplay() {
        let net = FakeNetwork()
        let token = net.token("alice")
        let first = net.addClient("alice", token: token)
        let watcher = net.addClient("watcher")
        net.joinAll()
        // A thief with the same token at another address.
        let thief = net.addClient("alice", token: token)
        net.joinAll()
        #expect(thief.session.state == .joining)
        #expect(net.core.counters.drops(.tokenReplay) >= 1)
        #expect(first.session.state == .joined)
        // The owner with a fresh token from a new device replaces the old session.
        thief.online = false
        let second = net.addClient("alice", token: net.token("alice", expiresIn: 7200))
        net.joinAll()
        #expect(second.session.state == .joined)
        #expect(first.events.contains { if case .goodbye(.replaced, _) = $0 { true } else { false } })
        #expect(watcher.memberEvents.map(\.0) == [.left, .joined])
        #expect(net.core.snapshot().first?.members.count == 2)
    }

    @Test("a join for a room owned by another worker is handed over and answered from the public port")
    func handoffToOwningWorker() throws {
        let net = FakeNetwork(workers: 2)
        // Find a room name worker 1 owns.
        let room = (0..<100).map { "room\($0)" }.first { net.shared.worker(forRoom: $0) == 1 }!
        let alice = net.addClient("alice", room: room)
        net.joinAll()
        #expect(alice.session.state == .joined)
        #expect(alice.session.welcome?.port == 7401)
        #expect(net.cores[1].memberCount == 1 && net.cores[0].memberCount == 0)
        let welcome = try #require(net.sent.first { $0.worker == 1 })
        #expect(welcome.viaPublic)
        // Once the member speaks on its worker's port, signalling moves there too.
        alice.session.setMuted(true, now: net.instant)
        net.exchange()
        #expect(net.sent.last?.viaPublic == false)
    }
}
