import ParleyCrypto
import ParleyWire

/// RTCP between the relay and its members (forward and mix mode): sender reports noted, listeners' report blocks
/// checked (`ListenerReports`, the mixer's FEC), NACKs answered from the source's `PacketHistory` within the
/// requester's `RetransmissionBudget`; and the relay's own compound reports, round trips and goodbyes
/// (`RTCPFeedback+Reports.swift`), which the core sends on its housekeeping grid. Owned by one `RelayCore` (one thread).
final class RTCPFeedback {
    /// The SSRC the relay sends its own RTCP with on this worker.
    let relaySSRC: UInt32
    /// The CNAME of every SSRC the relay sends with on this worker (its reports' and its mixes'): one participant.
    let cname: String
    let sessions: SessionTable
    let outbox: Outbox
    var config: RelayCoreConfig { outbox.config }
    var output: OutputQueue { outbox.output }
    /// Draws the randomization of report intervals. Seeded from `relaySSRC` (itself from the core's generator) so
    /// that it takes nothing from the core's sequence: it spreads reports in time, it protects nothing.
    var intervalRandom: SeededRandomNumberGenerator

    init(relaySSRC: UInt32, sessions: SessionTable, outbox: Outbox) {
        self.relaySSRC = relaySSRC
        self.cname = "parley-relay-" + String(relaySSRC, radix: 16)
        self.sessions = sessions
        self.outbox = outbox
        self.intervalRandom = SeededRandomNumberGenerator(seed: UInt64(relaySSRC) &* 0x9E37_79B9_7F4A_7C15)
    }

    /// One RTCP datagram from `from`: sender reports are noted, listeners' receiver reports checked and kept (for the
    /// mix encoders' FEC, or the speaker's next report), NACKs answered from the source's history.
    func handle(_ received: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        guard let member = sessions.member(at: from) else { return outbox.drop(.unknownSender, from: from, now: now) }
        var bytes = received
        if let srtp = member.srtpIn {
            // SRTCP: authenticated (and decrypted) before anything is read or changed.
            let space = output.reserve(received.count)
            do {
                bytes = output.keep(space, length: try srtp.unprotect(rtcp: received, into: space))
            } catch .replayed, .tooOld {
                return outbox.drop(.srtpReplayed, from: from, now: now)
            } catch {
                return outbox.drop(.srtpRejected, from: from, now: now)
            }
        } else if member.webrtc != nil && member.endpointSRTP == nil {
            return outbox.drop(.srtpNotReady, from: from, now: now)  // a WebRTC member before its DTLS handshake gave keys
        } else if let srtp = member.endpointSRTP {
            // An SRTP endpoint's SRTCP: checked and decrypted first; from its own SSRC only (a WebRTC member's receive-only
            // reports come from an SSRC of the browser's choosing, authenticated by the DTLS-SRTP keys alone).
            guard received.count >= 8, member.webrtc != nil || EndpointSRTP.word(received, at: 4) == member.ssrc else {
                return outbox.drop(.ssrcMismatch, from: from, now: now)
            }
            do {
                bytes = try srtp.unprotect(received, rtcp: true, in: output)
            } catch {
                return outbox.drop(EndpointSRTP.dropReason(error, rtcp: true), from: from, now: now)
            }
        }
        member.session.heardMedia(at: now.monotonic)
        member.stats.packetsIn &+= 1
        member.stats.bytesIn &+= UInt64(bytes.count)
        var packets = rtcpPackets(in: bytes)
        var budgetRefilled = false
        do {
            while let packet = try packets.next() {
                switch packet.packetType {
                case 200:
                    // A speaker's sender report: its own stream's clock (for the LSR of our next report), and report
                    // blocks about what it hears, like a receiver report's.
                    let report = try SenderReport(parsing: packet)
                    if report.ssrc == member.ssrc {
                        member.stats.senderReports &+= 1
                        member.rtcp.lastSenderReport = (UInt32(truncatingIfNeeded: report.ntpTimestamp >> 16), now.monotonic)
                    }
                    take(report.reports, from: member, now: now)
                case 201:
                    take(try ReceiverReport(parsing: packet).reports, from: member, now: now)
                case 205 where packet.countOrFormat == 1:
                    let nack = try GenericNACKView(parsing: packet)
                    member.stats.nacksReceived &+= 1
                    if !budgetRefilled {   // once per datagram: folding the room's counters walks its listeners
                        budgetRefilled = true
                        member.room.fanOut.foldCounters()
                        member.uplink.nackBudget.refill(forwarded: member.stats.bytesOut, percent: config.nackBudgetPercent,
                                                 burst: config.nackBurstBytes)
                    }
                    answer(nack, requester: member, now: now)
                default:
                    break
                }
            }
        } catch {
            outbox.drop(.malformedRTCP, from: from, now: now)
        }
    }

