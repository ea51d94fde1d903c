import ParleyCrypto
import ParleyWire

/// A stream the relay itself originates to one member (its own SSRC, sequence numbers and timeline): what a sender
/// report describes, a CNAME names and a BYE ends.
struct OriginatedStream {
    /// Its SSRC.
    var ssrc: UInt32
    /// RTP packets and payload octets sent to this member so far.
    var packetCount: UInt32, octetCount: UInt32
    /// Its RTP timestamp at the report's wall-clock instant.
    var rtpTimestamp: UInt32
}

/// What a compound ends with (`RTCPFeedback.queueCompound`).
enum RTCPGoodbye {
    /// No BYE: a regular report.
    case none
    /// A BYE for another member's stream that ended (it left, or its endpoint was removed).
    case stream(UInt32)
    /// A BYE for every stream the relay originates to the member (the member is being removed).
    case originated
}

/// The relay's own RTCP to a member, each datagram one compound packet (RFC 3550 §6.1), protected as the member's
/// media is (its SRTCP, an SDES endpoint's session, or cleartext):
///
/// ```
/// relay originates a stream to it:  SR (mix SSRC, its counts, NTP ↔ RTP) [+ block about its uplink], SDES CNAME per SR
/// otherwise:                        RR (relay SSRC) [+ block about its uplink], SDES CNAME
/// a stream ended:                   … the above …, BYE
/// ```
///
/// Report blocks about a relay-originated stream that name one of its last two SRs give the member's round trip
/// (RFC 3550 §6.4.1). Regular reports follow RFC 3550 §6.3 intervals (`RTCPInterval`) with `receiverReportInterval`
/// as the floor.
extension RTCPFeedback {
    /// The largest compound the relay writes: a few SRs, one report block, their CNAMEs and a BYE fit easily.
    static let maxCompoundSize = 512
    /// Round trips longer than this are taken as a stale or forged LSR and ignored.
    static let maxRoundTrip = Interval.seconds(10)
    /// Bytes below RTCP that RFC 3550 §6.2 counts in the average report size (IPv4 + UDP headers).
    static let lowerLayerOverhead = 28

    /// Calls `body` with each stream the relay originates to `member`, once the member was sent some of it: the room's
    /// mix, in a mix room, and an endpoint's rewritten streams (one per slot) in a forward room, each with its counts
    /// and its timeline's RTP time at `now`. Its SR, CNAME, round trip and BYE follow from the code below. A signalling
    /// member's forwarded streams are not listed: they are the speakers' own, and so are their SRs.
    func forEachOriginatedStream(to member: Member, now: Moment, _ body: (OriginatedStream) -> Void) {
        if let mix = member.room.mix, member.mix.packetsSent > 0, let rtp = mix.rtpTimestamp(at: now.monotonic) {
            body(OriginatedStream(ssrc: mix.ssrc, packetCount: member.mix.packetsSent, octetCount: member.mix.octetsSent, rtpTimestamp: rtp))
        }
        // An endpoint's streams in a forward room (`RTPStreamRewriter`): their own counts and timelines.
        for stream in member.endpoint?.streams ?? [] where stream.packetsSent > 0 {
            body(OriginatedStream(ssrc: stream.ssrc, packetCount: stream.packetsSent, octetCount: stream.octetsSent,
                                  rtpTimestamp: stream.timestamp(at: now.monotonic)))
        }
    }

    /// Whether `forEachOriginatedStream` lists anything for `member`.
    func originatesStreams(to member: Member, now: Moment) -> Bool {
        var any = false
        forEachOriginatedStream(to: member, now: now) { _ in any = true }
        return any
    }

    /// Whether the relay sends `member` regular reports: it publishes and its RTP arrived (a block about its uplink), or
    /// the relay originates a stream to it (an SR). An RTP endpoint only when it has somewhere to receive.
    func wantsReports(_ member: Member) -> Bool {
        if member.isRTPEndpoint && !member.hasDestination { return false }
        return (member.canPublish && member.uplink.receiveStats.packetsReceived > 0) || member.mix.packetsSent > 0
            || member.endpoint?.streams.contains { $0.packetsSent > 0 } == true
    }

