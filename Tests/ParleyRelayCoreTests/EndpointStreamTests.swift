import ParleyWire
import Testing
@testable import ParleyRelayCore

/// The one stream a subscribing plain-RTP endpoint receives in a forward room: one SSRC, continuous numbering across
/// speaker changes, the speaker as CSRC; its NACKs and reports translated back; RTCP from the tool's RTP port + 1.
@Suite("Endpoint streams: one SSRC per endpoint across speaker changes, NACKs and reports translated back")
struct EndpointStreamTests {
    static let sink = PeerAddress(ipv4: 172, 16, 0, 9, port: 40_002)
    static let tool = PeerAddress(ipv4: 172, 16, 0, 9, port: 40_010)

    struct Heard {
        var ssrc: UInt32, sequence: UInt16, timestamp: UInt32, marker: Bool, csrcs: [UInt32], payload: [UInt8]
    }

    static func heard(_ net: FakeNetwork, at address: PeerAddress) -> [Heard] {
        net.sent.filter { $0.to == address }.compactMap { d in
            d.bytes.withUnsafeBytes { raw -> Heard? in
                guard raw.count > 1, raw[1] & 0x7F == 111, let p = try? RTPPacketView(parsing: raw) else { return nil }
                return Heard(ssrc: p.ssrc, sequence: p.sequenceNumber, timestamp: p.timestamp, marker: p.marker,
                             csrcs: (0..<p.csrcCount).map { p.csrc(at: $0) }, payload: Array(p.payload))
            }
        }
    }

    func setUp() throws -> (FakeNetwork, RTPEndpointInfo) {
        let net = FakeNetwork(config: RTPEndpointTests.cleartext)
        #expect(net.core.createRoom(name: "lobby", mode: .forward, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        return (net, try RTPEndpointTests().create(net, "rec", publish: false, receive: Self.sink))
    }

    @Test("three speaker changes: one SSRC, consecutive sequence numbers, a marker and the new CSRC at each change, time kept")
    func speakerChanges() throws {
        let (net, info) = try setUp()
        let alice = net.addClient("alice"), bob = net.addClient("bob"), carol = net.addClient("carol")
        net.joinAll()
        net.sent.removeAll()
        // Each speaks 400 ms, then 800 ms of silence (longer than the 600 ms speech hold) before the next.
        let turns: [(FakeClient, Int64)] = [(alice, 0), (bob, 1_200), (carol, 2_400), (alice, 3_600)]
        var t: Int64 = 0
        net.advance(milliseconds: 4_000, stepMilliseconds: 20) {
            for (who, start) in turns where t >= start && t < start + 400 { who.speak(level: 20) }
            t += 20
        }
        let got = Self.heard(net, at: Self.sink)
        #expect(got.count >= 76)
        #expect(Set(got.map(\.ssrc)) == [try #require(info.streamSSRC)])
        for (a, b) in zip(got, got.dropFirst()) {
            #expect(b.sequence == a.sequence &+ 1)
            #expect(isNewer(b.timestamp, than: a.timestamp))
        }
        // The speakers in order, each change marked, and nothing else marked.
        var order: [UInt32] = []
        for h in got where order.last != h.csrcs.first { order.append(h.csrcs.first ?? 0) }
        #expect(order == [alice.ssrc, bob.ssrc, carol.ssrc, alice.ssrc])
        let marked = got.indices.filter { got[$0].marker }
        #expect(marked.count == 4)
        #expect(marked.allSatisfy { $0 == 0 || got[$0].csrcs != got[$0 - 1].csrcs })
        // Across a change the timestamp advances by the silence: ~800 ms + one frame = ~39,360 at 48 kHz.
        if let first = marked.dropFirst().first {
            let step = got[first].timestamp &- got[first - 1].timestamp
            #expect((38_000...41_000).contains(step))
        }
    }

