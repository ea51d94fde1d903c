import ParleyAuth
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// The relay's own RTCP (RFC 3550 §6.1 compounds): sender reports for the mix, receiver reports otherwise, CNAMEs,
/// round trips from LSR/DLSR, BYE when a stream ends.
@Suite("Relay RTCP: compound SR/RR + SDES, round trips, BYE")
struct RelayRTCPTests {
    /// A mix room with a speaking tone member and a listen-only member.
    func mixRoom(encrypted: Bool) throws -> (FakeNetwork, ToneMember, FakeClient, MixEngine) {
        let net = FakeNetwork(encrypted: encrypted)
        #expect(net.core.createRoom(name: "mixroom", mode: .mix, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        let alice = net.addClient("alice", room: "mixroom", token: net.token("alice", room: "mixroom", mode: "mix"))
        let bob = net.addClient("bob", room: "mixroom", token: net.token("bob", room: "mixroom", grants: Grants(publish: false), mode: "mix"))
        net.joinAll()
        let mix = try #require(net.core.rooms["mixroom"]?.mix)
        return (net, try ToneMember(alice, frequency: 440), bob, mix)
    }

    /// The datagrams the relay sent to `address`, each with the wall-clock time of the step that sent it.
    final class Capture {
        var seen = 0
        var datagrams: [(bytes: [UInt8], unixMilliseconds: Int64)] = []
        func take(_ net: FakeNetwork, to address: PeerAddress) {
            for d in net.sent[seen...] where d.to == address && d.bytes.first != Signalling.magic {
                datagrams.append((d.bytes, net.now.unixMilliseconds))
            }
            seen = net.sent.count
        }
    }

    @Test("a mix listener gets SR (mix SSRC) + SDES: counts of what it was sent, NTP from the wall clock, RTP on the mix timeline", arguments: [false, true])
    func mixListenerSenderReports(encrypted: Bool) throws {
        let (net, tone, bob, mix) = try mixRoom(encrypted: encrypted)
        let capture = Capture()
        for _ in 0..<150 {
            try tone.send()
            net.advance(milliseconds: 20)
            capture.take(net, to: bob.address)
        }
        // On the wire: RTP (the mix) and RTCP (SRTCP when encrypted); bob decrypted both in arrival order.
        var packets = 0, octets = 0, lastTimestamp: UInt32?, reports: [(SenderReport, Int64)] = []
        var rtpIndex = 0
        var rtcpIndex = 0
        for d in capture.datagrams {
            if d.bytes.withUnsafeBytes({ isRTCP($0) }) {
                let compound = try ParsedCompound(bob.rtcp[rtcpIndex])
                rtcpIndex += 1
                #expect(rtcpTypes(bob.rtcp[rtcpIndex - 1]) == [200, 202])
                let sr = try #require(compound.senderReports.first)
                #expect(sr.ssrc == mix.ssrc)
                #expect(sr.reports.isEmpty)  // bob sends nothing: no block about an uplink
                #expect(Int(sr.packetCount) == packets && Int(sr.octetCount) == octets)
                #expect(sr.ntpTimestamp == NTPTimestamp(unixMilliseconds: d.unixMilliseconds).bits)
                // The report goes out at a step's tick, before that step's mix runs: the mix packet sent last is the
                // frame before the one now due, so the report's RTP time is one to two frames past its timestamp.
                let last = try #require(lastTimestamp)
                #expect((960..<1_920).contains(sr.rtpTimestamp &- last))
                #expect(compound.descriptions.map(\.ssrc) == [mix.ssrc])
                #expect(compound.descriptions.first?.cname == net.core.rtcp.cname)
                reports.append((sr, d.unixMilliseconds))
            } else {
                let packet = bob.received[rtpIndex]
                rtpIndex += 1
                try packet.withUnsafeBytes { raw in
                    let view = try RTPPacketView(parsing: raw)
                    packets += 1
                    octets += view.payloadCount
                    lastTimestamp = view.timestamp
                }
            }
        }
        #expect(reports.count >= 2)
        #expect(packets > 100)
        // NTP and RTP advance together: 48 RTP units per millisecond of wall clock.
        for (a, b) in zip(reports, reports.dropFirst()) {
            #expect(Int64(b.0.rtpTimestamp &- a.0.rtpTimestamp) == (b.1 - a.1) * 48)
        }
    }

