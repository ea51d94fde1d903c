import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

@Suite("Selective forwarding, speaker announcements, NACK, drops")
struct ForwardingTests {
    /// Every 20 ms each speaker in `levels` sends a packet at its level.
    func talk(_ net: FakeNetwork, _ levels: [(FakeClient, UInt8)], milliseconds: Int64) {
        net.advance(milliseconds: milliseconds, stepMilliseconds: 20) {
            for (c, level) in levels { c.speak(level: level) }
        }
    }

    @Test("each listener gets at most the N loudest speakers; a speaker never hears itself")
    func topN() {
        let net = FakeNetwork()  // N = 3
        let speakers = (0..<5).map { net.addClient("s\($0)") }
        let listener = net.addClient("listener")
        net.joinAll()
        talk(net, speakers.enumerated().map { ($0.element, UInt8(20 + $0.offset)) }, milliseconds: 400)
        #expect(listener.media.count == 3)
        for s in speakers { #expect(s.media[s.ssrc] == nil) }
        let forwarded = Set(listener.media.keys)
        #expect(forwarded.count == 3)
        // Every member (speakers included) hears at most 3 streams.
        for s in speakers { #expect(s.media.count <= 3) }
    }

    @Test("a speaker who starts talking into free slots is forwarded from its first packet and announced within 150 ms")
    func startIsFast() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        net.advance(milliseconds: 500)
        let before = bob.speakerUpdates
        let start = net.instant
        alice.speak(level: 25)
        net.exchange()
        #expect(bob.media[alice.ssrc]?.count == 1)
        var announcedAt: Instant?
        net.advance(milliseconds: 200, stepMilliseconds: 10) {
            if announcedAt == nil, bob.speakerUpdates > before { announcedAt = net.instant }
            alice.speak(level: 25)
        }
        if announcedAt == nil, bob.speakerUpdates > before { announcedAt = start }
        let latency = try #require(announcedAt) - start
        #expect(latency <= .milliseconds(150))
        #expect(bob.lastSpeakers?.map(\.memberID) == [alice.memberID])
    }

    @Test("speaker lists are pushed at most every 200 ms")
    func pushRateLimit() {
        let net = FakeNetwork()
        let speakers = (0..<3).map { net.addClient("s\($0)") }
        let listener = net.addClient("listener")
        net.joinAll()
        var pushTimes: [Instant] = []
        var seen = listener.speakerUpdates
        // Speakers take turns in short bursts so the speaking set changes constantly.
        var t = 0
        net.advance(milliseconds: 3_000, stepMilliseconds: 20) {
            let who = speakers[(t / 10) % 3]
            who.speak(level: 20)
            t += 1
            if listener.speakerUpdates > seen { pushTimes.append(net.instant); seen = listener.speakerUpdates }
        }
        #expect(pushTimes.count >= 3)
        for (a, b) in zip(pushTimes, pushTimes.dropFirst()) { #expect(b - a >= .milliseconds(200) - .milliseconds(20)) }
    }

    @Test("a member that tells speakers from the media gets no speaker lists, and hears the same speakers the list names")
    func speakersFromMedia() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob"), carol = net.addClient("carol")
        let told = net.addClient("told"), derives = net.addClient("derives", speakersFromMedia: true)
        net.joinAll()
        var tracker = SpeakingTracker()
        var seen = 0
        func hear(for ms: Int64, _ talkers: [(FakeClient, UInt8)]) {
            net.advance(milliseconds: ms, stepMilliseconds: 20) {
                for (c, level) in talkers { c.speak(level: level) }
                for packet in derives.received.dropFirst(seen) {
                    packet.withUnsafeBytes { b in
                        guard let p = try? RTPPacketView(parsing: b) else { return }
                        tracker.observe(ssrc: p.ssrc, level: p.audioLevel(id: 1)?.level, payloadBytes: p.payloadCount, now: net.instant)
                    }
                }
                seen = derives.received.count
                _ = tracker.update(now: net.instant)
            }
        }
        hear(for: 1_000, [(alice, 20), (bob, 30)])
        #expect(told.speakerUpdates >= 1)
        #expect(Set((told.lastSpeakers ?? []).map(\.ssrc)) == [alice.ssrc, bob.ssrc])
        #expect(Set(tracker.current.map(\.ssrc)) == [alice.ssrc, bob.ssrc])
        hear(for: 1_000, [(alice, 127), (bob, 30), (carol, 25)])   // alice falls silent, carol starts
        #expect(Set((told.lastSpeakers ?? []).map(\.ssrc)) == [bob.ssrc, carol.ssrc])
        #expect(Set(tracker.current.map(\.ssrc)) == [bob.ssrc, carol.ssrc])
        #expect(derives.speakerUpdates == 0)
        net.addClient("late")
        net.joinAll()
        #expect(derives.memberEvents.contains { $0.0 == .joined && $0.1 == "late" })   // other signalling still flows
    }

    @Test("a speaker whose level swings 30 dB every 100 ms updates the list at most once a second; a new speaker at once")
    func levelOnlyUpdatesAreSlower() {
        let net = FakeNetwork()
        let alice = net.addClient("alice")
        let bob = net.addClient("bob")
        let carol = net.addClient("carol")
        net.joinAll()
        var t = 0
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) {   // alice is announced, and settles
            alice.speak(level: 20); t += 1
        }
        let before = bob.speakerUpdates
        var pushTimes: [Instant] = []
        var seen = before
        net.advance(milliseconds: 3_000, stepMilliseconds: 20) {
            alice.speak(level: (t / 5) % 2 == 0 ? 10 : 40)        // loud and quiet syllables
            t += 1
            if bob.speakerUpdates > seen { pushTimes.append(net.instant); seen = bob.speakerUpdates }
        }
        #expect(!pushTimes.isEmpty)
        #expect(pushTimes.count <= 4)
        for (a, b) in zip(pushTimes, pushTimes.dropFirst()) { #expect(b - a >= .seconds(1) - .milliseconds(20)) }
        // A new speaker right after a level-only push is announced within the 200 ms interval, not a second.
        let start = net.instant
        var announcedAt: Instant?
        net.advance(milliseconds: 400, stepMilliseconds: 20) {
            alice.speak(level: 20)
            carol.speak(level: 20)
            if announcedAt == nil, bob.lastSpeakers?.contains(where: { $0.memberID == carol.memberID }) == true {
                announcedAt = net.instant
            }
        }
        let latency = (announcedAt ?? .distantFuture) - start
        #expect(latency <= .milliseconds(220))
    }

    @Test("hysteresis: a slightly louder newcomer does not displace a speaker; a much louder one does after the dwell")
    func hysteresis() {
        var config = RelayCoreConfig()
        config.maxForwardedSpeakers = 1
        let net = FakeNetwork(config: config)
        let holder = net.addClient("holder"), newcomer = net.addClient("newcomer"), listener = net.addClient("listener")
        net.joinAll()
        talk(net, [(holder, 40)], milliseconds: 600)
        talk(net, [(holder, 40), (newcomer, 37)], milliseconds: 1_000)  // 3 dB louder: not enough
        #expect(listener.media[newcomer.ssrc] == nil)
        talk(net, [(holder, 40), (newcomer, 20)], milliseconds: 200)     // 20 dB louder: takes the slot
        #expect((listener.media[newcomer.ssrc]?.count ?? 0) > 0)
        let holderCount = listener.media[holder.ssrc]?.count ?? 0
        talk(net, [(holder, 40), (newcomer, 20)], milliseconds: 400)
        #expect(listener.media[holder.ssrc]?.count == holderCount)  // no flapping back
    }

    @Test("a forwarded speaker silent for long gives its slot to anyone who speaks")
    func silentHolderReleased() {
        var config = RelayCoreConfig()
        config.maxForwardedSpeakers = 1
        let net = FakeNetwork(config: config)
        let holder = net.addClient("holder"), quiet = net.addClient("quiet"), listener = net.addClient("listener")
        net.joinAll()
        talk(net, [(holder, 10)], milliseconds: 600)
        talk(net, [(holder, 127)], milliseconds: 1_600)  // DTX/silence
        talk(net, [(holder, 127), (quiet, 50)], milliseconds: 100)
        #expect((listener.media[quiet.ssrc]?.count ?? 0) > 0)
    }

    @Test("the relay answers a NACK from its history and counts what it no longer holds")
    func nack() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        talk(net, [(alice, 20)], milliseconds: 200)
        let got = try #require(bob.media[alice.ssrc])
        let wanted = [got[2], got[3], got[5]]
        let nack = GenericNACK(senderSSRC: bob.ssrc, mediaSSRC: alice.ssrc, lost: wanted + [got[0] &- 1000])
        var bytes = [UInt8](repeating: 0, count: nack.serializedSize)
        _ = try bytes.withUnsafeMutableBytes { try nack.serialize(into: $0) }
        bob.pendingMedia.append(bytes)
        net.exchange()
        let again = try #require(bob.media[alice.ssrc])
        #expect(Array(again.suffix(3)) == wanted)
        #expect(net.core.counters.nacksAnswered == 3)
        #expect(net.core.counters.nacksMissed == 1)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "bob" }?.stats.nacksReceived == 1)
    }

