// The receive path: a datagram from the relay to the session (signalling) or into the jitter buffers (RTP, after
// SRTP and an end-to-end call's frame cipher); RTCP about our uplink to the encoder's FEC and the round trip.

import ParleyCrypto
import ParleyWire

extension ClientEngine {
    /// Takes a datagram from the socket: signalling goes to the session, RTP to the jitter buffers, RTCP receiver
    /// reports about our stream to the encoder's FEC. Anything not from the relay (`ClientSession.isFromRelay`) is
    /// dropped, and so is everything while no session is open.
    public func receive(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Instant) -> [Event] {
        guard phase == .inSession, !bytes.isEmpty, session.isFromRelay(from) else { return [] }
        guard bytes[0] != Signalling.magic else {
            return settle(session.handle(bytes, from: from, now: now), now: now)
        }
        receiveMedia(bytes, now: now)
        session.noteTraffic(now: now)
        return []
    }

    private func receiveMedia(_ received: UnsafeRawBufferPointer, now: Instant) {
        var bytes = received
        if let crypto {
            guard let n = crypto.unprotect(received, into: cryptoScratch) else { return }
            bytes = UnsafeRawBufferPointer(rebasing: cryptoScratch[..<n])
        } else if case .encrypted = configuration.security {
            return  // nothing unprotected is taken from the relay of an encrypted session
        }
        if isRTCP(bytes) {
            var packets = rtcpPackets(in: bytes)
            while let p = try? packets.next() {
                var blocks: [ReportBlock] = []
                switch p.packetType {
                case 200:
                    guard let sr = try? SenderReport(parsing: p) else { continue }
                    receiver.senderReported(ssrc: sr.ssrc, ntpMiddle: NTPTimestamp(bits: sr.ntpTimestamp).middle, now: now)
                    blocks = sr.reports
                case 201:
                    guard let rr = try? ReceiverReport(parsing: p) else { continue }
                    blocks = rr.reports
                case 203:
                    guard let bye = try? Goodbye(parsing: p) else { continue }
                    for ssrc in bye.ssrcs { receiver.senderLeft(ssrc: ssrc) }
                case 205 where p.countOrFormat == 1:
                    // The relay asks for packets of ours it never got (uplink repair): resent as they went out.
                    if let nack = try? GenericNACKView(parsing: p), let sender, let sentHistory,
                       nack.mediaSSRC == sender.ssrc, nack.senderSSRC != sender.ssrc {
                        sentHistory.answer(nack, now: now) { transmit($0, session.destination) }
                    }
                    continue
                default:
                    continue
                }
                guard let sender else { continue }
                for block in blocks where block.ssrc == sender.ssrc {
                    sender.reportedLoss(fraction: block.fractionLost, jitter: block.jitter)
                    noteRoundTrip(block)
                }
            }
            return
        }
        guard var packet = try? RTPPacketView(parsing: bytes) else { return }
        if let endToEnd {
            guard let plain = open(packet, with: endToEnd) else {
                framesRefusedEndToEnd += 1
                return
            }
            packet = plain
        }
        packetsReceived += 1
        bytesReceived += bytes.count
        receivedBySSRC[packet.ssrc, default: 0] += 1
        if let last = lastMediaAt, now - last > longestReceiveGap { longestReceiveGap = now - last }
        lastMediaAt = now
        speaking.observe(ssrc: packet.ssrc, level: packet.audioLevel(id: SendPipeline.defaultLevelExtensionID)?.level,
                         payloadBytes: packet.payloadCount, now: now)
        receiver.receive(packet, now: now)
    }

    /// The packet with its payload opened into `opened` (same header, padding dropped), or nil when it does not open.
    private func open(_ packet: RTPPacketView, with cipher: FrameCipher) -> RTPPacketView? {
        let headerEnd = packet.payloadOffset
        guard headerEnd + packet.payloadCount <= opened.count else { return nil }  // a hostile size: nothing larger opens
        opened.copyMemory(from: UnsafeRawBufferPointer(rebasing: packet.bytes[0..<headerEnd]))
        opened[0] &= ~0x20  // the padding bit: the opened payload carries none
        let frame = UnsafeRawBufferPointer(rebasing: packet.bytes[headerEnd..<(headerEnd + packet.payloadCount)])
        guard let n = try? cipher.open(frame, into: UnsafeMutableRawBufferPointer(rebasing: opened[headerEnd...])) else { return nil }
        return try? RTPPacketView(parsing: UnsafeRawBufferPointer(rebasing: opened[0..<(headerEnd + n)]))
    }

    /// Round trips longer than this from RTCP are taken as stale and ignored.
    public static let maxRoundTrip = Interval.seconds(10)

    /// A block from the relay about our uplink: when its LSR names one of our last two SRs, the round trip (RFC 3550
    /// §6.4.1) smoothed into `mediaRoundTrip` (1/8 gain); negative or over `maxRoundTrip`, ignored.
    private func noteRoundTrip(_ block: ReportBlock) {
        guard block.lastSR != 0, block.lastSR == senderReportsSent.last || block.lastSR == senderReportsSent.previous else { return }
        let arrival = NTPTimestamp(unixMilliseconds: unixMilliseconds()).middle
        guard let rtt = NTPTimestamp.roundTrip(arrival: arrival, lastSR: block.lastSR, delaySinceLastSR: block.delaySinceLastSR),
              rtt <= Self.maxRoundTrip else { return }
        mediaRoundTrip = mediaRoundTrip.map { $0 + (rtt - $0) / 8 } ?? rtt
    }
}
