// The send path: the 20 ms media step (a captured frame out, the mix in, NACKs and receiver reports), the
// compound RTCP we send, and media protected on its way to the relay.

import ParleyWire

extension ClientEngine {
    /// One 20 ms media step: sends `captured` (already voice-processed, at `level`) when in the room, mixes the
    /// next 20 ms of every received stream into `out` (960 samples), then sends the NACKs still useful and, every
    /// second, a receiver report. Returns false (and touches nothing) while no session is open: nothing to play.
    public func media(now: Instant, captured: UnsafeBufferPointer<Int16>?, level: UInt8, into out: UnsafeMutablePointer<Int16>) -> Bool {
        guard phase == .inSession else { return false }
        let joined = inRoom
        if let captured {
            inputLevel = level
            if joined, let sender {
                lastCapture = (now, sender.nextTimestamp)
                if let packet = sender.packetize(captured, level: level, voice: configuration.speech.isSpeech(level: level), muted: muted) {
                    transmitMedia(packet)
                    packetsSent += 1
                    lastMediaSent = now
                }
            }
        }
        receiver.pull(now: now, into: out)
        guard joined else { return true }
        // NACKs still useful go out at once: in this second's report when it is due, else in a compound of their own.
        // The relay answers NACKs from its history for the streams it forwards (members' own SSRCs); about a mix (an
        // SSRC no member has) when its welcome says so (`MemberFlags.mixRepaired`: a lone speaker forwarded into the
        // mix, or `mix_nack`).
        let forwardRoom = mode == .forward
        let mixRepaired = session.welcome?.flags.contains(.mixRepaired) ?? false
        let nacks = receiver.nacksDue(now: now, roundTrip: nackRoundTrip, reporter: reporterSSRC) { ssrc in
            forwardRoom || mixRepaired || session.members.values.contains { $0.ssrc == ssrc }
        }
        if now - lastReceiverReport >= Self.receiverReportInterval {
            lastReceiverReport = now
            sendRTCP(now: now, report: true, nacks: nacks)
        } else if !nacks.isEmpty {
            sendRTCP(now: now, report: false, nacks: nacks)
        }
        return true
    }

    /// The SSRC our RTCP names as its sender: the one the welcome assigned, listen-only or not (RFC 3550 has no
    /// SSRC 0 for a receiver that does not send; every participant has an SSRC).
    private var reporterSSRC: UInt32 { sender?.ssrc ?? session.welcome?.ssrc ?? 0 }

    /// Sends one compound RTCP packet (RFC 3550 §6.1) to the relay: with `report`, an SR about our uplink while we
    /// send (else an RR) with a block per received stream; without, an RR with no blocks (the minimal compound RFC 4585
    /// asks around feedback); then SDES with our CNAME, `nacks`, and a BYE for our SSRC when `goodbye`.
    func sendRTCP(now: Instant, report: Bool, nacks: [GenericNACK], goodbye: Bool = false) {
        var writer = RTCPCompoundWriter(into: scratch)
        let ssrc = reporterSSRC
        do {
            if report, let sender, let capture = lastCapture, let sent = lastMediaSent, now - sent <= 2 * Self.receiverReportInterval {
                let ntp = NTPTimestamp(unixMilliseconds: unixMilliseconds())
                // The RTP clock at this instant: the last captured frame's timestamp plus the 48 kHz ticks since.
                let ticks = (now - capture.at).nanoseconds * Int64(Self.clockRate) / 1_000_000_000
                try writer.senderReport(ssrc: ssrc, ntpTimestamp: ntp.bits, rtpTimestamp: capture.timestamp &+ UInt32(truncatingIfNeeded: ticks),
                                        packetCount: sender.packetsSent, octetCount: sender.octetsSent)
                senderReportsSent = (ntp.middle, senderReportsSent.last)
            } else {
                try writer.receiverReport(ssrc: ssrc)
            }
            if report { for block in receiver.reportBlocks(now: now) { try writer.reportBlock(block) } }
            try writer.cname(ssrc: ssrc, cname)
            for nack in nacks {
                try writer.nack(nack)
                nacksSent += 1
            }
            if goodbye { try writer.goodbye(ssrc: ssrc) }
        } catch {
            // Only a full buffer (NACKs for many streams at once): what fits is sent; the rest is asked again later.
        }
        transmitMedia(writer.bytes)
    }

    /// The RTP clock rate of what we send (Opus).
    static let clockRate = 48_000

    /// Sends RTP or RTCP to the relay, protected with the session's SRTP when it is encrypted (never in the clear
    /// then: before the keys nothing goes out). RTP is kept in `sentHistory` as it went out.
    private func transmitMedia(_ packet: UnsafeRawBufferPointer) {
        var wire = packet
        if let crypto {
            guard let n = crypto.protect(packet, into: cryptoScratch) else { return }
            wire = UnsafeRawBufferPointer(rebasing: cryptoScratch[..<n])
        } else if configuration.security != .cleartext {
            return
        }
        transmit(wire, session.destination)
        if let sentHistory, !isRTCP(packet), packet.count >= RTPFixedHeader.size {
            sentHistory.store(sequence: UInt16(packet[2]) << 8 | UInt16(packet[3]), wire)
        }
    }
}
