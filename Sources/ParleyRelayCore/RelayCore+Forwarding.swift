import ParleyCrypto
import ParleyWire

/// The media hot path, kept on the core so a forwarded packet takes no extra hop: RTP from a member is checked,
/// counted, kept for NACKs, observed for speaker selection, and fanned out to the room's listeners straight from the
/// received buffer (`FanOutTable`), or handed to the room's mixer; and the mix deadlines the loop wakes for.
extension RelayCore {
    /// The per-packet path: latch check, SRTP unprotect (an encrypted member, or an SDES endpoint), stats, history,
    /// speaker selection, SRTP protect with the room's downstream key (once per packet), fan-out. No allocation: the
    /// plaintext and the protected packet live in the output arena, which every listener's entry points into.
    func handleRTP(_ received: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        guard let member = sessions.member(at: from) else {
            paths.challengeRTPSender(received, from: from, now: now)
            return outbox.drop(.unknownSender, from: from, now: now)
        }
        // By kind, once: an endpoint's RTP comes from its named source only (its other addresses are for RTCP), a
        // WebRTC member's also from an address on trial (it is sent nothing until it answers the relay's check,
        // RelayCore+WebRTC.swift); an endpoint's SRTP is checked and decrypted first (RelayCore+RTPEndpoints.swift);
        // the rest reads the clear copy. A member with signalling is checked below (`srtpIn`).
        var bytes = received
        switch member.kind {
        case .native, .cascade:
            break
        case .rtpEndpoint:
            let endpoint = member.endpoint.unsafelyUnwrapped
            guard from == endpoint.rtpSource else { return outbox.drop(.unknownSender, from: from, now: now) }
            if endpoint.srtp != nil {
                guard let clear = unprotectEndpointRTP(received, from: member, address: from, now: now) else { return }
                bytes = clear
            }
        case .webrtc:
            let endpoint = member.endpoint.unsafelyUnwrapped
            guard from == endpoint.rtpSource || from == endpoint.webrtc.unsafelyUnwrapped.trial?.address else {
                return outbox.drop(.unknownSender, from: from, now: now)
            }
            guard endpoint.srtp != nil else { return outbox.drop(.srtpNotReady, from: from, now: now) }
            guard let clear = unprotectEndpointRTP(received, from: member, address: from, now: now) else { return }
            bytes = clear
        }
        var plain = bytes
        var packet: RTPPacketView
        do {
            packet = try RTPPacketView(parsing: bytes)
        } catch {
            return outbox.drop(.malformedRTP, from: from, now: now)
        }
        guard packet.ssrc == member.ssrc || adoptEndpointSSRC(member, packet.ssrc) else { return outbox.drop(.ssrcMismatch, from: from, now: now) }
        guard member.canPublish else { return outbox.drop(.notPublisher, from: from, now: now) }
        if let srtp = member.srtpIn {
            // Authenticated before anything is counted or changed: a forged packet moves nothing.
            let space = output.reserve(bytes.count)
            do {
                plain = output.keep(space, length: try srtp.unprotect(bytes, into: space))
            } catch .replayed, .tooOld {
                return outbox.drop(.srtpReplayed, from: from, now: now)
            } catch {
                return outbox.drop(.srtpRejected, from: from, now: now)
            }
            guard let view = try? RTPPacketView(parsing: plain) else { return outbox.drop(.malformedRTP, from: from, now: now) }
            packet = view
        }
        member.session.heardMedia(at: now.monotonic)
        member.stats.packetsIn &+= 1
        member.stats.bytesIn &+= UInt64(bytes.count)
        if member.uplink.receiveStats.packetsReceived == 0 { noteTimerWork(at: now.monotonic) }  // receiver reports start
        member.uplink.receiveStats.record(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                                   arrivalTimeNanoseconds: now.monotonic.nanoseconds)
        let room = member.room
        // Gaps are tracked from every authenticated packet (a muted member's too: unmuting makes no false gap).
        // A packet that fills a gap (the speaker's answer to the relay's NACK) stays out of a hybrid room's mix buffer's
        // delay estimate, as a client's retransmissions do.
        var repaired = false
        if room.forwards {
            repaired = uplinkRepair.arrived(packet.sequenceNumber, from: member, forwarded: room.selector.isForwarded(member.id), now: now)
        } else if let mix = room.mix, config.mixForwardLoneSpeaker {
            // A mix room's lone speaker is forwarded too (MixEngine+LoneSpeaker.swift): its losses are asked for.
            repaired = uplinkRepair.arrived(packet.sequenceNumber, from: member, forwarded: mix.isLoneSpeaker(member), now: now)
        }
        guard !member.muted else { return outbox.drop(.muted, from: from, now: now) }
        // RFC 2198 RED (RelayCore+Redundancy.swift): whoever did not negotiate it gets the primary alone.
        let primary: (bytes: UnsafeRawBufferPointer, view: RTPPacketView)?
        do {
            primary = try primaryOnly(packet, from: member)
        } catch {
            return outbox.drop(.malformedRTP, from: from, now: now)
        }
        if room.recording != nil { record(primary?.view ?? packet, from: member, in: room, now: now) }

        // No RFC 6464 level (plain RTP tools): a full-size packet counts as speech, a DTX one as silence.
        // A WebRTC member's level is at the id its offer negotiated.
        let levelID = member.webrtc?.audioLevelExtensionID ?? config.audioLevelExtensionID
        let level = SpeechRules.level(packet.audioLevel(id: levelID)?.level, payloadBytes: packet.payloadCount)
        if room.selector.observe(member.id, level: level, now: now.monotonic) {
            rooms.scheduleSpeakerPush(room, now: now)
            noteTimerWork(at: now.monotonic)
        }
        if let mix = room.mix {
            // In a cluster, the room mixes on one node: the others send it their speakers. (A hybrid room mixes on
            // every node with listeners, from the speakers forwarded there.)
            if room.mixesHere {
                mix.insert(packet, from: member, arrival: now.monotonic, retransmission: repaired)
                _ = mix.forwardLoneSpeaker(primary?.view ?? packet, redundant: primary == nil ? nil : packet,
                    from: member, room: room, cascaded: room.cascade != nil, now: now.monotonic) { bytes, listener in
                    sendMix(bytes, to: listener, now: now)
                }
            } else {
                cluster.cascadeMedia(plain, from: member, level: level, room: room)
            }
            if !room.isHybrid { return }
        }
        guard room.selector.isForwarded(member.id) else { return }
        if room.cascade != nil { cluster.cascadeMedia(plain, from: member, level: level, room: room) }
        fanOut(plain, packet: packet, primary: primary, from: member, address: from, now: now)
    }

