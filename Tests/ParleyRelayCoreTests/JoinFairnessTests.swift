import ParleyCrypto
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// The join budget shared fairly among sources (`JoinBudget`): the review's attack (issue 33, finding 4) was one
/// address sending initiations with its own valid cookie and 48 garbage bytes at 20,000 a second, which emptied the
/// worker's budget before the Noise message was even opened: 2 of 40 honest joins were answered.
@Suite("Join budget: a flood from one source spends its own share")
struct JoinFairnessTests {
    /// The attacker: on its own network, or (as on loopback) on the honest members' /24 (FakeNetwork's clients are
    /// at 192.168.1.x).
    static let attackers = [PeerAddress(ipv4: 203, 0, 113, 66, port: 4_444), PeerAddress(ipv4: 192, 168, 1, 250, port: 4_444)]

    /// The attacker's own valid cookie: it answers the relay's cookie like anyone.
    static func cookie(_ net: FakeNetwork, attacker: PeerAddress) throws -> [UInt8] {
        net.deliverToRelay(SignallingEnvelope.hello(nonce: [UInt8](repeating: 7, count: 16)), from: attacker, port: 7400)
        let answer = try #require(net.inFlight.first { $0.to == attacker }?.bytes)
        net.inFlight.removeAll()
        return try answer.withUnsafeBytes { try EnvelopeView(parsing: $0).cookieAnswer().cookie }
    }

    @Test("one address floods initiations under its own cookie at 20,000/s (48 garbage bytes, or 200 that cost a Diffie-Hellman): 40 honest encrypted joins over 2 s are each welcomed within a second",
          arguments: [48, 200], attackers)
    func floodFromOneAddress(garbage: Int, attacker: PeerAddress) throws {
        let net = FakeNetwork(encrypted: true)
        var cookie = try Self.cookie(net, attacker: attacker)
        var random = SeededRandomNumberGenerator(seed: 0x4A01)
        var started: [(client: FakeClient, at: Instant)] = []
        for ms in 0..<2_000 {
            // 20 a millisecond, one every 50 µs: each takes a token the moment one is there, as a real flood does.
            for _ in 0..<20 {
                net.monotonic += 50_000
                let noise = (0..<garbage).map { _ in UInt8.random(in: 0...255, using: &random) }
                net.deliverToRelay(SignallingEnvelope.initiation(cookie: cookie, noiseMessage: noise), from: attacker, port: 7400)
            }
            // A stale cookie is answered with a fresh one, which the attacker takes, as any client does.
            for d in net.inFlight where d.to == attacker {
                if let fresh = try? d.bytes.withUnsafeBytes({ try EnvelopeView(parsing: $0).cookieAnswer().cookie }) { cookie = fresh }
            }
            net.inFlight.removeAll { $0.to == attacker }
            if ms % 50 == 0 { started.append((net.addClient("honest-\(ms / 50)"), net.instant)) }
            net.runTimers()
        }
        net.advance(milliseconds: 1_000, stepMilliseconds: 10)
        #expect(started.count == 40)
        let late = started.filter { s in
            guard let at = s.client.joinedAt else { return true }
            return at - s.at > .seconds(1)
        }
        #expect(late.count <= 2, "\(late.count) of 40 honest joins not welcomed within 1 s")
        if garbage < ParleyHandshake.minimumInitiationLength {
            #expect(net.core.counters.drops(.handshakeFailed) == 0, "a message too short to be a join reached the Diffie-Hellman")
            #expect(net.core.counters.drops(.malformedSignalling) == 40_000)
        } else {
            #expect(net.core.counters.drops(.joinFlood) > 38_000, "the attacker was not limited")
            // Its own share (25 a second, a burst of 50) and what stays above the reserve (750 of the burst, and the
            // refill the honest joins leave): at most the worker's budget less the reserve and the honest joins.
            #expect(net.core.counters.drops(.handshakeFailed) <= 2 * 1_000 - 250 - 40)
        }
    }

    @Test("the budget's arithmetic: a socket address's share is a twentieth, its network's a quarter; beyond them a source takes only what is above the reserve, which stays for sources within theirs")
    func shares() {
        var budget = JoinBudget(perSecond: 500)  // burst 1,000, reserve 250; socket 25/s (burst 50), network 125/s (burst 250)
        let t = Instant.origin + .seconds(100)
        let flooder = PeerAddress(ipv4: 198, 51, 100, 7, port: 1)
        var taken = 0
        for _ in 0..<2_000 where budget.take(from: flooder, now: t) { taken += 1 }
        #expect(taken == 750, "50 within its share, then down to the reserve of 250")
        // The same host on another port, another host of its /24, another network: each within its shares.
        for other in [PeerAddress(ipv4: 198, 51, 100, 7, port: 2), PeerAddress(ipv4: 198, 51, 100, 8, port: 1),
                      PeerAddress(ipv4: 203, 0, 113, 5, port: 1), PeerAddress(high: 0x2001_0DB8_0000_0001, low: 1, port: 5)] {
            let admitted = budget.take(from: other, now: t)
            #expect(admitted, "\(other)")
        }
        // Sources within their shares drain the reserve; the flooder gets none of it.
        var reserve = 0
        for n in 0..<400 where budget.take(from: PeerAddress(ipv4: 0x0A00_0000 | UInt32(n) << 8 | 1, port: 9), now: t) { reserve += 1 }
        #expect(reserve == 250 - 4)
        // Half a second on: 250 tokens refilled, none above the reserve — the flooder gets its share's refill (12),
        // nothing more; an honest join gets in.
        let later = t + .milliseconds(500)
        let flooderLater = (0..<100).filter { _ in budget.take(from: flooder, now: later) }.count
        #expect(flooderLater == 12)
        let honest = budget.take(from: PeerAddress(ipv4: 192, 0, 2, 1, port: 7), now: later)
        #expect(honest)
        // A /24 spends its share across its hosts (one join each), then only what is above the reserve.
        var fresh = JoinBudget(perSecond: 500)
        var network = 0
        for host in 0..<256 where fresh.take(from: PeerAddress(ipv4: 198, 51, 100, UInt8(host), port: 9), now: t) { network += 1 }
        #expect(network == 256, "250 within the network's share, 6 more from above the reserve")
        let v6 = (0..<300).filter { fresh.take(from: PeerAddress(high: 0x2001_0DB8_0000_0001, low: UInt64($0), port: 5), now: t) }.count
        #expect(v6 == 300, "a /64 is another network")
    }

    @Test("the worker's total still holds across many networks, and idle sources are forgotten")
    func totalAndPruning() {
        var budget = JoinBudget(perSecond: 500)
        let t = Instant.origin + .seconds(100)
        var taken = 0
        for n in 0..<2_000 where budget.take(from: PeerAddress(ipv4: 0x0A00_0000 | UInt32(n) << 8 | 1, port: 9), now: t) { taken += 1 }
        #expect(taken == 1_000, "the worker's burst is twice its rate")
        #expect(budget.tracked.sockets == 2_000 && budget.tracked.networks == 2_000)
        budget.prune(now: t + .seconds(60))
        #expect(budget.tracked.sockets == 0 && budget.tracked.networks == 0)
    }
}
