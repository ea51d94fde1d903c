import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// A session moves to a new address only after that address answered a challenge with the session secret; each
/// attack here worked before path validation (a replayed resume moved alice's session to the attacker).
@Suite("Path validation: resume and NAT rebinding move a session only to an address that proved itself")
struct PathValidationTests {
    static let attacker = PeerAddress(ipv4: 203, 0, 113, 66, port: 4444)

    func connectionID(_ net: FakeNetwork, of client: FakeClient) throws -> UInt32 {
        try #require(client.sentToRelay.compactMap { try? SignalDatagram(parsing: $0) }.last { $0.connectionID != 0 }?.connectionID)
    }

    func resume(_ net: FakeNetwork, _ client: FakeClient, connection: UInt32, secret: [UInt8]? = nil, timestamp: UInt64? = nil) throws -> [UInt8] {
        let ts = timestamp ?? UInt64(net.now.unixMilliseconds)
        let key = try secret ?? #require(client.session.welcome?.sessionSecret)
        return try SignalDatagram(connectionID: connection, sequence: 0, ack: 0,
                                  message: .resume(timestamp: ts, proof: ResumeProof.make(secret: key, connectionID: connection, timestamp: ts))).serialized()
    }

    func sent(_ net: FakeNetwork, to address: PeerAddress) -> [[UInt8]] { net.sent.filter { $0.to == address }.map(\.bytes) }

    func challenges(in datagrams: [[UInt8]]) -> [[UInt8]] {
        datagrams.compactMap { d in
            if case .pathChallenge(let c) = (try? SignalDatagram(parsing: d))?.message { return c }
            return nil
        }
    }