    @Test("a publisher that is sent no mix gets RR (relay SSRC) with a block about its stream + SDES")
    func publisherReceiverReports() throws {
        let (net, tone, _, _) = try mixRoom(encrypted: false)
        net.advance(milliseconds: 2_000) { try? tone.send() }
        let alice = tone.client
        #expect(alice.rtcp.count >= 1)
        for bytes in alice.rtcp {
            #expect(rtcpTypes(bytes) == [201, 202])
            let compound = try ParsedCompound(bytes)
            #expect(compound.receiverReports.first?.ssrc == net.core.relaySSRC)
            #expect(compound.receiverReports.first?.reports.map(\.ssrc) == [alice.ssrc])
            #expect(compound.descriptions.map(\.ssrc) == [net.core.relaySSRC])
            #expect(compound.descriptions.first?.cname == net.core.rtcp.cname)
        }
    }

    /// An RR from `client` about `ssrc` naming the SR `lastSR`, held `dlsr` (1/65536 s) before it was sent.
    func receiverReport(from client: FakeClient, about ssrc: UInt32, lastSR: UInt32, dlsr: UInt32, highest: UInt32 = 100) throws {
        let block = ReportBlock(ssrc: ssrc, fractionLost: 0, cumulativeLost: 0, highestSequence: highest, jitter: 0,
                                lastSR: lastSR, delaySinceLastSR: dlsr)
        var bytes = [UInt8](repeating: 0, count: 100)
        let n = try bytes.withUnsafeMutableBytes { try ReceiverReport(ssrc: client.ssrc, reports: [block]).serialize(into: $0) }
        client.pendingMedia.append(client.protect(Array(bytes[0..<n])))
    }

    @Test("a listener's block about the mix with LSR/DLSR gives its round trip; a forged LSR or an implausible one is ignored")
    func roundTripFromReceiverReport() throws {
        let (net, tone, bob, mix) = try mixRoom(encrypted: true)
        let capture = Capture()
        for _ in 0..<75 {
            try tone.send()
            net.advance(milliseconds: 20)
            capture.take(net, to: bob.address)
        }
        let sr = try #require(try bob.rtcp.last.map(ParsedCompound.init)?.senderReports.first)
        let lsr = NTPTimestamp(bits: sr.ntpTimestamp).middle
        func roundTrip() -> Interval? { net.core.snapshot().first?.members.first { $0.identity == "bob" }?.roundTrip }
        #expect(roundTrip() == nil)

        // An LSR the relay never sent: nothing learnt, whatever it claims.
        try receiverReport(from: bob, about: mix.ssrc, lastSR: lsr &+ 0x100, dlsr: 0)
        net.advance(milliseconds: 20) { try? tone.send() }
        #expect(roundTrip() == nil)

        // Held 10 ms at bob: the round trip is the time from the SR's step to the RR's arrival step, less 10 ms.
        let srMilliseconds = try #require(capture.datagrams.last { $0.bytes.withUnsafeBytes { isRTCP($0) } }?.unixMilliseconds)
        let held = Interval.milliseconds(10)
        try receiverReport(from: bob, about: mix.ssrc, lastSR: lsr, dlsr: NTPTimestamp.compactUnits(held))
        net.advance(milliseconds: 20) { try? tone.send() }
        let expected = Interval.milliseconds(net.now.unixMilliseconds - srMilliseconds) - held
        #expect(expected > .zero)
        let measured = try #require(roundTrip())
        #expect(abs((measured - expected).nanoseconds) < 1_000_000)   // 1/65536 s units and whole milliseconds

        // A DLSR longer than the time since the SR: a negative round trip, ignored and counted.
        let implausible = net.core.counters.implausibleReports
        try receiverReport(from: bob, about: mix.ssrc, lastSR: lsr, dlsr: NTPTimestamp.compactUnits(.seconds(30)), highest: 200)
        net.advance(milliseconds: 20) { try? tone.send() }
        #expect(roundTrip() == measured)
        #expect(net.core.counters.implausibleReports > implausible)
    }