    @Test("a NACK about the endpoint's stream is answered with the packet it names, as it was first sent")
    func nackTranslated() throws {
        let (net, info) = try setUp()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        net.sent.removeAll()
        net.advance(milliseconds: 200, stepMilliseconds: 20) { alice.speak(level: 20) }
        net.advance(milliseconds: 200, stepMilliseconds: 20) { bob.speak(level: 20) }  // bob after alice's packets: not heard (alice holds)
        let got = Self.heard(net, at: Self.sink)
        let lost = try #require(got.dropFirst(3).first)
        net.sent.removeAll()
        let nack = GenericNACK(senderSSRC: info.ssrc, mediaSSRC: try #require(info.streamSSRC), lost: [lost.sequence, lost.sequence &+ 5_000])
        var bytes = [UInt8](repeating: 0, count: 64)
        let n = try bytes.withUnsafeMutableBytes { try nack.serialize(into: $0) }
        net.deliverToRelay(Array(bytes[0..<n]), from: Self.sink, port: 7400)
        net.exchange()
        let resent = Self.heard(net, at: Self.sink)
        #expect(resent.count == 1)
        #expect(resent.first.map { [$0.sequence == lost.sequence, $0.timestamp == lost.timestamp, $0.payload == lost.payload,
                                    $0.csrcs == [alice.ssrc], $0.ssrc == lost.ssrc] } == [true, true, true, true, true])
        #expect(net.core.counters.nacksAnswered == 1 && net.core.counters.nacksMissed == 1)
    }

    @Test("an endpoint's receiver report about its stream counts as a report about the speaker it hears")
    func reportTranslated() throws {
        let (net, info) = try setUp()
        let alice = net.addClient("alice")
        net.joinAll()
        net.advance(milliseconds: 400, stepMilliseconds: 20) { alice.speak(level: 20) }
        let heard = Self.heard(net, at: Self.sink)
        let block = ReportBlock(ssrc: try #require(info.streamSSRC), fractionLost: 64, cumulativeLost: 5,
                                highestSequence: UInt32(try #require(heard.last).sequence), jitter: 100, lastSR: 0, delaySinceLastSR: 0)
        var bytes = [UInt8](repeating: 0, count: 64)
        let n = try bytes.withUnsafeMutableBytes { try ReceiverReport(ssrc: info.ssrc, reports: [block]).serialize(into: $0) }
        net.deliverToRelay(Array(bytes[0..<n]), from: Self.sink, port: 7400)
        net.exchange()
        let speaker = try #require(net.core.rooms["lobby"]?.member(identity: "alice"))
        #expect(speaker.rtcp.listenerReports.entries.map(\.fractionLost) == [64])
        #expect(net.core.counters.drops(.unknownSender) == 0)
    }

    /// The RTCP packet types of each compound sent to `address`, with the SRs and SDES chunks in them.
    static func rtcp(_ net: FakeNetwork, to address: PeerAddress) -> [(types: [UInt8], srs: [SenderReport], cnames: [UInt32], byes: [UInt32])] {
        net.sent.filter { $0.to == address }.compactMap { d in
            d.bytes.withUnsafeBytes { raw in
                guard isRTCP(raw) else { return nil }
                var types: [UInt8] = [], srs: [SenderReport] = [], cnames: [UInt32] = [], byes: [UInt32] = []
                var packets = rtcpPackets(in: raw)
                while let p = try? packets.next() {
                    types.append(p.packetType)
                    if let sr = try? SenderReport(parsing: p) { srs.append(sr) }
                    if let sdes = try? SourceDescription(parsing: p) { cnames += sdes.chunks.filter { $0.cname != nil }.map(\.ssrc) }
                    if let bye = try? Goodbye(parsing: p) { byes += bye.ssrcs }
                }
                return (types, srs, cnames, byes)
            }
        }
    }

    @Test("the endpoint's stream has sender reports (its own counts, SDES CNAME); a speaker leaving sends it no BYE; removing the endpoint does")
    func senderReportsAndGoodbye() throws {
        let (net, info) = try setUp()
        let stream = try #require(info.streamSSRC)
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        net.advance(milliseconds: 3_000, stepMilliseconds: 20) { alice.speak(level: 20) }
        let reports = Self.rtcp(net, to: Self.sink)
        #expect(reports.count >= 2)
        #expect(reports.allSatisfy { $0.types.first == 200 && $0.types.contains(202) })
        #expect(reports.allSatisfy { $0.srs.first?.ssrc == stream && $0.cnames.contains(stream) })
        let sent = Self.heard(net, at: Self.sink).count
        let last = try #require(reports.last?.srs.first)
        #expect(last.packetCount > 0 && Int(last.packetCount) <= sent && Int(last.packetCount) >= sent - 60)
        // The speaker leaves: bob (who received alice's SSRC) gets a BYE for it; the endpoint saw alice only as a CSRC
        // of its one stream, and ffmpeg ends the whole session at any BYE, so it gets none.
        net.sent.removeAll()
        let bobRTCP = bob.rtcp.count
        alice.session.leave(now: net.instant)
        net.advance(milliseconds: 2_000, stepMilliseconds: 20) { bob.speak(level: 20) }
        #expect(bob.rtcp.dropFirst(bobRTCP).contains { rtcpTypes($0).contains(203) })
        #expect(Self.rtcp(net, to: Self.sink).allSatisfy { $0.byes.isEmpty })
        #expect(Set(Self.heard(net, at: Self.sink).map(\.ssrc)) == [stream])
        net.sent.removeAll()
        #expect(net.core.deleteRTPEndpoint(room: "lobby", identity: "rec", now: net.now) == .ok)
        net.exchange()
        #expect(Self.rtcp(net, to: Self.sink).contains { $0.byes == [stream] && $0.types.first == 200 })
    }

    @Test("RTCP from the tool's RTP port + 1 is taken as the endpoint's; RTP from there is not")
    func rtcpFromTheNextPort() throws {
        let net = FakeNetwork(config: RTPEndpointTests.cleartext)
        #expect(net.core.createRoom(name: "lobby", mode: .forward, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        _ = try RTPEndpointTests().create(net, "cam", publish: true, subscribe: false, source: Self.tool)
        let rtcpPort = PeerAddress(ipv4: 172, 16, 0, 9, port: Self.tool.port + 1)
        let cam = PlainRTPSender(address: Self.tool, ssrc: 4242)
        cam.send(net)
        var bytes = [UInt8](repeating: 0, count: 64)
        let sr = SenderReport(ssrc: 4242, ntpTimestamp: 0x0102_0304_0506_0708, rtpTimestamp: 5, packetCount: 1, octetCount: 60)
        let n = try bytes.withUnsafeMutableBytes { try sr.serialize(into: $0) }
        net.deliverToRelay(Array(bytes[0..<n]), from: rtcpPort, port: 7400)
        net.exchange()
        let member = try #require(net.core.rooms["lobby"]?.member(identity: "cam"))
        #expect(member.rtcp.lastSenderReport?.ntpMiddle == 0x0304_0506)
        let before = net.core.counters.drops(.unknownSender)
        PlainRTPSender(address: rtcpPort, ssrc: 4242).send(net)
        #expect(net.core.counters.drops(.unknownSender) == before + 1)
        #expect(member.stats.packetsIn == 2)  // the RTP and the RTCP from the tool, not the stray RTP
    }
}
