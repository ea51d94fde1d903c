import ParleyWire

/// A lone speaker forwarded into the mix: who, and how its numbers map onto the mix's.
struct LoneSpeaker {
    let memberID: UInt32
    /// The forwarding's number (`Member.mix.loneEpoch`).
    let epoch: UInt32
    /// Added to the speaker's RTP timestamps: its first packet lands on the mix timeline at its arrival (where a mixed
    /// frame sent then would be).
    let timestampOffset: UInt32
    /// The speaker's first forwarded sequence number, unwrapped, and the highest so far.
    let first: Int64
    var highest: Int64
    /// The mix timestamp of the highest packet forwarded.
    var lastTimestamp: UInt32
}

/// **A lone speaker is forwarded, not mixed.** A member who starts speaking while nobody else has spoken for
/// `speakingHold` (and the mix sent nothing in the last frame) goes to the mix's listeners packet by packet as its
/// packets arrive: the mix's header (its SSRC, each listener's own sequence numbers, the speaker's timestamps moved
/// onto the mix timeline, the speaker as CSRC with its level) over the speaker's own payload. No jitter buffer waits
/// on the relay and nothing is decoded or coded again: the listener's own buffer is the only one, its NACKs are
/// answered from the mix's history, and the speaker's losses on the way in are asked for (uplink repair) and
/// forwarded when they come, as in a forward room. Gaps stay gaps: a listener's numbers follow the speaker's
/// (`Member.mix.loneSequenceOffset`), so a loss is a loss it can ask for, and a late packet takes its own number.
///
/// The mixer keeps pulling the speaker's buffer (its decoder stays warm) but sends nothing. When someone else
/// contributes to a frame, the forwarding ends at that frame: the speaker's buffer forgets what was forwarded
/// (`AudioReceiveStream.skip(through:)`) and its next packets join the mix at the buffer's target delay, and the mix
/// timeline moves ahead of the last forwarded timestamp if the speaker's clock ran ahead of the relay's.
extension MixEngine {
    /// Forwards `packet` of `member` to the listeners if `member` is (or may now become) the lone speaker; returns
    /// whether it was. `cascaded`: the room spans nodes (its mix goes frame by frame to the others: no forwarding).
    /// `redundant`: the packet as it came when it was RFC 2198 RED (`packet` is then its primary alone): sent as RED
    /// when every listener of the forwarding took RED (native members only), else the primary.
    func forwardLoneSpeaker(_ packet: RTPPacketView, redundant: RTPPacketView? = nil, from member: Member, room: Room,
        cascaded: Bool,
                            now: Instant, send: (UnsafeRawBufferPointer, Member) -> Void) -> Bool {
        guard config.mixForwardLoneSpeaker, !idle, !cascaded, recording == nil, !member.muted,
              packet.payloadCount <= Self.maxPassThroughBytes else { return false }
        if lone?.memberID != member.id {
            guard mayStartLone(member, room: room, now: now), let timeline = rtpTimestamp(at: now) else { return false }
            if lone != nil { endLoneSpeaker() }
            loneEpoch &+= 1
            if loneEpoch == 0 { loneEpoch = 1 }
            let first = Int64(packet.sequenceNumber)
            // The mix sent nothing in the last frame, so its last timestamp is at least a frame behind the timeline.
            let offset = timeline &- packet.timestamp
            lone = LoneSpeaker(memberID: member.id, epoch: loneEpoch, timestampOffset: offset, first: first, highest: first,
                               lastTimestamp: packet.timestamp &+ offset)
        }
        guard var speaker = lone else { return false }
        // Unwrapped against the highest so far; a packet from before the forwarding began is the mixer's.
        let sequence = speaker.highest + Int64(Int16(bitPattern: packet.sequenceNumber &- UInt16(truncatingIfNeeded: speaker.highest)))
        guard sequence >= speaker.first else { return true }
        let timestamp = packet.timestamp &+ speaker.timestampOffset
        if sequence > speaker.highest {
            speaker.highest = sequence
            speaker.lastTimestamp = timestamp
        }
        lone = speaker
        let relative = UInt16(truncatingIfNeeded: sequence - speaker.first)

        listeners.removeAll(keepingCapacity: true)
        defer { listeners.removeAll(keepingCapacity: true) }
        for m in room.members where m !== member && m.canSubscribe && m.hasDestination && m.isLocal && (!sharedOnly || !m.canPublish) {
            listeners.append(m)
        }
        var carried = packet, payloadType = Self.payloadType
        if let redundant, redundant.payloadCount <= Self.maxPassThroughBytes,
           listeners.allSatisfy({ $0.traits.redundancy && $0.kind == .native }) {
            carried = redundant
            payloadType = RedundantAudio.defaultPayloadType
        }

        // The header once (sequence 0, no marker), the payload as it came; kept for NACKs under a frame number of its
        // own (`forwardedFrame` set: never a mixed frame's).
        RTPFixedHeader(payloadType: payloadType, sequenceNumber: 0, timestamp: timestamp, ssrc: ssrc, csrcCount: 1,
                       hasExtension: true).write(into: self.packet)
        var levels = RTPExtensionWriter(into: self.packet, at: RTPFixedHeader.extensionOffset(csrcCount: 1))
        levels.beginElement(id: config.csrcAudioLevelExtensionID, dataCount: 1)
        RTPFixedHeader.writeCSRC(member.ssrc, at: 0, into: self.packet)
        levels.append(AudioLevel.level(loudness: room.selector.state(of: member.id).loudness))
        let headerSize = levels.finish()
        let payload = carried.payload
        let p = self.packet.baseAddress!
        (p + headerSize).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        let frame = Self.forwardedFrame | UInt32(truncatingIfNeeded: sequence) & ~Self.forwardedFrame
        history.store(frame: frame, packet: UnsafeRawBufferPointer(start: p, count: headerSize + payload.count))
        loneForwarded += 1

        for listener in listeners {
            var marker = packet.marker
            if listener.mix.loneEpoch != speaker.epoch {
                // This listener's first packet of the forwarding: its numbers continue its own, from here.
                listener.mix.loneEpoch = speaker.epoch
                listener.mix.loneSequenceOffset = listener.mix.sequence &- relative
                listener.mix.lastFrame = nil  // the next mixed frame it gets starts a talkspurt
                marker = true
            }
            let number = relative &+ listener.mix.loneSequenceOffset
            if Int16(bitPattern: number &- listener.mix.sequence) >= 0 { listener.mix.sequence = number &+ 1 }
            listener.mix.packetsSent &+= 1
            listener.mix.octetsSent &+= UInt32(truncatingIfNeeded: payload.count)
            if listener.mix.log == nil { listener.mix.log = MixSendLog() }
            listener.mix.log!.record(sequence: number, frame: frame, marker: marker, shared: true)
            RTPFixedHeader.patchSequenceNumber(number, in: self.packet)
            self.packet[1] = marker ? self.packet[1] | 0x80 : self.packet[1] & 0x7F
            if let webrtc = listener.webrtc {
                send(webRTCPacket(payloadType: webrtc.payloadType, sequence: number, csrcCount: 1, headerSize: headerSize,
                                  payloadBytes: payload.count), listener)
            } else {
                send(UnsafeRawBufferPointer(start: p, count: headerSize + payload.count), listener)
            }
        }
        return true
    }

