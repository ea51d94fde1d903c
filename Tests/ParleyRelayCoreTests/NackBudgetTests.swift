import ParleyWire
import Testing
@testable import ParleyRelayCore

/// Retransmissions in answer to NACKs are budgeted per member in bytes, relative to the media forwarded to it: a
/// NACK cannot pull more than a small burst at once, nor more than a fraction of what the member is sent over time.
@Suite("NACK budget: retransmissions bounded by what the member is owed")
struct NackBudgetTests {
    /// One RTCP compound of `count` generic NACKs, each asking for `first` and the 16 packets after it (BLP 0xFFFF).
    static func nackCompound(from listener: FakeClient, about source: FakeClient, first: UInt16, count: Int) -> [UInt8] {
        let nack = GenericNACK(senderSSRC: listener.ssrc, mediaSSRC: source.ssrc, lost: (0..<17).map { first &+ UInt16($0) })
        var one = [UInt8](repeating: 0, count: nack.serializedSize)
        _ = one.withUnsafeMutableBytes { try! nack.serialize(into: $0) }
        #expect(one.count == 16)
        return Array([[UInt8]](repeating: one, count: count).joined())
    }

    /// Bytes of the RTP packets of `source` the listener received beyond the first `skip`.
    static func bytes(_ client: FakeClient, from source: FakeClient, after skip: Int) -> Int {
        client.received.dropFirst(skip).reduce(0) { total, packet in
            let ssrc = UInt32(packet[8]) << 24 | UInt32(packet[9]) << 16 | UInt32(packet[10]) << 8 | UInt32(packet[11])
            return total + (ssrc == source.ssrc ? packet.count : 0)
        }
    }

    @Test("a compound of 90 NACKs (1,530 packets asked for) gets at most the burst, and the rest is counted refused")
    func compoundIsBudgeted() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        net.advance(milliseconds: 3_000, stepMilliseconds: 20) { alice.speak(level: 20) }
        let got = try #require(bob.media[alice.ssrc])
        let forwarded = Self.bytes(bob, from: alice, after: 0)
        let compound = Self.nackCompound(from: bob, about: alice, first: got[got.count - 17], count: 90)
        #expect(compound.count == 1_440)
        let before = bob.received.count
        bob.pendingMedia.append(compound)
        net.exchange()
        let resent = Self.bytes(bob, from: alice, after: before)
        let config = net.shared.config
        #expect(resent > 0)
        #expect(resent <= config.nackBurstBytes, "\(resent) bytes resent for a 1,440-byte compound (\(forwarded) forwarded)")
        let answered = net.core.counters.nacksAnswered
        #expect(answered + net.core.counters.nacksRefused == 90 * 17)
        #expect(net.core.counters.nacksRefused >= 1_400)
    }

    @Test("NACKs every 100 ms for 5 s get no more than the burst plus the budget share of what was forwarded meanwhile")
    func sustainedNacksAreBudgeted() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { alice.speak(level: 20) }
        let start = bob.received.count
        let answeredBefore = net.core.counters.nacksAnswered
        var step = 0
        var nackBytes = 0
        net.advance(milliseconds: 5_000, stepMilliseconds: 20) {
            alice.speak(level: 20)
            step += 1
            if step % 5 == 0, let got = bob.media[alice.ssrc], got.count > 40 {
                let compound = Self.nackCompound(from: bob, about: alice, first: got[got.count - 40], count: 8)
                nackBytes += compound.count
                bob.pendingMedia.append(compound)
            }
        }
        let answered = Int(net.core.counters.nacksAnswered - answeredBefore)
        let packetSize = try #require(bob.received.last).count
        let total = Self.bytes(bob, from: alice, after: start)
        let resent = answered * packetSize
        let forwardedMeanwhile = total - resent
        let config = net.shared.config
        #expect(resent <= config.nackBurstBytes + forwardedMeanwhile * config.nackBudgetPercent / 100,
                "\(resent) bytes resent against \(forwardedMeanwhile) forwarded, for \(nackBytes) bytes of NACKs")
        #expect(answered > 0)
    }

    @Test("a member is never resent more than it was forwarded, however early it asks")
    func neverMoreThanForwarded() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        net.advance(milliseconds: 100, stepMilliseconds: 20) { alice.speak(level: 20) }   // 5 packets
        let got = try #require(bob.media[alice.ssrc])
        #expect(got.count == 5)
        bob.pendingMedia.append(Self.nackCompound(from: bob, about: alice, first: got[0], count: 10))
        net.exchange()
        #expect(net.core.counters.nacksAnswered <= 5)
    }

    /// (forwarded running total before the spends, bytes asked for one by one, which were granted).
    static let budgetSteps: [(forwarded: UInt64, asks: [Int], granted: [Bool])] = [
        (500, [200, 200, 200], [true, true, false]),             // a full bucket, but never more than was forwarded
        (10_500, [3_000, 3_000, 1_000], [true, true, false]),    // 10 KB more: the 6,000-byte bucket is the limit
        (15_500, [1_000, 1_000], [true, false]),                 // 5 KB more refills 20 %: 1,000 bytes
        (1_015_500, [6_000, 1], [true, false]),                  // a long stream refills to the burst, no further
    ]

    @Test("the budget: a bucket of the burst, refilled at 20 % of what is forwarded, capped by what was forwarded")
    func budgetArithmetic() {
        var budget = RetransmissionBudget()
        for (i, step) in Self.budgetSteps.enumerated() {
            budget.refill(forwarded: step.forwarded, percent: 20, burst: 6_000)
            #expect(step.asks.map { budget.spend($0) } == step.granted, "step \(i)")
        }
    }
}