    /// Sends the member its regular compound report and schedules the next.
    func sendReport(to member: Member, now: Moment) {
        let block = member.canPublish && member.uplink.receiveStats.packetsReceived > 0 ? uplinkBlock(for: member, now: now) : nil
        let n = queueCompound(to: member, now: now, block: block, goodbye: .none)
        if n > 0 { member.rtcp.averageReportSize = RTCPInterval.averageSize(member.rtcp.averageReportSize, adding: n + Self.lowerLayerOverhead) }
        member.rtcp.nextReport = now.monotonic + reportInterval(for: member, now: now)
    }

    /// The time to the next regular report to `member` (RFC 3550 §6.3.1, randomized). Each relay↔member leg is an RTCP
    /// session of two: the relay terminates RTCP (members never see one another's), so its participants are the
    /// member and the relay, and its bandwidth one stream each way at the mix bit rate. That makes the computed
    /// interval far shorter than the floor, `receiverReportInterval` (1 s by default): the floor decides, and the
    /// encoders' FEC hears about loss within about a second.
    func reportInterval(for member: Member, now: Moment) -> Interval {
        let originates = originatesStreams(to: member, now: now)
        let senders = (originates ? 1 : 0) + (member.canPublish && member.uplink.receiveStats.packetsReceived > 0 ? 1 : 0)
        let calculator = RTCPInterval(sessionBandwidth: Double(config.mixBitrate) / 8 * 2, minimum: config.receiverReportInterval)
        let td = calculator.deterministic(members: 2, senders: senders, weSent: originates, averageSize: member.rtcp.averageReportSize)
        return RTCPInterval.randomized(td, unit: Double.random(in: 0..<1, using: &intervalRandom))
    }

    /// The block about the member's own stream (RFC 3550 §6.4.2).
    private func uplinkBlock(for member: Member, now: Moment) -> ReportBlock {
        var lsr: UInt32 = 0, dlsr: UInt32 = 0
        if let sr = member.rtcp.lastSenderReport {
            lsr = sr.ntpMiddle
            dlsr = NTPTimestamp.compactUnits(now.monotonic - sr.at)
        }
        var block = member.uplink.receiveStats.makeReportBlock(ssrc: member.ssrc, lastSR: lsr, delaySinceLastSR: dlsr)
        // The speaker's in-band FEC has to cover its listeners' legs too (a packet lost between the relay and a
        // listener is lost to that listener just the same), so the report carries the worse of the relay's own
        // figures and what listeners reported since the last one — as mediasoup reports the worst remote fraction
        // lost to Opus senders — but checked, and the second worst from three listeners on, so that no single
        // listener steers the speaker's FEC for everyone (`ListenerReports`). Cumulative counts and the extended
        // sequence stay the relay's own.
        var listeners = 0
        for m in member.room.members where m !== member && m.canSubscribe { listeners += 1 }
        let heard = member.rtcp.listenerReports.takeFresh(listeners: listeners, now: now.monotonic)
        block.fractionLost = max(block.fractionLost, heard.fractionLost)
        block.jitter = max(block.jitter, heard.jitter)
        return block
    }

