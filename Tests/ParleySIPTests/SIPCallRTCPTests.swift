import ParleyWire
import Testing

@testable import ParleySIP

@Suite("SIP: RTCP with a phone — the gateway's SR/RR and block, the phone's reports read, the round trip")
struct SIPCallRTCPTests {
    static let ms: Int64 = 1_000_000
    static let epoch: UInt64 = 1_796_000_000_000  // a wall clock in Unix milliseconds

    /// A compound written into a fresh buffer by `write`, as bytes.
    static func compound(_ write: (inout RTCPCompoundWriter) throws -> Void) throws -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 4)
        defer { buffer.deallocate() }
        var writer = RTCPCompoundWriter(into: buffer)
        try write(&writer)
        return Array(writer.bytes)
    }

    @Test("before sending: an RR with a block on the phone's stream (50 of 51 packets, one lost) and the CNAME")
    func receiverReport() throws {
        var rtcp = SIPCallRTCP(ssrc: 0xAAAA, clockRate: 8_000)
        for i in 0..<51 where i != 20 {  // 20 ms packets, one missing
            rtcp.received(ssrc: 0xB0B, sequence: UInt16(100 + i), timestamp: UInt32(160 * i),
                          now: Int64(i) * 20 * Self.ms)
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 4)
        defer { buffer.deallocate() }
        let n = rtcp.report(into: buffer, now: 1_000 * Self.ms, unixMilliseconds: Self.epoch, cname: "sip-1@parley")
        var packets = rtcpPackets(in: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        let rr = try ReceiverReport(parsing: try #require(try packets.next()))
        #expect(rr.ssrc == 0xAAAA && rr.reports.count == 1)
        #expect(rr.reports[0].ssrc == 0xB0B && rr.reports[0].cumulativeLost == 1 && rr.reports[0].lastSR == 0)
        #expect(rr.reports[0].highestSequence == 150 && rr.reports[0].jitter == 0)
        #expect(try packets.next()?.packetType == 202)  // SDES with the CNAME
        #expect(try packets.next() == nil)
    }

    @Test("after sending: an SR counting what went out, its RTP time moved on by the time since the last packet")
    func senderReport() throws {
        var rtcp = SIPCallRTCP(ssrc: 0xAAAA, clockRate: 8_000)
        for i in 0..<10 {
            rtcp.sent(timestamp: UInt32(5_000 + 160 * i), payloadBytes: 160, now: Int64(i) * 20 * Self.ms)
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 4)
        defer { buffer.deallocate() }
        let n = rtcp.report(into: buffer, now: 280 * Self.ms, unixMilliseconds: Self.epoch, cname: "sip-1@parley")
        var packets = rtcpPackets(in: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        let sr = try SenderReport(parsing: try #require(try packets.next()))
        #expect(sr.ssrc == 0xAAAA && sr.packetCount == 10 && sr.octetCount == 1_600 && sr.reports.isEmpty)
        #expect(sr.rtpTimestamp == 5_000 + 160 * 9 + 800)  // 100 ms after the last packet at 8 kHz
        #expect(sr.ntpTimestamp == NTPTimestamp(unixMilliseconds: Int64(Self.epoch)).bits)
    }

    @Test("the phone's SR sets the next block's LSR and DLSR; its block on the gateway's stream gives the round trip")
    func roundTrip() throws {
        var rtcp = SIPCallRTCP(ssrc: 0xAAAA, clockRate: 8_000)
        rtcp.received(ssrc: 0xB0B, sequence: 1, timestamp: 0, now: 0)
        let phoneNTP = NTPTimestamp(unixMilliseconds: 1_700_000_000_000)
        let sr = try Self.compound { try $0.senderReport(ssrc: 0xB0B, ntpTimestamp: phoneNTP.bits, rtpTimestamp: 0,
                                                         packetCount: 1, octetCount: 160) }
        #expect(sr.withUnsafeBytes { rtcp.take($0, now: 100 * Self.ms, unixMilliseconds: Self.epoch) })
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 4)
        defer { buffer.deallocate() }
        // The gateway's SR goes at epoch; its block names the phone's SR, held 250 ms.
        rtcp.sent(timestamp: 0, payloadBytes: 160, now: 300 * Self.ms)
        let n = rtcp.report(into: buffer, now: 350 * Self.ms, unixMilliseconds: Self.epoch, cname: "c")
        var packets = rtcpPackets(in: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        let ours = try SenderReport(parsing: try #require(try packets.next()))
        #expect(ours.reports.first?.lastSR == phoneNTP.middle)
        #expect(ours.reports.first?.delaySinceLastSR == NTPTimestamp.compactUnits(.milliseconds(250)))
        // The phone answers 40 ms later, having held our SR 10 ms: a 30 ms round trip, and the loss it saw.
        let block = ReportBlock(ssrc: 0xAAAA, fractionLost: 0, cumulativeLost: 2, highestSequence: 9, jitter: 16,
                                lastSR: NTPTimestamp(bits: ours.ntpTimestamp).middle,
                                delaySinceLastSR: NTPTimestamp.compactUnits(.milliseconds(10)))
        let rr = try Self.compound { try $0.receiverReport(ssrc: 0xB0B); try $0.reportBlock(block) }
        #expect(rr.withUnsafeBytes { rtcp.take($0, now: 390 * Self.ms, unixMilliseconds: Self.epoch + 40) })
        let rtt = try #require(rtcp.roundTrip)
        #expect(abs(rtt.nanoseconds - 30 * Self.ms) < Self.ms)
        #expect(rtcp.summary.contains("the phone saw 2 of 1 lost, jitter 2 ms") && rtcp.summary.contains("round trip"),
                "\(rtcp.summary)")
    }

    @Test("not RTCP, or a BYE: garbage is refused whole; the phone's BYE is noted")
    func garbageAndBye() throws {
        var rtcp = SIPCallRTCP(ssrc: 0xAAAA, clockRate: 48_000)
        rtcp.received(ssrc: 0xB0B, sequence: 1, timestamp: 0, now: 0)
        let garbage: [UInt8] = [0x81, 200, 0, 40, 1, 2, 3]  // a length past its end
        #expect(!garbage.withUnsafeBytes { rtcp.take($0, now: 0, unixMilliseconds: Self.epoch) })
        #expect(rtcp.compoundsReceived == 0)
        let bye = try Self.compound { try $0.receiverReport(ssrc: 0xB0B); try $0.goodbye(ssrc: 0xB0B) }
        #expect(bye.withUnsafeBytes { rtcp.take($0, now: 0, unixMilliseconds: Self.epoch) })
        #expect(rtcp.goodbye && rtcp.summary.hasSuffix("BYE"))
    }
}