    /// A forwarded speaker's packet (ours or another node's) to the room's listeners here: protected once with the
    /// room's key, kept for NACKs, copied to each listener's address (or rewritten for an endpoint), and passed to the
    /// other workers' shares. A RED packet (`primary`: the packet of its primary alone) goes to the members as it came
    /// only while every member that is sent the room's packet took RED (`FanOutTable.everyMemberTakesRedundancy`),
    /// else as its primary: the room's key protects one version of each packet, never two (an SRTP index is used
    /// once). Endpoints always get the primary.
    func fanOut(_ received: UnsafeRawBufferPointer, packet receivedView: RTPPacketView,
                primary: (bytes: UnsafeRawBufferPointer, view: RTPPacketView)? = nil,
                from member: Member, address from: PeerAddress, now: Moment) {
        let room = member.room
        let table = room.fanOut
        table.refresh(from: room.members)
        let redundant = primary == nil || table.everyMemberTakesRedundancy
        let plain = redundant ? received : primary.unsafelyUnwrapped.bytes
        let packet = redundant ? receivedView : primary.unsafelyUnwrapped.view
        let endpointPacket = primary?.view ?? receivedView
        // Encrypted listeners get the packet protected with the room's key: one encryption for all of them.
        var protected = plain
        if let downstream = room.downstream {
            let space = output.reserve(plain.count + SRTPSender.rtpOverhead)
            do {
                protected = output.keep(space, length: try downstream.protect(plain, into: space))
            } catch {
                return outbox.drop(.srtpReplayed, from: from, now: now)  // an index the room key already protected
            }
        }
        // The history keeps what encrypted listeners were sent: a retransmission resends those bytes (an SRTP index
        // is never protected twice). It is allocated at the member's first forwarded packet, not at its join: members
        // that never speak (listeners, a join flood) do not cost its slots (128 × 1,500 bytes by default).
        let history = member.uplink.history ?? member.startHistory(slots: config.nackHistorySlots)
        history.store(sequence: packet.sequenceNumber, protected)

        var sent: UInt64 = 0, sentBytes: UInt64 = 0
        let entries = table.entries
        for i in 0..<table.count {
            let listener = entries + i
            guard listener.pointee.memberID != member.id else { continue }
            // A plain-RTP endpoint hears one stream: one forwarded speaker at a time, rewritten onto the endpoint's
            // own SSRC and numbering (RelayCore+RTPEndpoints.swift), protected with its key when it has one.
            if let endpoint = listener.pointee.endpoint {
                let link = endpoint.takeUnretainedValue().endpoint.unsafelyUnwrapped
                guard let slot = link.slot(for: member, id: listener.pointee.memberID, now: now.monotonic) else { continue }
                let n = link.forward(endpointPacket, from: member, slot: slot,
                    srtp: listener.pointee.srtp?.takeUnretainedValue(),
                                     address: listener.pointee.address, output: output, config: config, now: now)
                guard n > 0 else { continue }
                listener.pointee.packetsOut &+= 1
                listener.pointee.bytesOut &+= UInt64(n)
                sent &+= 1
                sentBytes &+= UInt64(n)
                continue
            }
            let out = listener.pointee.cleartext ? plain : protected
            output.append(out, to: listener.pointee.address)
            listener.pointee.packetsOut &+= 1
            listener.pointee.bytesOut &+= UInt64(out.count)
            sent &+= 1
            sentBytes &+= UInt64(out.count)
        }
        // Big rooms: the other workers' shares of the listeners get the protected packet once each.
        if table.hasShares {
            for k in table.shares.indices where !table.shares[k].isEmpty {
                spread.append((k, protected, table.shares[k]))
                table.countShare(k, bytes: protected.count)
                sent &+= UInt64(table.shares[k].count)
                sentBytes &+= UInt64(table.shares[k].count * protected.count)
                outbox.counters.forwardedByOtherWorkers &+= UInt64(table.shares[k].count)
            }
        }
        noteHotLines(member, room: room, history: history, sequence: packet.sequenceNumber, bytes: protected.count)
        outbox.counters.forwarded &+= sent
        outbox.counters.packetsQueued &+= sent
        outbox.counters.bytesQueued &+= sentBytes
    }

