import ParleyClientCore
import ParleyCrypto
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// Uplink repair: the relay NACKs a forwarded speaker for packets lost on their way in, forwards what comes back, and
/// stays within its bounds whatever the speaker's sequence numbers do.
@Suite("Uplink repair: the relay NACKs speakers for packets lost on the way in")
struct UplinkRepairTests {
    /// One RTP packet of `client` numbered `sequence` (loud), as it goes on the wire (SRTP once it has keys).
    static func packet(_ client: FakeClient, sequence: UInt16) -> [UInt8] {
        let header = RTPHeader(marker: false, payloadType: 111, sequenceNumber: sequence, timestamp: UInt32(sequence) &* 960,
                               ssrc: client.ssrc, extensions: [.audioLevel(id: 1, AudioLevel(voice: true, level: 20))])
        var out = [UInt8](repeating: 0, count: header.serializedSize + 60)
        _ = out.withUnsafeMutableBytes { try! header.serialize(into: $0) }
        return client.protect(out)
    }

    /// The generic NACKs in the RTCP `client` received from index `from` on: (sender SSRC, media SSRC, lost).
    static func nacks(_ client: FakeClient, from: Int = 0) -> [GenericNACK] {
        client.rtcp.dropFirst(from).flatMap { datagram in
            datagram.withUnsafeBytes { bytes in
                var found: [GenericNACK] = []
                var packets = rtcpPackets(in: bytes)
                while let p = try? packets.next() {
                    if p.packetType == 205, p.countOrFormat == 1, let nack = try? GenericNACK(parsing: p) { found.append(nack) }
                }
                return found
            }
        }
    }

    /// A room where `alice` speaks (forwarded) and `bob` listens, after `warmup` packets numbered from `first`.
    static func room(encrypted: Bool = false, config: RelayCoreConfig = RelayCoreConfig(), first: UInt16 = 1000,
                     warmup: Int = 10) -> (FakeNetwork, FakeClient, FakeClient, UInt16) {
        let net = FakeNetwork(config: config, encrypted: encrypted)
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        var next = first
        for _ in 0..<warmup {
            alice.pendingMedia.append(packet(alice, sequence: next))
            next &+= 1
            net.advance(milliseconds: 20)
        }
        return (net, alice, bob, next)
    }

    @Test("a gap makes a NACK to the speaker naming what is missing; the retransmission is forwarded and counted recovered")
    func gapIsAskedForAndRecovered() throws {
        let (net, alice, bob, next) = Self.room()
        #expect(net.core.counters.uplinkLost == 0 && Self.nacks(alice).isEmpty)
        let lost = [next, next &+ 1]
        alice.pendingMedia.append(Self.packet(alice, sequence: next &+ 2))
        net.exchange()
        let nack = try #require(Self.nacks(alice).first)
        #expect(nack == GenericNACK(senderSSRC: net.core.relaySSRC, mediaSSRC: alice.ssrc, lost: lost))
        #expect(net.sent.last { $0.bytes[1] == 205 }?.to == alice.address)
        #expect(net.core.counters.uplinkLost == 2 && net.core.counters.uplinkNacked == 2)

        for s in lost { alice.pendingMedia.append(Self.packet(alice, sequence: s)) }
        net.exchange()
        #expect(bob.media[alice.ssrc].map { Array($0.suffix(3)) } == [next &+ 2] + lost)
        #expect(net.core.counters.uplinkRecovered == 2 && net.core.counters.uplinkGivenUp == 0)
        // The listener's own NACK for them is now answered from the history.
        #expect(net.core.member(identity: "alice")?.uplink.history?.packet(sequence: lost[0]) != nil)
    }