    @Test("the round trip is smoothed: one sample moves it by an eighth")
    func roundTripSmoothing() throws {
        let (net, tone, bob, mix) = try mixRoom(encrypted: false)
        net.advance(milliseconds: 1_500) { try? tone.send() }
        let sr = try #require(try bob.rtcp.last.map(ParsedCompound.init)?.senderReports.first)
        let lsr = NTPTimestamp(bits: sr.ntpTimestamp).middle
        let member = try #require(net.core.rooms["mixroom"]?.members.first { $0.identity == "bob" })
        member.rtcp.roundTrip = .milliseconds(100)
        // Whatever this sample is (≥ 0 and < 10 s), the smoothed value moves an eighth of the way to it.
        try receiverReport(from: bob, about: mix.ssrc, lastSR: lsr, dlsr: 0)
        net.advance(milliseconds: 20)
        let arrival = NTPTimestamp(unixMilliseconds: net.now.unixMilliseconds).middle
        let sample = try #require(NTPTimestamp.roundTrip(arrival: arrival, lastSR: lsr, delaySinceLastSR: 0))
        #expect(member.rtcp.roundTrip == .milliseconds(100) + (sample - .milliseconds(100)) / 8)
    }

    @Test("when a forwarded speaker leaves, the room's other listeners get RR + SDES + BYE for its SSRC")
    func goodbyeToListenersOnLeave() throws {
        let net = FakeNetwork(encrypted: true)
        let alice = net.addClient("alice"), bob = net.addClient("bob"), carol = net.addClient("carol")
        net.joinAll()
        net.advance(milliseconds: 400) { alice.speak(level: 30) }
        let before = (bob.rtcp.count, carol.rtcp.count)
        let ssrc = alice.ssrc
        alice.session.leave(now: net.instant)
        net.exchange()
        for (listener, count) in [(bob, before.0), (carol, before.1)] {
            let goodbye = try #require(listener.rtcp.dropFirst(count).first { rtcpTypes($0).contains(203) })
            #expect(rtcpTypes(goodbye) == [201, 202, 203])
            let compound = try ParsedCompound(goodbye)
            #expect(compound.goodbyes == [ssrc])
            #expect(compound.receiverReports.first?.ssrc == net.core.relaySSRC)
        }
    }

    @Test("a member whose stream was never forwarded leaves without a BYE")
    func noGoodbyeForASilentMember() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        net.advance(milliseconds: 200)
        alice.session.leave(now: net.instant)
        net.exchange()
        #expect(!bob.rtcp.contains { rtcpTypes($0).contains(203) })
    }

    @Test("a removed RTP endpoint of a mix room gets SR + SDES + BYE for the mix it was sent")
    func goodbyeToRemovedEndpoint() throws {
        let (net, tone, _, mix) = try mixRoom(encrypted: false)
        let sink = PeerAddress(ipv4: 192, 168, 9, 9, port: 7000)
        let result = net.core.createRTPEndpoint(room: "mixroom", identity: "ear", displayName: nil, publish: false, subscribe: true,
                                                source: nil, receive: sink, keys: nil, now: net.now)
        guard case .rtpEndpoint = result else { Issue.record("got \(result)"); return }
        net.advance(milliseconds: 1_000) { try? tone.send() }
        let mixPackets = net.sent.filter { $0.to == sink && !$0.bytes.withUnsafeBytes { isRTCP($0) } }.count
        #expect(mixPackets > 20)
        let seen = net.sent.count
        #expect(net.core.deleteRTPEndpoint(room: "mixroom", identity: "ear", now: net.now) == .ok)
        net.exchange()
        let last = try #require(net.sent[seen...].last { $0.to == sink })
        #expect(rtcpTypes(last.bytes) == [200, 202, 203])
        let compound = try ParsedCompound(last.bytes)
        #expect(compound.goodbyes == [mix.ssrc])
        #expect(compound.senderReports.first?.packetCount == UInt32(mixPackets))
    }
}