    @Test("the attack: alice's resume, captured and replayed from another address, gets only a challenge the attacker cannot answer")
    func replayedResumeDoesNotMoveTheSession() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let connection = try connectionID(net, of: alice)
        // Alice resumes from her own address (the client does after ~4 s without answers): answered, nothing moves.
        let captured = try resume(net, alice, connection: connection)
        net.deliverToRelay(captured, from: alice.address, port: 7400)
        net.exchange()
        #expect(alice.events.contains(.resumed))
        // The attacker replays the captured bytes from its own address, at once and again later.
        for _ in 0..<3 {
            net.deliverToRelay(captured, from: Self.attacker, port: 7400)
            net.exchange()
            net.advance(milliseconds: 200)
        }
        let toAttacker = sent(net, to: Self.attacker)
        #expect(toAttacker.count >= 1 && toAttacker.count == challenges(in: toAttacker).count, "only challenges go to the attacker")
        #expect(toAttacker.allSatisfy { $0.count <= captured.count })
        // Without the session secret its answers are refused; the session stays with alice.
        for c in challenges(in: toAttacker) {
            let forged = try SignalDatagram(connectionID: connection, sequence: 0, ack: 0,
                                            message: .pathResponse(challenge: c, proof: [UInt8](repeating: 0xAB, count: 32))).serialized()
            net.deliverToRelay(forged, from: Self.attacker, port: 7400)
        }
        net.exchange()
        #expect(net.core.counters.drops(.pathRejected) == challenges(in: toAttacker).count)
        #expect(net.core.counters.resumes == 0)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "alice" }?.address == alice.address)
        // Bob's audio still reaches alice, and nothing but challenges ever went to the attacker.
        bob.speak(level: 20)
        net.exchange()
        #expect(alice.media[bob.ssrc]?.count == 1)
        #expect(sent(net, to: Self.attacker).count == toAttacker.count)
    }

    @Test("the attack: stamps a signed subtraction cannot hold (a path response's issue time, a resume's timestamp) are refused, never trap",
          arguments: [UInt64(0x8000_0000_0000_0000), 0x8000_0000_0000_0001, 0xFFFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF])
    func overflowingStamps(stamp: UInt64) throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let connection = try connectionID(net, of: alice)
        var challenge = [UInt8](repeating: 0, count: PathChallenge.size)
        for i in 0..<8 { challenge[i] = UInt8(truncatingIfNeeded: stamp >> UInt64(56 - 8 * i)) }
        let forgedResponse = try SignalDatagram(connectionID: connection, sequence: 0, ack: 0,
                                                message: .pathResponse(challenge: challenge, proof: [UInt8](repeating: 0xAB, count: 32))).serialized()
        net.deliverToRelay(forgedResponse, from: Self.attacker, port: 7400)
        // A resume with that timestamp and even the right proof (the attacker on the path has neither, but the
        // timestamp check comes first).
        net.deliverToRelay(try resume(net, alice, connection: connection, timestamp: stamp), from: Self.attacker, port: 7400)
        net.exchange()
        #expect(net.core.counters.drops(.pathRejected) == 1)
        #expect(net.core.counters.drops(.resumeRejected) == 1)
        #expect(net.core.counters.resumes == 0)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "alice" }?.address == alice.address)
        bob.speak(level: 20)
        net.exchange()
        #expect(alice.media[bob.ssrc]?.count == 1, "the relay still forwards")
    }

    @Test("bad resumes are refused in no more bytes than they carried; a good one from a new address only challenges it")
    func resumeChecks() throws {
        let net = FakeNetwork()
        let bob = net.addClient("bob")
        net.joinAll()
        let connection = try connectionID(net, of: bob)
        let stranger = PeerAddress(ipv4: 203, 0, 113, 1, port: 1)
        let now = UInt64(net.now.unixMilliseconds)
        let bad = [
            try resume(net, bob, connection: connection, secret: [UInt8](repeating: 0, count: 32)),  // wrong secret
            try resume(net, bob, connection: connection &+ 1),                                        // unknown connection
            try resume(net, bob, connection: connection, timestamp: now - 120_000),                   // two minutes old
        ]
        for d in bad { net.deliverToRelay(d, from: stranger, port: 7400) }
        net.exchange()
        #expect(net.core.counters.drops(.resumeRejected) == 3)
        #expect(sent(net, to: stranger).allSatisfy { $0.count <= bad[0].count })
        #expect(challenges(in: sent(net, to: stranger)).isEmpty)
        // A resume from bob's own address with a wrong proof is dropped too.
        net.deliverToRelay(bad[0], from: bob.address, port: 7400)
        net.exchange()
        #expect(net.core.counters.drops(.resumeRejected) == 4)
        #expect(!bob.events.contains(.resumed))
    }

    @Test("bob moves to a new address through the challenge; his answer is single-use and bound to that address")
    func responsesAreSingleUseAndAddressBound() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let first = PeerAddress(ipv4: 198, 51, 100, 7, port: 61_000)
        bob.address = first  // NAT rebinding
        net.advance(milliseconds: 6_000, stepMilliseconds: 100)
        #expect(bob.session.state == .joined && bob.events.contains(.resumed))
        #expect(net.core.counters.resumes == 1)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "bob" }?.address == first)
        // The first datagram the relay sent to the new address was the challenge.
        let firstToNew = try #require(sent(net, to: first).first)
        #expect(challenges(in: [firstToNew]).count == 1)
        let answer = try #require(bob.sentToRelay.last { if case .pathResponse = (try? SignalDatagram(parsing: $0))?.message { true } else { false } })
        // Replayed from another address: the challenge names the first address.
        net.deliverToRelay(answer, from: Self.attacker, port: 7400)
        // Bob moves on; his old answer replayed from the address it was made for moves nothing back.
        let second = PeerAddress(ipv4: 198, 51, 100, 8, port: 62_000)
        bob.address = second
        net.advance(milliseconds: 6_000, stepMilliseconds: 100)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "bob" }?.address == second)
        net.deliverToRelay(answer, from: first, port: 7400)
        net.exchange()
        #expect(net.core.counters.drops(.pathRejected) == 2)
        #expect(net.core.counters.resumes == 2)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "bob" }?.address == second)
        #expect(!alice.memberEvents.contains { $0.0 == .left })
    }

    @Test("a speaker behind a NAT that rebinds is heard again within a packet: its RTP from the new address starts validation")
    func natRebindingCostsAPacket() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        for _ in 0..<5 { alice.speak(level: 20); net.advance(milliseconds: 20) }
        #expect(bob.media[alice.ssrc]?.count == 5)
        let rebound = PeerAddress(ipv4: 198, 51, 100, 9, port: 40_123)
        alice.address = rebound
        for _ in 0..<10 { alice.speak(level: 20); net.advance(milliseconds: 20) }
        // The first packet from the new address is dropped and answered by a challenge; alice's answer moves her.
        #expect(bob.media[alice.ssrc]?.count == 14)
        #expect(net.core.counters.drops(.unknownSender) == 1)
        #expect(net.core.counters.resumes == 1)
        #expect(challenges(in: [try #require(sent(net, to: rebound).first)]).count == 1)
        #expect(alice.session.state == .joined)
    }

    @Test("RTP with a member's SSRC from a stranger gets at most one challenge per 100 ms, never larger than the packet")
    func strangersRTPIsChallengedSparingly() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice")
        net.addClient("bob")
        net.joinAll()
        let small = alice.rtp(level: 20, payload: 10)   // 12 + 8 + 10 bytes: smaller than a challenge
        let large = alice.rtp(level: 20, payload: 100)
        for _ in 0..<50 { net.deliverToRelay(small, from: Self.attacker, port: 7400) }
        #expect(sent(net, to: Self.attacker).isEmpty)
        for _ in 0..<50 { net.deliverToRelay(large, from: Self.attacker, port: 7400) }
        net.exchange()
        #expect(sent(net, to: Self.attacker).count == 1)
        #expect(sent(net, to: Self.attacker).allSatisfy { $0.count <= large.count })
        net.advance(milliseconds: 120)
        net.deliverToRelay(large, from: Self.attacker, port: 7400)
        net.exchange()
        #expect(sent(net, to: Self.attacker).count == 2)
        #expect(net.core.counters.drops(.unknownSender) == 101)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "alice" }?.address == alice.address)
    }
}
