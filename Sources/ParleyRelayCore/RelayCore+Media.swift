import ParleyWire

extension RelayCore {
    /// The per-packet path: latch check, stats, history, speaker selection, fan-out. No allocation.
    func handleRTP(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        guard let member = sessions.member(at: from) else {
            challengeRTPSender(bytes, from: from, now: now)
            return outbox.drop(.unknownSender, from: from, now: now)
        }
        let packet: RTPPacketView
        do {
            packet = try RTPPacketView(parsing: bytes)
        } catch {
            return outbox.drop(.malformedRTP, from: from, now: now)
        }
        guard packet.ssrc == member.ssrc || adoptEndpointSSRC(member, packet.ssrc) else { return outbox.drop(.ssrcMismatch, from: from, now: now) }
        guard member.canPublish else { return outbox.drop(.notPublisher, from: from, now: now) }
        let session = member.session
        session.lastHeard = now.monotonic
        session.viaPublicPort = false
        member.stats.packetsIn &+= 1
        member.stats.bytesIn &+= UInt64(bytes.count)
        if member.receiveStats.packetsReceived == 0 { noteTimerWork(at: now.monotonic) }  // receiver reports start
        member.receiveStats.record(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                                   arrivalTimeNanoseconds: now.monotonic)
        // The history is allocated at the member's first RTP packet, not at its join: members that never publish
        // (listeners, a join flood) do not cost its slots (128 × 1,500 bytes by default).
        let history = member.history ?? member.startHistory(slots: config.nackHistorySlots)
        history.store(sequence: packet.sequenceNumber, bytes)
        guard !member.muted else { return outbox.drop(.muted, from: from, now: now) }

        let room = member.room
        let level: UInt8
        if let audio = packet.audioLevel(id: config.audioLevelExtensionID) {
            level = audio.level
        } else {
            // No RFC 6464 level (plain RTP tools): a full-size packet counts as speech, a DTX one as silence.
            level = packet.payloadCount > 10 ? 40 : 127
        }
        if room.selector.observe(member.id, level: level, now: now.monotonic) {
            rooms.scheduleSpeakerPush(room, now: now)
            noteTimerWork(at: now.monotonic)
        }
        if let mix = room.mix {
            mix.insert(packet, from: member, arrival: now.monotonic)
            return
        }
        guard room.selector.isForwarded(member.id) else { return }

        let size = UInt64(bytes.count)
        var sent: UInt64 = 0
        let table = room.fanOut
        table.refresh(from: room.members)
        let entries = table.entries
        for i in 0..<table.count {
            let listener = entries + i
            guard listener.pointee.memberID != member.id else { continue }
            // A plain-RTP endpoint hears one stream: the first forwarded speaker other than itself.
            if listener.pointee.isRTPEndpoint, firstForwarded(in: room, except: listener.pointee.memberID) != member.id { continue }
            output.append(bytes, to: listener.pointee.address)
            listener.pointee.packetsOut &+= 1
            listener.pointee.bytesOut &+= size
            sent &+= 1
        }
        outbox.counters.forwarded &+= sent
        outbox.counters.packetsQueued &+= sent
        outbox.counters.bytesQueued &+= sent &* size
    }