    @Test("a member's NACK history is allocated at its first RTP packet: members that never send cost none")
    func historyAllocatedAtFirstPacket() {
        let net = FakeNetwork()
        let alice = net.addClient("alice")
        net.addClient("bob")
        net.joinAll()
        #expect(net.core.liveCounts.nackHistories == 0)
        talk(net, [(alice, 20)], milliseconds: 100)
        #expect(net.core.liveCounts.nackHistories == 1)
        #expect(net.core.rooms["lobby"]?.member(identity: "alice")?.uplink.history != nil)
    }

    @Test("the relay sends each publisher receiver reports about its stream")
    func receiverReports() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice")
        net.addClient("bob")
        net.joinAll()
        net.advance(milliseconds: 2_500, stepMilliseconds: 20) { alice.speak(level: 30) }
        #expect(alice.rtcp.count >= 2)
        let report = try alice.rtcp.last!.withUnsafeBytes { b in
            var it = rtcpPackets(in: b)
            return try ReceiverReport(parsing: try #require(try it.next()))
        }
        #expect(report.reports.first?.ssrc == alice.ssrc)
        #expect(report.reports.first?.fractionLost == 0)
    }

    @Test("a speaker's receiver report carries the worst loss and jitter its listeners reported, once")
    func receiverReportsCarryListenersLoss() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob"), carol = net.addClient("carol")
        net.joinAll()
        net.advance(milliseconds: 1_200, stepMilliseconds: 20) { alice.speak(level: 30) }
        func listenerReports(_ client: FakeClient, fractionLost: UInt8, jitter: UInt32, about ssrc: UInt32) throws {
            let block = ReportBlock(ssrc: ssrc, fractionLost: fractionLost, cumulativeLost: 3, highestSequence: 9, jitter: jitter,
                                    lastSR: 0, delaySinceLastSR: 0)
            var bytes = [UInt8](repeating: 0, count: 100)
            let n = try bytes.withUnsafeMutableBytes { try ReceiverReport(ssrc: client.ssrc, reports: [block]).serialize(into: $0) }
            client.pendingMedia.append(Array(bytes[0..<n]))
        }
        func reportToAlice(_ index: Int) throws -> ReportBlock {
            let report = try alice.rtcp[index].withUnsafeBytes { b in
                var it = rtcpPackets(in: b)
                return try ReceiverReport(parsing: try #require(try it.next()))
            }
            return try #require(report.reports.first)
        }
        try listenerReports(bob, fractionLost: 13, jitter: 480, about: alice.ssrc)      // 5 %, 10 ms
        try listenerReports(carol, fractionLost: 5, jitter: 960, about: alice.ssrc)     // 2 %, 20 ms
        try listenerReports(carol, fractionLost: 200, jitter: 9_999, about: 0xDEAD)     // no such stream: ignored
        net.exchange()
        let before = alice.rtcp.count
        net.advance(milliseconds: 1_100, stepMilliseconds: 20) { alice.speak(level: 30) }
        #expect(alice.rtcp.count > before)
        let worst = try reportToAlice(before)         // the first report since: the listeners' reports, once
        #expect(worst.ssrc == alice.ssrc)
        #expect(worst.fractionLost == 13)
        #expect(worst.jitter == 960)
        #expect(worst.cumulativeLost == 0)            // the relay's own count: it lost nothing
        net.advance(milliseconds: 1_100, stepMilliseconds: 20) { alice.speak(level: 30) }
        let next = try reportToAlice(alice.rtcp.count - 1)   // nothing reported since: the relay's own figures again
        #expect(next.fractionLost == 0)
        #expect(next.jitter < 480)
    }

