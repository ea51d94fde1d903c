import ParleyCrypto
import ParleyWire

/// An endpoint's streams on the RTP path: which stream a forwarded speaker's packet goes into, and the packet
/// rewritten onto it (`EndpointPacket`), per packet per endpoint listener, without allocating.
extension EndpointLink {
    /// Queues `packet` from `speaker` to an endpoint as its stream `slot` (`EndpointLink.streams`): same payload, the
    /// stream's SSRC, sequence number and timestamp (`RTPStreamRewriter`: continuous across speaker changes, marker at
    /// each change), the speaker named in the CSRC list, its level in both the RFC 6464 element and the RFC 6465
    /// element of the CSRC; protected in place with the endpoint's SDES session when it has one. Returns the bytes
    /// queued (0: not queued — a packet from before the speaker's first in this stream, or libsrtp refused).
    func forward(_ packet: RTPPacketView, from speaker: Member, slot: Int, srtp: EndpointCipher?, address: PeerAddress,
                 output: OutputQueue, config: RelayCoreConfig, now: Moment) -> Int {
        guard let out = streams[slot].rewrite(source: speaker.id, sequence: packet.sequenceNumber, timestamp: packet.timestamp,
                                                         marker: packet.marker, payloadBytes: packet.payloadCount, now: now.monotonic)
        else { return 0 }
        let space = output.reserve(EndpointPacket.headerSize + packet.payloadCount + EndpointCipher.trailerCapacity)
        let header = EndpointPacket.Header(for: self, config: config)
        var n = EndpointPacket.write(packet.payload, as: out, ssrc: streams[slot].ssrc, speaker: speaker.ssrc,
                                     level: EndpointPacket.level(of: packet, from: speaker, config: config), header: header, into: space)
        if let srtp {
            guard let protected = try? srtp.protectRTP(space, length: n) else { return 0 }
            n = protected
        }
        output.commit(space, length: n, to: address)
        return n
    }

    /// Which of the endpoint's streams a forwarded `speaker`'s packet goes into, if any. With several (a WebRTC member's
    /// slots): the one that speaker holds; else a free one — never fed, or fed by a speaker no longer forwarded — which
    /// it then holds while forwarded, so each forwarded speaker stays on one track. With one stream, `hears`.
    func slot(for speaker: Member, id: UInt32, now: Instant) -> Int? {
        // Indexed in place (no copy of the array: this runs per packet per endpoint).
        let count = streams.count
        guard count > 1 else { return count == 1 && hears(speaker, id: id, now: now) ? 0 : nil }
        for k in 0..<count where streams[k].source == speaker.id { return k }
        let selector = speaker.room.selector
        guard selector.isForwarded(speaker.id) else { return nil }
        for k in 0..<count where streams[k].source == nil { return k }
        for k in 0..<count where !selector.isForwarded(streams[k].source!) { return k }
        return nil
    }

    /// Whether a forwarded `speaker`'s packet goes into the endpoint's (member `id`'s) one stream: the endpoint hears one
    /// speaker at a time, the one it hears now for as long as it holds a forwarding slot and keeps speaking; another
    /// takes over when that one has been silent for the speech hold, or is `hysteresis` louder (smoothed) after
    /// `minimumDwell`. Packets of the one it hears flow through silence too (DTX), so its stream's timing stays its own.
    func hears(_ speaker: Member, id: UInt32, now: Instant) -> Bool {
        guard !streams.isEmpty else { return false }
        guard let current = streams[0].source, current != speaker.id else { return true }
        let selector = speaker.room.selector
        guard selector.isForwarded(current), current != id else { return true }
        let held = selector.state(of: current), candidate = selector.state(of: speaker.id)
        guard let spoke = candidate.lastSpeech, selector.rules.isSpeaking(lastSpeech: spoke, now: now) else { return false }
        guard let heldSpoke = held.lastSpeech, selector.rules.isSpeaking(lastSpeech: heldSpoke, now: now) else { return true }
        return candidate.loudness > held.loudness + selector.hysteresis && now - streams[0].lastSwitchAt >= selector.minimumDwell
    }
}