    @Test("a missing packet is asked for at once, once more after the retry interval, and never after the window")
    func retryOnceThenGiveUp() throws {
        let (net, alice, _, first) = Self.room()
        let config = net.shared.config
        var next = first &+ 1  // `first` is lost
        var askedAt: [Int64] = []
        var elapsed: Int64 = 0
        for _ in 0..<20 {  // 400 ms of packets after the gap
            let before = alice.rtcp.count
            alice.pendingMedia.append(Self.packet(alice, sequence: next))
            next &+= 1
            net.advance(milliseconds: 20)
            for nack in Self.nacks(alice, from: before) where nack.lost.contains(first) { askedAt.append(elapsed) }
            elapsed += 20
        }
        #expect(askedAt.count == 2, "asked at \(askedAt) ms")
        let retry = config.uplinkRepairRetry.milliseconds, window = config.uplinkRepairWindow.milliseconds
        #expect(askedAt.first == 0)
        if askedAt.count == 2 { #expect(askedAt[1] >= retry && askedAt[1] < window) }
        #expect(net.core.counters.uplinkNacked == 2 && net.core.counters.uplinkGivenUp == 1)
        // Arriving after the window it is forwarded all the same, but no longer counted recovered.
        alice.pendingMedia.append(Self.packet(alice, sequence: first))
        net.exchange()
        #expect(net.core.counters.uplinkRecovered == 0)
    }

    @Test("the gap across 65535 → 0 is named in one entry")
    func wrap() throws {
        let (net, alice, _, next) = Self.room(first: 65_530, warmup: 4)   // 65530…65533 arrived
        #expect(next == 65_534)
        alice.pendingMedia.append(Self.packet(alice, sequence: 2))        // 65534, 65535, 0, 1 lost
        net.exchange()
        let nack = try #require(Self.nacks(alice).first)
        #expect(nack.lost == [65_534, 65_535, 0, 1])
        let bytes = try Self.serialized(nack)
        #expect(bytes.count == 16 && bytes[12...15] == [0xFF, 0xFE, 0x00, 0x07])  // PID 65534, BLP 65535, 0, 1
        alice.pendingMedia.append(Self.packet(alice, sequence: 65_535))
        alice.pendingMedia.append(Self.packet(alice, sequence: 0))
        net.exchange()
        #expect(net.core.counters.uplinkRecovered == 2)
    }

    @Test("a jump over 64 is a restart (no NACK); a talkspurt after DTX (contiguous numbers) makes no gap")
    func restartsAndSilence() throws {
        let (net, alice, _, next) = Self.room()
        alice.pendingMedia.append(Self.packet(alice, sequence: next &+ 65))
        net.exchange()
        #expect(Self.nacks(alice).isEmpty && net.core.counters.uplinkLost == 0)
        net.advance(milliseconds: 2_000)  // silence (DTX sends nothing), then the next number
        alice.pendingMedia.append(Self.packet(alice, sequence: next &+ 66))
        net.advance(milliseconds: 20)
        #expect(Self.nacks(alice).isEmpty && net.core.counters.uplinkLost == 0)
        // A jump of exactly 64 is a gap of 63, all named.
        alice.pendingMedia.append(Self.packet(alice, sequence: next &+ 130))
        net.exchange()
        #expect(Self.nacks(alice).first?.lost.count == 63)
    }

    @Test("a speaker forging jumps for a second gets at most the per-second bound of small NACKs")
    func forgedJumpStorm() throws {
        let (net, alice, _, first) = Self.room()
        var sequence = first
        var step = 0
        net.advance(milliseconds: 1_000, stepMilliseconds: 2) {
            step += 1
            sequence &+= step % 3 == 0 ? 5_000 : 64   // gaps of 63, and restarts
            alice.pendingMedia.append(Self.packet(alice, sequence: sequence))
        }
        let nacks = Self.nacks(alice)
        let bound = net.shared.config.uplinkRepairNacksPerSecond
        #expect(nacks.count >= 1 && nacks.count <= bound + 1, "\(nacks.count) NACKs")
        let largest = alice.rtcp.filter { $0[1] == 205 }.map(\.count).max() ?? 0
        #expect(largest <= GenericNACKWriter.size(entries: UplinkGaps.capacity))
        #expect(net.core.counters.uplinkNacked <= UInt64((bound + 1) * UplinkGaps.capacity))
        #expect(net.sent.filter { $0.bytes.first.map { $0 & 0xC0 == 0x80 } == true && $0.bytes[1] == 205 }.allSatisfy { $0.to == alice.address })
    }

    @Test("a muted speaker and a relay with uplink repair off ask nothing (the gaps are counted)")
    func notAsked() throws {
        var off = RelayCoreConfig()
        off.uplinkRepair = false
        let (net, alice, _, next) = Self.room(config: off)
        alice.pendingMedia.append(Self.packet(alice, sequence: next &+ 3))
        net.exchange()
        #expect(Self.nacks(alice).isEmpty && net.core.counters.uplinkLost == 3)   // still counted
        net.advance(milliseconds: 200)
        #expect(Self.nacks(alice).isEmpty && net.core.counters.uplinkNacked == 0)

        let (net2, alice2, _, next2) = Self.room()
        _ = net2.core.setMuted(room: "lobby", identity: "alice", muted: true, now: net2.now)
        net2.exchange()
        alice2.pendingMedia.append(Self.packet(alice2, sequence: next2 &+ 3))
        net2.exchange()
        #expect(Self.nacks(alice2).isEmpty && net2.core.counters.uplinkLost == 3)
    }

    @Test("encrypted: the NACK is SRTCP under the speaker's key, and the resent SRTP packet goes out under the room key out of order")
    func encrypted() throws {
        let (net, alice, bob, next) = Self.room(encrypted: true)
        #expect(alice.crypto != nil && bob.crypto != nil)
        let lost = Self.packet(alice, sequence: next)
        for s in 1...3 { alice.pendingMedia.append(Self.packet(alice, sequence: next &+ UInt16(s))) }
        net.exchange()
        let nack = try #require(Self.nacks(alice).first)   // `FakeClient.receive` took it through SRTCP
        #expect(nack.lost == [next] && nack.senderSSRC == net.core.relaySSRC)
        #expect(net.sent.contains { $0.to == alice.address && $0.bytes.count == 16 + SRTPSender.rtcpOverhead })
        alice.pendingMedia.append(lost)   // the identical bytes: the relay's replay window never saw this index
        net.exchange()
        #expect(bob.media[alice.ssrc]?.last == next)   // protected under the room key after a higher index
        #expect(bob.rejectedMedia == 0 && alice.rejectedMedia == 0)
        #expect(net.core.counters.drops(.srtpReplayed) == 0 && net.core.counters.uplinkRecovered == 1)
        // The same bytes again are a replay: dropped, not forwarded twice.
        alice.pendingMedia.append(lost)
        net.exchange()
        #expect(net.core.counters.drops(.srtpReplayed) == 1)
        #expect(bob.media[alice.ssrc]?.filter { $0 == next }.count == 1)
    }

    static func serialized(_ nack: GenericNACK) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: nack.serializedSize)
        _ = try out.withUnsafeMutableBytes { try nack.serialize(into: $0) }
        return out
    }

    // MARK: The gap tracker alone

    /// (sequence arriving, newly missing, recovered, given up) after one packet numbered 100; nothing is asked.
    static let arrivals: [(UInt16, Int, Bool, Int)] = [
        (101, 0, false, 0),     // in order
        (101, 0, false, 0),     // duplicate
        (104, 2, false, 0),     // 102, 103 missing
        (103, 0, false, 0),     // late, never asked: not "recovered"
        (168, 63, false, 1),    // a jump of 64: a gap of 63; 102 (missing since row 3) is pushed out: given up
        (169, 0, false, 1),     // 105 pushed out of the ring
        (5_000, 0, false, 62),  // a restart: the rest given up, nothing marked
        (4_990, 0, false, 0),   // older than the restart: nothing to fill
    ]

    @Test func trackerTable() {
        let gaps = UplinkGaps()
        let t0 = Instant(nanoseconds: 0)
        _ = gaps.arrived(100, now: t0)
        for (i, row) in Self.arrivals.enumerated() {
            let a = gaps.arrived(row.0, now: t0)
            #expect(a == UplinkGaps.Arrival(newlyMissing: row.1, recovered: row.2, givenUp: row.3), "row \(i): \(a)")
        }
        #expect(gaps.pending == 0)
    }

    @Test func trackerAsksOldestFirstRetriesOnceAndGivesUp() throws {
        let gaps = UplinkGaps()
        let window = Interval.milliseconds(120), retry = Interval.milliseconds(60)
        _ = gaps.arrived(65_534, now: .origin)
        _ = gaps.arrived(2, now: .origin)   // 65535, 0, 1 missing
        func sweep(at ms: Int64) -> ([UInt16], UplinkGaps.Sweep) {
            var bytes = [UInt8](repeating: 0, count: GenericNACKWriter.size(entries: 64))
            var result = UplinkGaps.Sweep()
            let n = bytes.withUnsafeMutableBytes { buffer in
                var writer: GenericNACKWriter? = GenericNACKWriter(into: buffer, senderSSRC: 1, mediaSSRC: 2)
                result = gaps.sweep(now: .origin + .milliseconds(ms), window: window, retryAfter: retry, writer: &writer)
                return writer!.finish()
            }
            guard n > 0 else { return ([], result) }
            let nack = bytes.withUnsafeBytes { b -> GenericNACK? in
                var packets = rtcpPackets(in: UnsafeRawBufferPointer(rebasing: b[..<n]))
                return (try? packets.next()).flatMap { $0 }.flatMap { try? GenericNACK(parsing: $0) }
            }
            return (nack?.lost ?? [], result)
        }
        #expect(gaps.isDue(now: .origin))
        #expect(sweep(at: 0).0 == [65_535, 0, 1])
        #expect(!gaps.isDue(now: .origin + .milliseconds(59)) && gaps.isDue(now: .origin + .milliseconds(60)))
        _ = gaps.arrived(0, now: .origin + .milliseconds(30))
        #expect(sweep(at: 60).0 == [65_535, 1])
        #expect(sweep(at: 100).0 == [])
        let end = sweep(at: 120)
        #expect(end.0 == [] && end.1.givenUp == 2 && gaps.pending == 0 && !gaps.isDue(now: .origin + .seconds(10)))
    }
}