    /// Queues one compound to `member`: an SR per originated stream (the first carrying `block`), or an RR from the
    /// relay's SSRC carrying it; a CNAME chunk for each SSRC sending; then `goodbye`. Returns the bytes queued (0 when
    /// nothing was: a write or protect failed, which only a bug of ours could cause).
    @discardableResult
    func queueCompound(to member: Member, now: Moment, block: ReportBlock?, goodbye: RTCPGoodbye) -> Int {
        let ntp = NTPTimestamp(unixMilliseconds: now.unixMilliseconds)
        let space = output.reserve(Self.maxCompoundSize + max(SRTPSender.rtcpOverhead, EndpointCipher.trailerCapacity))
        var writer = RTCPCompoundWriter(into: UnsafeMutableRawBufferPointer(rebasing: space[..<Self.maxCompoundSize]))
        var senders = 0, failed = false
        forEachOriginatedStream(to: member, now: now) { stream in
            do {
                try writer.senderReport(ssrc: stream.ssrc, ntpTimestamp: ntp.bits, rtpTimestamp: stream.rtpTimestamp,
                                        packetCount: stream.packetCount, octetCount: stream.octetCount)
                if senders == 0, let block { try writer.reportBlock(block) }
                senders += 1
            } catch {
                failed = true
            }
        }
        do {
            if senders == 0 {
                try writer.receiverReport(ssrc: relaySSRC)
                if let block { try writer.reportBlock(block) }
                try writer.cname(ssrc: relaySSRC, cname)
            }
            forEachOriginatedStream(to: member, now: now) { stream in
                do { try writer.cname(ssrc: stream.ssrc, cname) } catch { failed = true }
            }
            switch goodbye {
            case .none: break
            case .stream(let ssrc): try writer.goodbye(ssrc: ssrc)
            case .originated:
                forEachOriginatedStream(to: member, now: now) { stream in
                    do { try writer.goodbye(ssrc: stream.ssrc) } catch { failed = true }
                }
            }
        } catch {
            failed = true
        }
        guard !failed, writer.length > 0 else { return 0 }
        if senders > 0 { member.rtcp.senderReportsSent = (ntp.middle, member.rtcp.senderReportsSent.last) }
        var n = writer.length
        if let srtp = member.srtpOut {
            guard let protected = try? srtp.protect(rtcp: UnsafeRawBufferPointer(rebasing: space[..<n]), into: space) else { return 0 }
            n = protected
        } else if let srtp = member.endpointSRTP {  // an SRTP endpoint: SRTCP, protected in place
            guard let protected = try? srtp.toEndpoint.protectRTCP(space, length: n) else { return 0 }
            n = protected
        }
        output.commit(space, length: n, to: member.address)
        outbox.counters.packetsQueued &+= 1
        outbox.counters.bytesQueued &+= UInt64(n)
        return n
    }

    /// A report block from `member` about a stream the relay originates to it: when its LSR names one of the last two
    /// SRs the relay sent the member, the round trip (RFC 3550 §6.4.1, arrival on the wall clock the SR was stamped
    /// with) smoothed into `member.rtcp.roundTrip` (1/8 gain, as TCP's SRTT). A negative round trip or one over
    /// `maxRoundTrip` is ignored and counted as an implausible report.
    func noteRoundTrip(_ block: ReportBlock, from member: Member, now: Moment) {
        guard block.lastSR != 0, block.lastSR == member.rtcp.senderReportsSent.last || block.lastSR == member.rtcp.senderReportsSent.previous
        else { return }
        let arrival = NTPTimestamp(unixMilliseconds: now.unixMilliseconds).middle
        guard let rtt = NTPTimestamp.roundTrip(arrival: arrival, lastSR: block.lastSR, delaySinceLastSR: block.delaySinceLastSR),
              rtt <= Self.maxRoundTrip else {
            outbox.counters.implausibleReports &+= 1
            return
        }
        member.rtcp.roundTrip = member.rtcp.roundTrip.map { $0 + (rtt - $0) / 8 } ?? rtt
    }

    /// `leaver`'s streams end (it left, timed out, or its endpoint was removed): in a forward room the remaining
    /// listeners that received its SSRC get a BYE for it when its stream was ever forwarded; a removed RTP endpoint gets
    /// a BYE for the streams the relay sent it. An endpoint receiving one rewritten stream gets no BYE for a speaker
    /// who leaves: it saw that speaker only as a CSRC, and tools end the whole session on any BYE (ffmpeg's rtpdec stops
    /// reading at the first). Called while the leaver is still in `room.members` (the mix's clock still runs).
    func streamsEnded(for leaver: Member, now: Moment) {
        let room = leaver.room
        if room.forwards, leaver.uplink.history != nil {
            for m in room.members where m !== leaver && m.canSubscribe && m.hasDestination && m.endpoint?.streams.isEmpty != false && !room.hearsMix(m) {
                queueCompound(to: m, now: now, block: nil, goodbye: .stream(leaver.ssrc))
            }
        }
        if leaver.isRTPEndpoint, leaver.hasDestination, originatesStreams(to: leaver, now: now) {
            queueCompound(to: leaver, now: now, block: nil, goodbye: .originated)
        }
    }
}