    /// Whether `member` is forwarded as the lone speaker (its losses on the way in are then asked for).
    func isLoneSpeaker(_ member: Member) -> Bool { lone?.memberID == member.id }

    /// A forwarding may start with `member` when it is speaking, the mix sent nothing in the last frame, and nobody
    /// else in the room has spoken within `speakingHold`.
    private func mayStartLone(_ member: Member, room: Room, now: Instant) -> Bool {
        guard !mixSending, let spoke = room.selector.state(of: member.id).lastSpeech, now - spoke <= config.speakingHold else { return false }
        for m in room.members where m !== member && m.canPublish {
            if let last = room.selector.state(of: m.id).lastSpeech, now - last <= config.speakingHold { return false }
        }
        return true
    }

    /// Ends the forwarding: the speaker's buffer forgets what was forwarded, and the mix timeline stays ahead of the
    /// last forwarded timestamp.
    func endLoneSpeaker() {
        guard let speaker = lone else { return }
        lone = nil
        inputs[speaker.memberID]?.stream.skip(through: UInt16(truncatingIfNeeded: speaker.highest))
        let next = timestampBase &+ frameIndex &* UInt32(Self.frameSamples)
        let ahead = Int32(bitPattern: speaker.lastTimestamp &+ UInt32(Self.frameSamples) &- next)
        if ahead > 0 { timestampBase &+= UInt32(ahead) }
    }
}
