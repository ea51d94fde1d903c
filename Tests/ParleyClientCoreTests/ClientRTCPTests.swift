import ParleyClientCore
import ParleyWire
import Testing

extension Transmitted {
    /// The packets of the compound RTCP it carries, each as its own bytes.
    var rtcpPacketBytes: [[UInt8]] {
        bytes.withUnsafeBytes { raw in
            var it = rtcpPackets(in: raw)
            var out: [[UInt8]] = []
            while let p = try? it.next() { out.append(Array(raw[p.offset..<(p.offset + p.lengthBytes)])) }
            return out
        }
    }

    /// Its first packet parsed by `parse`.
    func first<T>(_ type: UInt8, _ parse: (RTCPPacketView) throws -> T) -> T? {
        for packet in rtcpPacketBytes where packet[1] == type {
            return packet.withUnsafeBytes { raw in
                var it = rtcpPackets(in: raw)
                return (try? it.next()).flatMap { $0 }.flatMap { try? parse($0) }
            }
        }
        return nil
    }
}

@Suite("Client RTCP: compound SR/RR + SDES + NACK, round trip from the relay's LSR/DLSR, BYE")
struct ClientRTCPTests {
    static let ms = Interval.milliseconds(1)
    /// The SSRC the scripted welcome assigns.
    static let ourSSRC: UInt32 = 0x1234_5678

    static func joined(listenOnly: Bool, seed: UInt64 = 1) throws -> EngineHarness {
        let h = try EngineHarness(listenOnly: listenOnly, seed: seed)
        h.advance(to: 1 * ms)
        h.welcome()
        #expect(h.engine.inRoom)
        _ = h.outbox.take()
        return h
    }

    /// A loud 440 Hz frame (voice, so Opus does not go silent).
    static let frame = ToneStream.tone(440)

    /// Captures and sends frames every 20 ms up to `until` (ms since the origin); returns what went out.
    static func speak(_ h: EngineHarness, from start: Int64, until end: Int64) -> [(at: Interval, datagram: Transmitted)] {
        var out: [(Interval, Transmitted)] = []
        var t = start
        while t <= end {
            h.advance(to: t * ms)
            h.media(captured: frame, level: 20)
            for d in h.outbox.take() { out.append((h.elapsed, d)) }
            t += 20
        }
        return out
    }

    @Test("while sending, the report is SR (our counts, NTP from the wall clock, RTP at that instant) + SDES with a random CNAME")
    func senderReport() throws {
        let h = try Self.joined(listenOnly: false)
        let sent = Self.speak(h, from: 20, until: 2_100)
        let reports = sent.filter { $0.datagram.isRTCP }
        #expect(reports.count == 2)
        for (at, report) in reports {
            #expect(report.rtcpTypes == [200, 202])
            let sr = try #require(report.first(200) { try SenderReport(parsing: $0) })
            #expect(sr.ssrc == Self.ourSSRC)
            let rtpBefore = sent.filter { $0.at <= at && !$0.datagram.isRTCP && $0.datagram.signal == nil }.map(\.datagram.bytes)
            #expect(Int(sr.packetCount) == rtpBefore.count)
            let octets = try rtpBefore.reduce(0) { sum, b in try sum + b.withUnsafeBytes { try RTPPacketView(parsing: $0).payloadCount } }
            #expect(Int(sr.octetCount) == octets)
            #expect(sr.ntpTimestamp == NTPTimestamp(unixMilliseconds: ScriptedRelay.unixMilliseconds + at.milliseconds).bits)
            // Sent in the media step that captured a frame: the RTP time is that frame's timestamp.
            let lastRTP = try #require(rtpBefore.last)
            #expect(sr.rtpTimestamp == lastRTP.withUnsafeBytes { (try? RTPPacketView(parsing: $0))?.timestamp })
            let sdes = try #require(report.first(202) { try SourceDescription(parsing: $0) })
            #expect(sdes.chunks.map(\.ssrc) == [Self.ourSSRC])
            #expect(sdes.chunks.first?.cname == h.engine.cname)
        }
        // The CNAME is 16 hex digits drawn for the session: not the identity, and another seed draws another.
        #expect(h.engine.cname.count == 16 && h.engine.cname.allSatisfy(\.isHexDigit))
        let other = try Self.joined(listenOnly: false, seed: 2)
        #expect(other.engine.cname != h.engine.cname)
    }