    /// Runs the mixes of every mix-mode room whose deadline has passed.
    public func runMixes(now: Moment) {
        for room in rooms.mixRooms {
            guard let mix = room.mix, let due = mix.nextDeadline, due <= now.monotonic else { continue }
            let peers = (room.cascade?.mixTargets ?? []).map { (address: $0.address, worker: $0.worker) }
            mix.run(room: room, now: now.monotonic, shared: peers.isEmpty ? nil : { bytes, frame in
                self.cluster.cascadeMix(bytes, frame: frame, target: 0, room: room, peers: peers)
            }) { bytes, listener in
                if let origin = listener.cascadeOrigin {
                    // A member of another node heard in the mix: its minus-one mix goes to its node.
                    guard let peer = room.cascade?.peers[origin.node] else { return }
                    cluster.cascadeMix(bytes, frame: mix.frameIndex, target: origin.id, room: room, peers: [(peer.address, peer.worker)])
                    return
                }
                sendMix(bytes, to: listener, now: now)
            }
        }
    }

    /// One mixed packet to one member here: protected with that member's key (an encrypted member) or its SDES session
    /// (an SRTP endpoint).
    func sendMix(_ bytes: UnsafeRawBufferPointer, to listener: Member, now: Moment) {
        let length: Int
        if let srtp = listener.endpointSRTP {
            length = EndpointSRTP.queue(bytes, rtcp: false, with: srtp.toEndpoint, to: listener.address, in: output)
            guard length > 0 else { return }
        } else {
            let space = output.reserve(bytes.count + SRTPSender.rtpOverhead)
            if let srtp = listener.srtpOut {
                guard let n = try? srtp.protect(bytes, into: space) else { return }
                length = n
            } else {
                space.copyMemory(from: bytes)
                length = bytes.count
            }
            output.commit(space, length: length, to: listener.address)
        }
        listener.stats.packetsOut &+= 1
        listener.stats.bytesOut &+= UInt64(length)
        if listener.mix.packetsSent == 1 { noteTimerWork(at: now.monotonic) }  // its sender reports start
        outbox.counters.packetsQueued &+= 1
        outbox.counters.bytesQueued &+= UInt64(length)
        outbox.counters.mixedPacketsSent &+= 1
    }