/// One packet of an endpoint's rewritten stream (see `EndpointLink.forward`).
enum EndpointPacket {
    /// Bytes the rewritten header may take: fixed header, one CSRC, and an extension block with the RFC 6464 and
    /// RFC 6465 levels (4 + 2 + 2 bytes, padded to 8).
    static let headerSize = RTPFixedHeader.extensionOffset(csrcCount: 1) + 8

    /// What the endpoint negotiated: its payload type and the ids of the RFC 6464 and RFC 6465 elements (0: left out).
    struct Header {
        var payloadType: UInt8, levelID: UInt8, csrcLevelID: UInt8

        /// `endpoint`'s: a WebRTC member's offer's payload type and level id, and no CSRC level (no browser
        /// negotiates it); a plain-RTP endpoint's, the SDP the API gave it.
        init(for endpoint: EndpointLink, config: RelayCoreConfig) {
            if let webrtc = endpoint.webrtc {
                self.init(payloadType: webrtc.payloadType, levelID: webrtc.audioLevelExtensionID, csrcLevelID: 0)
            } else {
                self.init(payloadType: RelayCore.rtpEndpointPayloadType, levelID: config.audioLevelExtensionID,
                          csrcLevelID: config.csrcAudioLevelExtensionID)
            }
        }

        init(payloadType: UInt8, levelID: UInt8, csrcLevelID: UInt8) {
            self.payloadType = payloadType
            self.levelID = levelID
            self.csrcLevelID = csrcLevelID
        }
    }

    /// The level an endpoint's packet carries for `speaker`'s `packet`: the packet's RFC 6464 level when it has one,
    /// else what `SpeechRules` makes of its size. A function of the packet alone, so that a NACK answer rebuilds the
    /// packet first sent byte for byte (SRTP may then protect it again under the same index).
    static func level(of packet: RTPPacketView, from speaker: Member, config: RelayCoreConfig) -> AudioLevel {
        let labelled = packet.audioLevel(id: speaker.webrtc?.audioLevelExtensionID ?? config.audioLevelExtensionID)
        let level = SpeechRules.level(labelled?.level, payloadBytes: packet.payloadCount)
        return AudioLevel(voice: labelled?.voice ?? (level < AudioLevel.silence), level: level)
    }

    /// Writes `payload` with the stream's header (`out`, `ssrc`), the speaker as the one CSRC and its level in the
    /// elements `header` names, into `space` (room for `headerSize` + payload); returns the packet's size.
    static func write(_ payload: UnsafeRawBufferPointer, as out: RTPStreamRewriter.Output, ssrc: UInt32, speaker: UInt32,
                      level: AudioLevel, header: Header, into space: UnsafeMutableRawBufferPointer) -> Int {
        let hasLevels = header.levelID != 0 || header.csrcLevelID != 0
        RTPFixedHeader(marker: out.marker, payloadType: header.payloadType, sequenceNumber: out.sequenceNumber,
                       timestamp: out.timestamp, ssrc: ssrc, csrcCount: 1, hasExtension: hasLevels).write(into: space)
        RTPFixedHeader.writeCSRC(speaker, at: 0, into: space)
        var headerSize = RTPFixedHeader.extensionOffset(csrcCount: 1)
        if hasLevels {
            var levels = RTPExtensionWriter(into: space, at: headerSize)
            if header.levelID != 0 { levels.appendElement(id: header.levelID, byte: level.byte) }
            if header.csrcLevelID != 0 { levels.appendElement(id: header.csrcLevelID, byte: level.level) }
            headerSize = levels.finish()
        }
        UnsafeMutableRawBufferPointer(rebasing: space[headerSize..<(headerSize + payload.count)]).copyMemory(from: payload)
        return headerSize + payload.count
    }
}