    @Test("a listen-only member's report is RR (its welcome SSRC) + SDES; blocks name the relay's last SR with the delay since")
    func receiverReportWithLastSR() throws {
        let h = try Self.joined(listenOnly: true)
        var tone = try ToneStream()
        var reports: [Transmitted] = []
        var srArrival: Interval?
        for step in 1...100 {
            h.advance(to: Int64(step) * 20 * Self.ms)
            h.deliver(tone.next())
            if step == 30 {   // at 600 ms the relay's SR about the stream arrives
                let sr = SenderReport(ssrc: ToneStream.ssrc, ntpTimestamp: 0x0000_B705_2000_00AB, rtpTimestamp: 1, packetCount: 2, octetCount: 3)
                var bytes = [UInt8](repeating: 0, count: 64)
                let n = try bytes.withUnsafeMutableBytes { try sr.serialize(into: $0) }
                h.deliver(Array(bytes[0..<n]))
                srArrival = h.elapsed
            }
            h.media()
            reports += h.outbox.take().filter(\.isRTCP)
        }
        #expect(reports.count == 2)   // at 1 s and 2 s
        for report in reports {
            #expect(report.rtcpTypes == [201, 202])
            let rr = try #require(report.first(201) { try ReceiverReport(parsing: $0) })
            #expect(rr.ssrc == Self.ourSSRC)
            let block = try #require(rr.reports.first { $0.ssrc == ToneStream.ssrc })
            #expect(block.lastSR == 0xB705_2000)   // the middle 32 bits of the SR's NTP time
        }
        // DLSR: 400 ms (1 s − 600 ms) in 1/65536 s, then 1.4 s.
        let delays = reports.compactMap { $0.first(201) { try ReceiverReport(parsing: $0) }?.reports.first?.delaySinceLastSR }
        #expect(srArrival == 600 * Self.ms)
        #expect(delays == [NTPTimestamp.compactUnits(.milliseconds(400)), NTPTimestamp.compactUnits(.milliseconds(1_400))])
    }

    /// A report from the relay whose block about `ssrc` names `lastSR`, held `dlsr`.
    static func relayReport(about ssrc: UInt32, lastSR: UInt32, dlsr: Interval) throws -> [UInt8] {
        let block = ReportBlock(ssrc: ssrc, fractionLost: 0, cumulativeLost: 0, highestSequence: 10, jitter: 0,
                                lastSR: lastSR, delaySinceLastSR: NTPTimestamp.compactUnits(dlsr))
        var bytes = [UInt8](repeating: 0, count: 64)
        let n = try bytes.withUnsafeMutableBytes { try ReceiverReport(ssrc: 0x0E1A_7000, reports: [block]).serialize(into: $0) }
        return Array(bytes[0..<n])
    }

    @Test("the relay's block about our uplink gives the media round trip, which NACK timing then uses; a forged LSR gives none")
    func roundTripFromRelayReport() throws {
        let h = try Self.joined(listenOnly: false)
        let sent = Self.speak(h, from: 20, until: 1_000)
        let report = try #require(sent.last { $0.datagram.isRTCP })
        let sr = try #require(report.datagram.first(200) { try SenderReport(parsing: $0) })
        let lsr = NTPTimestamp(bits: sr.ntpTimestamp).middle
        #expect(h.engine.mediaRoundTrip == nil)
        #expect(h.engine.nackRoundTrip == h.engine.roundTrip)

        h.advance(to: 1_100 * Self.ms)
        h.deliver(try Self.relayReport(about: Self.ourSSRC, lastSR: lsr &+ 1, dlsr: .zero))    // an SR we never sent
        #expect(h.engine.mediaRoundTrip == nil)
        h.deliver(try Self.relayReport(about: 0xDEAD, lastSR: lsr, dlsr: .zero))                // not our stream
        #expect(h.engine.mediaRoundTrip == nil)

        // Sent at 1,000 ms, held 40 ms at the relay, back at 1,100 ms: 60 ms (to 1/65536 s).
        h.deliver(try Self.relayReport(about: Self.ourSSRC, lastSR: lsr, dlsr: .milliseconds(40)))
        let rtt = try #require(h.engine.mediaRoundTrip)
        #expect(abs((rtt - .milliseconds(60)).nanoseconds) < 100_000)
        #expect(h.engine.nackRoundTrip == rtt)

        // Smoothed: a second sample of 140 ms moves it an eighth of the way.
        h.advance(to: 1_180 * Self.ms)
        h.deliver(try Self.relayReport(about: Self.ourSSRC, lastSR: lsr, dlsr: .milliseconds(40)))
        let smoothed = try #require(h.engine.mediaRoundTrip)
        #expect(abs((smoothed - .milliseconds(70)).nanoseconds) < 100_000)

        // A DLSR longer than the time since the SR (negative round trip): ignored.
        h.deliver(try Self.relayReport(about: Self.ourSSRC, lastSR: lsr, dlsr: .seconds(5)))
        #expect(h.engine.mediaRoundTrip == smoothed)
    }

    @Test("a NACK between reports goes out as RR + SDES + NACK; one due with the report rides in it")
    func nacksInCompounds() throws {
        let h = try Self.joined(listenOnly: true)
        var tone = try ToneStream()
        var withNack: [(Interval, Transmitted)] = []
        for step in 1...60 {
            h.advance(to: Int64(step) * 20 * Self.ms)
            let packet = tone.next()
            if step != 20 && step != 49 { h.deliver(packet) }  // two losses: one shows at 420 ms, one at 1,000 ms (the report's step)
            h.media()
            for d in h.outbox.take() where d.nack != nil { withNack.append((h.elapsed, d)) }
        }
        let alone = try #require(withNack.first { $0.0 < 1_000 * Self.ms })
        #expect(alone.1.rtcpTypes == [201, 202, 205])
        #expect(alone.1.first(201) { try ReceiverReport(parsing: $0) }?.reports.isEmpty == true)
        let inReport = try #require(withNack.first { $0.0 == 1_000 * Self.ms })
        #expect(inReport.1.rtcpTypes == [201, 202, 205])
        #expect(inReport.1.first(201) { try ReceiverReport(parsing: $0) }?.reports.isEmpty == false)
    }
}
