import ParleyCrypto
import ParleyWire

/// Uplink repair: packets a speaker sent that never reached the relay are asked for again (RFC 4585 generic NACK to
/// the speaker, from the relay's RTCP SSRC) while a retransmission can still be in time for listeners, so one loss on
/// the way in does not reach every listener as concealment. Recovered packets take the ordinary forwarding path.
///
/// Per publisher in a forward room, `UplinkGaps` tracks the missing sequence numbers (fed with each authenticated
/// packet). A NACK goes out from the packet path when a gap appears, once more `uplinkRepairRetry` later if the packet
/// is still missing, and never after `uplinkRepairWindow` from when the gap was seen. Bounded per member: at most
/// `uplinkRepairNacksPerSecond` datagrams a second, each naming at most 64 numbers, only to its latched address, only
/// while it is forwarded and not muted. A forged jump of any size costs the relay at most that bound.
/// With `uplinkRepair` off, gaps are still counted (`parley_uplink_packets_lost_total`) but nobody is asked.
/// Mix rooms are left out: a publisher's jitter buffer there holds 20–40 ms, less than a round trip to the speaker.
final class UplinkRepair {
    private let rtcp: RTCPFeedback
    private let outbox: Outbox
    private var config: RelayCoreConfig { outbox.config }
    private var output: OutputQueue { outbox.output }

    init(rtcp: RTCPFeedback, outbox: Outbox) {
        self.rtcp = rtcp
        self.outbox = outbox
    }

    /// The packet path's call for each authenticated packet of `member` (forward rooms): tracks `sequence`, counts,
    /// and sends the NACK that is due, if uplink repair is on and the member is `forwarded` (and not muted). Returns
    /// whether the packet filled a gap (a retransmission, or a late arrival): a jitter buffer keeps it out of its
    /// delay estimate.
    @discardableResult
    func arrived(_ sequence: UInt16, from member: Member, forwarded: Bool, now: Moment) -> Bool {
        let gaps = member.uplink.gaps ?? member.startUplinkGaps()
        let arrival = gaps.arrived(sequence, now: now.monotonic)
        outbox.counters.uplinkLost &+= UInt64(arrival.newlyMissing)
        outbox.counters.uplinkGivenUp &+= UInt64(arrival.givenUp)
        if arrival.recovered { outbox.counters.uplinkRecovered &+= 1 }
        guard gaps.isDue(now: now.monotonic) else { return arrival.recovered }
        sweep(gaps, of: member, asking: config.uplinkRepair && forwarded && !member.muted, now: now)
        return arrival.recovered
    }

    /// Gives up what is over and, when `asking` and within the bound, queues one NACK for what is due.
    private func sweep(_ gaps: UplinkGaps, of member: Member, asking: Bool, now: Moment) {
        let window = config.uplinkRepairWindow, retry = config.uplinkRepairRetry
        guard asking, gaps.mayAsk(now: now.monotonic, perSecond: config.uplinkRepairNacksPerSecond) else {
            var none: GenericNACKWriter?
            let askAgain = asking ? gaps.askingResumes : .distantFuture
            let swept = gaps.sweep(now: now.monotonic, window: window, retryAfter: retry, writer: &none, askAgain: askAgain)
            outbox.counters.uplinkGivenUp &+= UInt64(swept.givenUp)
            return
        }
        let nackSize = GenericNACKWriter.size(entries: UplinkGaps.capacity)
        let space = output.reserve(nackSize + max(SRTPSender.rtcpOverhead, EndpointCipher.trailerCapacity))
        var writer: GenericNACKWriter? = GenericNACKWriter(into: UnsafeMutableRawBufferPointer(rebasing: space[..<nackSize]),
                                                           senderSSRC: rtcp.relaySSRC, mediaSSRC: member.ssrc)
        let swept = gaps.sweep(now: now.monotonic, window: window, retryAfter: retry, writer: &writer)
        outbox.counters.uplinkGivenUp &+= UInt64(swept.givenUp)
        var n = writer!.finish()
        guard n > 0 else { return }  // nothing due but endings: the reserved space is left unused
        // Protected as the relay's receiver reports are (`RTCPFeedback.sendReport`).
        if let srtp = member.srtpOut {
            guard let protected = try? srtp.protect(rtcp: UnsafeRawBufferPointer(rebasing: space[..<n]), into: space) else { return }
            n = protected
        } else if let srtp = member.endpointSRTP {
            guard let protected = try? srtp.toEndpoint.protectRTCP(space, length: n) else { return }
            n = protected
        }
        gaps.noteSent()
        output.commit(space, length: n, to: member.address)
        outbox.counters.uplinkNacked &+= UInt64(swept.asked)
        outbox.counters.packetsQueued &+= 1
        outbox.counters.bytesQueued &+= UInt64(n)
    }
}
