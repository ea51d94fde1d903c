import ParleyWire

/// RTCP with a phone (RFC 3550 §6): the gateway's reports to it — an SR for the stream it sends the phone (an RR
/// before it has sent anything) with a report block on the phone's stream, and a CNAME — and what the phone's own
/// reports say: its SR's time (for the LSR/DLSR of the gateway's next block), and in its blocks on the gateway's
/// stream the loss and jitter it sees and, from the LSR/DLSR, the round trip. Pure state: the call's sockets and timer
/// (`SIPCallMedia`) feed it times, packets and compounds.
struct SIPCallRTCP {
    /// The SSRC the gateway sends the phone with.
    let ssrc: UInt32
    /// The RTP clock of both directions with the phone (8 kHz for G.711, 48 kHz for Opus).
    let clockRate: Int
    /// What arrived from the phone.
    private(set) var fromPhone: RTPReceiveStatistics
    /// The phone's SSRC, once a packet came.
    private(set) var phoneSSRC: UInt32?
    /// The phone's last SR: its NTP time's middle 32 bits and when it arrived (monotonic ns).
    private var lastSR: (middle: UInt32, at: Int64)?
    /// What the gateway sent the phone: packets, payload octets, the last RTP timestamp and when (monotonic ns).
    private var sentPackets: UInt32 = 0, sentOctets: UInt32 = 0
    private var lastSent: (timestamp: UInt32, at: Int64)?

    /// What the phone's reports said about the gateway's stream: its last block, and the round trip it gave.
    private(set) var phoneReport: ReportBlock?
    private(set) var roundTrip: Interval?
    /// Compounds taken from the phone, and whether one said BYE.
    private(set) var compoundsReceived = 0, goodbye = false
    /// Compounds sent.
    private(set) var reportsSent = 0

    init(ssrc: UInt32, clockRate: Int) {
        self.ssrc = ssrc
        self.clockRate = clockRate
        fromPhone = RTPReceiveStatistics(clockRate: clockRate)
    }

    /// An RTP packet from the phone arrived at `now` (monotonic ns).
    mutating func received(ssrc: UInt32, sequence: UInt16, timestamp: UInt32, now: Int64) {
        if phoneSSRC != ssrc {
            phoneSSRC = ssrc
            fromPhone = RTPReceiveStatistics(clockRate: clockRate)
            lastSR = nil
        }
        fromPhone.record(sequenceNumber: sequence, timestamp: timestamp, arrivalTimeNanoseconds: now)
    }

    /// The gateway sent the phone an RTP packet stamped `timestamp` with `payloadBytes` of payload at `now`.
    mutating func sent(timestamp: UInt32, payloadBytes: Int, now: Int64) {
        sentPackets &+= 1
        sentOctets &+= UInt32(truncatingIfNeeded: payloadBytes)
        lastSent = (timestamp, now)
    }

    /// The next report into `buffer` (256 bytes are enough): SR or RR, the block on the phone's stream, the CNAME.
    /// Its length, or 0 when it did not fit.
    mutating func report(into buffer: UnsafeMutableRawBufferPointer, now: Int64, unixMilliseconds: UInt64,
                         cname: String) -> Int {
        var writer = RTCPCompoundWriter(into: buffer)
        do {
            if let lastSent {
                let elapsed = Int64(clockRate) * max(0, now - lastSent.at) / 1_000_000_000
                let ntp = NTPTimestamp(unixMilliseconds: Int64(unixMilliseconds))
                try writer.senderReport(ssrc: ssrc, ntpTimestamp: ntp.bits,
                                        rtpTimestamp: lastSent.timestamp &+ UInt32(truncatingIfNeeded: elapsed),
                                        packetCount: sentPackets, octetCount: sentOctets)
            } else {
                try writer.receiverReport(ssrc: ssrc)
            }
            if let phoneSSRC {
                let lsr = lastSR?.middle ?? 0
                let dlsr = lastSR.map { NTPTimestamp.compactUnits(.nanoseconds(now - $0.at)) } ?? 0
                try writer.reportBlock(fromPhone.makeReportBlock(ssrc: phoneSSRC, lastSR: lsr, delaySinceLastSR: dlsr))
            }
            try writer.cname(ssrc: ssrc, cname)
        } catch {
            return 0
        }
        reportsSent += 1
        return writer.length
    }

    /// A compound from the phone, taken at `now`: its SR's time, its blocks on the gateway's stream, a BYE. False when
    /// it is not well-formed RTCP (nothing of it is used then).
    mutating func take(_ bytes: UnsafeRawBufferPointer, now: Int64, unixMilliseconds: UInt64) -> Bool {
        var packets = rtcpPackets(in: bytes)
        var blocks: [ReportBlock] = []
        var senderReport: SenderReport?
        var bye = false
        do {
            while let packet = try packets.next() {
                switch packet.packetType {
                case 200:
                    let sr = try SenderReport(parsing: packet)
                    if sr.ssrc == phoneSSRC { senderReport = sr }
                    blocks += sr.reports
                case 201: blocks += try ReceiverReport(parsing: packet).reports
                case 203: bye = try Goodbye(parsing: packet).ssrcs.contains { $0 == phoneSSRC }
                default: continue
                }
            }
        } catch {
            return false
        }
        compoundsReceived += 1
        if let senderReport { lastSR = (NTPTimestamp(bits: senderReport.ntpTimestamp).middle, now) }
        if let block = blocks.last(where: { $0.ssrc == ssrc }) {
            phoneReport = block
            let arrival = NTPTimestamp(unixMilliseconds: Int64(unixMilliseconds)).middle
            if let rtt = NTPTimestamp.roundTrip(arrival: arrival, lastSR: block.lastSR,
                                                delaySinceLastSR: block.delaySinceLastSR),
               rtt < .seconds(10) {
                roundTrip = rtt
            }
        }
        goodbye = goodbye || bye
        return true
    }

    /// One line for the call's end: what each side saw of the other's stream, and the round trip.
    var summary: String {
        let ms = Double(clockRate) / 1_000
        var parts = ["RTCP: \(reportsSent) reports sent, \(compoundsReceived) received"]
        if phoneSSRC != nil {
            parts.append("from the phone \(fromPhone.packetsReceived) packets, "
                         + "\(max(0, fromPhone.cumulativeLost)) lost, "
                         + "jitter \(Int((Double(fromPhone.jitter) / ms).rounded())) ms")
        }
        if let phoneReport {
            parts.append("the phone saw \(max(0, phoneReport.cumulativeLost)) of \(sentPackets) lost, jitter "
                         + "\(Int((Double(phoneReport.jitter) / ms).rounded())) ms")
        }
        if let roundTrip {
            parts.append("round trip \(Double(roundTrip.nanoseconds / 100_000) / 10) ms")
        }
        if goodbye { parts.append("BYE") }
        return parts.joined(separator: "; ")
    }
}