    /// Report blocks from `member` (in an SR or RR), checked against its own earlier ones (`ListenerReports`): about the
    /// room's mix they size the mix encoders' FEC and give the member's round trip; about a forwarded stream, the
    /// speaker's next report.
    private func take(_ blocks: [ReportBlock], from member: Member, now: Moment) {
        let room = member.room
        for block in blocks {
            if let mix = room.mix, block.ssrc == mix.ssrc {
                noteRoundTrip(block, from: member, now: now)
                let verdict = mix.listenerReported(block, by: member.id, listeners: room.members.count, now: now.monotonic)
                if verdict != .taken { outbox.counters.implausibleReports &+= 1 }
                continue
            }
            // About a forwarded stream (forward rooms, and a hybrid room's speakers).
            if room.forwards {
                // An endpoint reports on its rewritten streams: about whoever speaks in one now (and, as they are
                // the relay's streams, the round trip to the endpoint).
                let slot = member.endpoint?.stream(ssrc: block.ssrc)
                if slot != nil { noteRoundTrip(block, from: member, now: now) }
                let about = slot.map { member.endpoint!.streams[$0].source.flatMap { member.room.member(id: $0) } } ?? sessions.bySSRC[block.ssrc]
                guard let speaker = about, speaker.room === member.room, speaker !== member else { continue }
                if speaker.rtcp.listenerReports.take(block, from: member.id, now: now.monotonic) != .taken {
                    outbox.counters.implausibleReports &+= 1
                }
            }
        }
    }

    /// Resends NACKed packets from the source's history, at most 64 per NACK and within the requester's
    /// retransmission budget (`RetransmissionBudget`, refilled by the caller); what either refuses is counted.
    func answer(_ nack: GenericNACKView, requester: Member, now: Moment) {
        if let slot = requester.endpoint?.stream(ssrc: nack.mediaSSRC) { return answerEndpoint(nack, requester: requester, slot: slot, now: now) }
        if let mix = requester.room.mix, nack.mediaSSRC == mix.ssrc {
            if config.mixNack || config.mixForwardLoneSpeaker { answerMix(nack, mix: mix, requester: requester, forwardedOnly: !config.mixNack) }
            return
        }
        guard let source = sessions.bySSRC[nack.mediaSSRC], source.room === requester.room, source !== requester,
              let history = source.uplink.history else { return }
        // The history holds what the room's listeners were sent: protected with the room's key when it has one. An
        // encrypted member resends those bytes as they are; an SDES endpoint or a cleartext listener (debugging)
        // needs the plaintext, which such a history no longer holds: not answered.
        let historyIsProtected = requester.room.downstream != nil
        let usable = requester.endpointSRTP != nil ? !historyIsProtected : (requester.srtpOut != nil) == historyIsProtected
        guard usable else { return }
        answerEach(nack, requester: requester) { sequence in
            history.packet(sequence: sequence).map { ($0, $0.count) }
        } queue: { _, packet in
            if let srtp = requester.endpointSRTP {  // an SRTP endpoint: the resent packet protected again (same index)
                return EndpointSRTP.queue(packet, rtcp: false, with: srtp.toEndpoint, to: requester.address, in: output)
            }
            let space = output.reserve(packet.count)
            space.copyMemory(from: packet)
            output.commit(space, length: packet.count, to: requester.address)
            return packet.count
        }
    }