    @Test("RTP from an unknown address or with another member's SSRC is dropped and counted")
    func spoofing() {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let forged = alice.rtp(level: 10, ssrc: bob.ssrc)
        alice.pendingMedia.append(forged)
        net.exchange()
        net.deliverToRelay(bob.rtp(level: 10), from: PeerAddress(ipv4: 6, 6, 6, 6, port: 6), port: 7400)
        #expect(alice.media.isEmpty && bob.media.isEmpty)
        #expect(net.core.counters.drops(.ssrcMismatch) == 1)
        #expect(net.core.counters.drops(.unknownSender) == 1)
    }

    static let garbage: [(String, [UInt8])] = [
        ("empty", []),
        ("one byte RTP", [0x80]),
        ("truncated RTP header", [0x80, 0x6F, 0, 1, 0, 0]),
        ("CSRC count past end", [0x8F, 0x6F, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]),
        ("extension length past end", [0x90, 0x6F, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0xBE, 0xDE, 0xFF, 0xFF]),
        ("RTCP length past end", [0x81, 0xCD, 0x00, 0x09, 0, 0, 0, 1]),
        ("unknown first byte", [0x17, 0xFE, 0xFD, 0x00]),
        ("signalling bad version", [0x50, 0x09] + [UInt8](repeating: 0, count: 14)),
        ("signalling unknown type", [0x50, 0x01, 0x7E, 0] + [UInt8](repeating: 0, count: 12)),
        ("signalling TLV overrun", [0x50, 0x01, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xFF, 0xFF]),
        ("oversize", [UInt8](repeating: 0x80, count: 1600)),
    ]