    /// The earliest mix deadline of any mix room with members (the loop wakes for it), or nil.
    public var nextMixDeadline: Instant? {
        var earliest: Instant?
        for room in rooms.mixRooms {
            if let d = room.mix?.nextDeadline, earliest == nil || d < earliest! { earliest = d }
        }
        return earliest
    }

    /// An SRTP endpoint's RTP, checked and decrypted into the output arena (valid until the loop's flush), or nil when
    /// dropped. libsrtp sets up a stream per SSRC it authenticates, so only the endpoint's SSRC reaches it — or, at a
    /// publisher's first packet, the tool's own (adopted by `adoptEndpointSSRC` once it verifies) — and nothing from
    /// an endpoint that may not publish.
    func unprotectEndpointRTP(_ bytes: UnsafeRawBufferPointer, from member: Member, address: PeerAddress, now: Moment) -> UnsafeRawBufferPointer? {
        guard let srtp = member.endpointSRTP else { return bytes }
        guard member.canPublish else {
            outbox.drop(.notPublisher, from: address, now: now)
            return nil
        }
        guard bytes.count >= 12 else {
            outbox.drop(.malformedRTP, from: address, now: now)
            return nil
        }
        let ssrc = EndpointSRTP.word(bytes, at: 8)
        guard ssrc == member.ssrc || (member.uplink.receiveStats.packetsReceived == 0 && sessions.bySSRC[ssrc] == nil) else {
            outbox.drop(.ssrcMismatch, from: address, now: now)
            return nil
        }
        do {
            return try srtp.unprotect(bytes, rtcp: false, in: output)
        } catch {
            outbox.drop(EndpointSRTP.dropReason(error, rtcp: false), from: address, now: now)
            return nil
        }
    }

    /// An endpoint's first packet may carry the tool's own SSRC (ffmpeg and GStreamer pick one unless told): it
    /// replaces the assigned one, once, when no other member uses it. Called only when the SSRC does not match.
    func adoptEndpointSSRC(_ member: Member, _ ssrc: UInt32) -> Bool {
        // Before its first RTP, not before its first datagram: `stats.packetsIn` counts RTCP too, and a browser may send
        // a receiver report (from its own SSRC) before it sends any audio.
        guard member.isRTPEndpoint, member.uplink.receiveStats.packetsReceived == 0, sessions.bySSRC[ssrc] == nil else { return false }
        sessions.bySSRC[member.ssrc] = nil
        member.ssrc = ssrc
        sessions.bySSRC[ssrc] = member
        if log.threshold <= .info { log.write(.info, "RTP endpoint \(member.identity) in \(member.room.name) sends as ssrc \(ssrc)") }
        return true
    }

    /// Notes what forwarding a speaker's packet read and wrote, for the worker to prefetch at its next wakeup
    /// (`HotLines`): the speaker, its session, gaps and SRTP context, its room, the room's fan-out table and key, and
    /// the history slot its next packet takes.
    private func noteHotLines(_ member: Member, room: Room, history: PacketHistory, sequence: UInt16, bytes: Int) {
        hotLines.note(object: member, bytes: 512)
        hotLines.note(object: member.session, bytes: 128)
        if let gaps = member.uplink.gaps { hotLines.note(object: gaps, bytes: 128) }
        member.srtpIn?.noteLines(hotLines)
        hotLines.note(object: room, bytes: 256)
        room.fanOut.noteLines(hotLines)
        room.downstream?.noteLines(hotLines)
        history.noteNextSlot(after: sequence, bytes: bytes, in: hotLines)
    }
}