    /// What every NACK answer shares: at most 64 sequence numbers per NACK (the rest refused); each looked up (`find`:
    /// the packet and its size, nil is counted missed), charged to the requester's retransmission budget (refused once
    /// spent) and queued (`queue`: the length queued; nil when it could not be protected again, counted missed; 0 when
    /// it was dropped on the way out).
    private func answerEach<Packet>(_ nack: GenericNACKView, requester: Member, find: (UInt16) -> (Packet, Int)?,
                                    queue: (UInt16, Packet) -> Int?) {
        var budget = 64
        nack.forEachLostSequence { sequence in
            guard budget > 0 else {
                outbox.counters.nacksRefused &+= 1
                return
            }
            budget -= 1
            guard let (packet, size) = find(sequence) else {
                outbox.counters.nacksMissed &+= 1
                return
            }
            guard requester.uplink.nackBudget.spend(size) else {
                outbox.counters.nacksRefused &+= 1
                return
            }
            guard let length = queue(sequence, packet) else {
                outbox.counters.nacksMissed &+= 1  // no longer in the sender's window (or never sent)
                return
            }
            guard length > 0 else { return }
            outbox.counters.nacksAnswered &+= 1
            outbox.counters.packetsQueued &+= 1
            outbox.counters.bytesQueued &+= UInt64(length)
            requester.stats.retransmittedToMember &+= 1
        }
    }

    /// Answers a listener's NACK about the room's mix: each lost packet that was the shared mix is rebuilt from the
    /// mixer's history exactly as the listener was sent it (`MixEngine.retransmission`) and protected again over the
    /// same bytes (same index) with the listener's key; a minus-one mix is not kept, and is counted missed.
    /// `forwardedOnly`: only a lone speaker's forwarded packets are answered, not mixed frames (`mix_nack` off).
    private func answerMix(_ nack: GenericNACKView, mix: MixEngine, requester: Member, forwardedOnly: Bool) {
        answerEach(nack, requester: requester) { sequence in
            mix.retransmission(of: sequence, to: requester, forwardedOnly: forwardedOnly).map { ($0, $0.count) }
        } queue: { _, bytes in
            let space = output.reserve(bytes.count + max(SRTPSender.rtpOverhead, EndpointCipher.trailerCapacity))
            space.copyMemory(from: bytes)
            var length = bytes.count
            do {
                if let srtp = requester.endpointSRTP {
                    length = try srtp.toEndpoint.protectRTPAgain(space, length: length)
                } else if let srtp = requester.srtpOut {
                    length = try srtp.protect(again: bytes, into: space)
                }
            } catch {
                return nil
            }
            output.commit(space, length: length, to: requester.address)
            return length
        }
    }

    /// Answers an endpoint's NACK about one of its rewritten streams: each sequence number is translated back to the
    /// speaker and sequence it came from (`RTPStreamRewriter.original`), and the packet is rebuilt from that speaker's
    /// history exactly as it was first sent — marker, level and all — so that its SRTP index is protected again over
    /// the same bytes (`EndpointCipher.protectRTPAgain`). Only a history of plaintext packets can be rewritten (a room
    /// without encrypted members).
    private func answerEndpoint(_ nack: GenericNACKView, requester: Member, slot: Int, now: Moment) {
        guard requester.room.downstream == nil else { return }
        let stream = requester.endpoint!.streams[slot]
        answerEach(nack, requester: requester) { sequence -> ((RTPStreamRewriter.Origin, Member, RTPPacketView), Int)? in
            guard let origin = stream.original(of: sequence), let source = requester.room.member(id: origin.source),
                  let bytes = source.uplink.history?.packet(sequence: origin.sequence), let packet = try? RTPPacketView(parsing: bytes) else { return nil }
            return ((origin, source, packet), bytes.count)
        } queue: { sequence, found in
            let (origin, source, packet) = found
            let out = RTPStreamRewriter.Output(sequenceNumber: sequence, timestamp: packet.timestamp &+ origin.timestampOffset,
                                               marker: origin.startsSegment || packet.marker)
            let space = output.reserve(EndpointPacket.headerSize + packet.payloadCount + EndpointCipher.trailerCapacity)
            var length = EndpointPacket.write(packet.payload, as: out, ssrc: stream.ssrc, speaker: source.ssrc,
                                              level: EndpointPacket.level(of: packet, from: source, config: config),
                                              header: EndpointPacket.Header(for: requester.endpoint.unsafelyUnwrapped, config: config), into: space)
            if let srtp = requester.endpointSRTP {
                guard let protected = try? srtp.toEndpoint.protectRTPAgain(space, length: length) else { return nil }
                length = protected
            }
            output.commit(space, length: length, to: requester.address)
            return length
        }
    }
}