    func handleRTCP(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        guard let member = sessions.member(at: from) else { return outbox.drop(.unknownSender, from: from, now: now) }
        let session = member.session
        session.lastHeard = now.monotonic
        session.viaPublicPort = false
        member.stats.packetsIn &+= 1
        member.stats.bytesIn &+= UInt64(bytes.count)
        var packets = rtcpPackets(in: bytes)
        var budgetRefilled = false
        do {
            while let packet = try packets.next() {
                switch packet.packetType {
                case 200:
                    let report = try SenderReport(parsing: packet)
                    if report.ssrc == member.ssrc {
                        member.lastSenderReport = (UInt32(truncatingIfNeeded: report.ntpTimestamp >> 16), now.monotonic)
                    }
                case 201:
                    // Listeners' reports, checked against their own earlier ones (`ListenerReports`): about the room's
                    // mix they size the mix encoders' FEC; about a forwarded stream, the speaker's next report.
                    let report = try ReceiverReport(parsing: packet)
                    if let mix = member.room.mix {
                        for block in report.reports where block.ssrc == mix.ssrc {
                            let verdict = mix.listenerReported(block, by: member.id, listeners: member.room.members.count, now: now.monotonic)
                            if verdict != .taken { outbox.counters.implausibleReports &+= 1 }
                        }
                    } else {
                        for block in report.reports {
                            guard let speaker = bySSRC[block.ssrc], speaker.room === member.room, speaker !== member else { continue }
                            if speaker.listenerReports.take(block, from: member.id, now: now.monotonic) != .taken {
                                outbox.counters.implausibleReports &+= 1
                            }
                        }
                    }
                case 205 where packet.countOrFormat == 1:
                    let nack = try GenericNACKView(parsing: packet)
                    member.stats.nacksReceived &+= 1
                    if !budgetRefilled {   // once per datagram: folding the room's counters walks its listeners
                        budgetRefilled = true
                        member.room.fanOut.foldCounters()
                        member.nackBudget.refill(forwarded: member.stats.bytesOut, percent: config.nackBudgetPercent,
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

    /// Resends NACKed packets from the source's history, at most 64 per NACK and within the requester's
    /// retransmission budget (`RetransmissionBudget`, refilled by the caller); what either refuses is counted.
    func answer(_ nack: GenericNACKView, requester: Member, now: Moment) {
        guard let source = bySSRC[nack.mediaSSRC], source.room === requester.room, source !== requester,
              let history = source.history else { return }
        var budget = 64
        nack.forEachLostSequence { sequence in
            guard budget > 0 else {
                outbox.counters.nacksRefused &+= 1
                return
            }
            budget -= 1
            guard let packet = history.packet(sequence: sequence) else {
                outbox.counters.nacksMissed &+= 1
                return
            }
            guard requester.nackBudget.spend(packet.count) else {
                outbox.counters.nacksRefused &+= 1
                return
            }
            let space = output.reserve(packet.count)
            space.copyMemory(from: packet)
            output.commit(space, length: packet.count, to: requester.address)
            outbox.counters.nacksAnswered &+= 1
            outbox.counters.packetsQueued &+= 1
            outbox.counters.bytesQueued &+= UInt64(packet.count)
            requester.stats.retransmittedToMember &+= 1
        }
    }

    /// Runs the mixes of every mix-mode room whose deadline has passed.
    public func runMixes(now: Moment) {
        for room in rooms.mixRooms {
            guard let mix = room.mix, let due = mix.nextDeadline, due <= now.monotonic else { continue }
            mix.run(room: room, now: now.monotonic) { bytes, listener in
                let space = output.reserve(bytes.count)
                space.copyMemory(from: bytes)
                output.commit(space, length: bytes.count, to: listener.address)
                listener.stats.packetsOut &+= 1
                listener.stats.bytesOut &+= UInt64(bytes.count)
                outbox.counters.packetsQueued &+= 1
                outbox.counters.bytesQueued &+= UInt64(bytes.count)
                outbox.counters.mixedPacketsSent &+= 1
            }
        }
    }

    /// The earliest mix deadline of any mix room with members (the loop wakes for it), or nil.
    public var nextMixDeadline: Int64? {
        var earliest: Int64?
        for room in rooms.mixRooms {
            if let d = room.mix?.nextDeadline, earliest == nil || d < earliest! { earliest = d }
        }
        return earliest
    }

    /// Sends a receiver report about the member's stream (RFC 3550 §6.4.2).
    func sendReceiverReport(to member: Member, now: Moment) {
        member.lastReceiverReport = now.monotonic
        var lsr: UInt32 = 0, dlsr: UInt32 = 0
        if let sr = member.lastSenderReport {
            lsr = sr.ntpMiddle
            dlsr = UInt32(truncatingIfNeeded: (now.monotonic - sr.at) * 65_536 / 1_000_000_000)
        }
        var block = member.receiveStats.makeReportBlock(ssrc: member.ssrc, lastSR: lsr, delaySinceLastSR: dlsr)
        // The speaker's in-band FEC has to cover its listeners' legs too (a packet lost between the relay and a
        // listener is lost to that listener just the same), so the report carries the worse of the relay's own
        // figures and what listeners reported since the last one — as mediasoup reports the worst remote fraction
        // lost to Opus senders — but checked, and the second worst from three listeners on, so that no single
        // listener steers the speaker's FEC for everyone (`ListenerReports`). Cumulative counts and the extended
        // sequence stay the relay's own.
        var listeners = 0
        for m in member.room.members where m !== member && m.canSubscribe { listeners += 1 }
        let heard = member.listenerReports.takeFresh(listeners: listeners, now: now.monotonic)
        block.fractionLost = max(block.fractionLost, heard.fractionLost)
        block.jitter = max(block.jitter, heard.jitter)
        let report = ReceiverReport(ssrc: relaySSRC, reports: [block])
        let space = output.reserve(report.serializedSize)
        guard let n = try? report.serialize(into: space) else { return }
        output.commit(space, length: n, to: member.address)
        outbox.counters.packetsQueued &+= 1
        outbox.counters.bytesQueued &+= UInt64(n)
    }
}