    @Test("malformed datagrams from a member are dropped by reason and never disturb the room", arguments: 0..<11)
    func malformed(index: Int) {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let (label, bytes) = Self.garbage[index]
        alice.pendingMedia.append(bytes)
        net.exchange()
        let dropped = DropReason.allCases.reduce(0) { $0 + net.core.counters.drops($1) }
        #expect(dropped == 1, "\(label)")
        alice.speak(level: 20)
        net.exchange()
        #expect(bob.media[alice.ssrc]?.count == 1, "\(label)")
        #expect(net.core.memberCount == 2)
    }

    @Test("a flood of joins is answered at a bounded rate and the drops are counted")
    func joinFlood() throws {
        var config = RelayCoreConfig()
        config.retriesPerSecond = 100
        let net = FakeNetwork(config: config)
        let join = try SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: .join(JoinRequest(
            token: "x", room: "r", nonce: [UInt8](repeating: 1, count: 16)))).serialized()
        for i in 0..<1_000 { net.deliverToRelay(join, from: PeerAddress(ipv4: UInt32(0x0A00_0000 + i), port: 9), port: 7400) }
        #expect(net.core.counters.retriesSent == 100)
        #expect(net.core.counters.drops(.joinFlood) == 900)
        #expect(net.log.lines.filter { $0.contains("join_flood") }.count == 1)
    }
}
