import ParleyCrypto
import ParleyAuth
import ParleyWire

/// What the relay tells the backend about a new plain-RTP endpoint.
public struct RTPEndpointInfo: Sendable, Equatable {
    /// The endpoint's identity in the room.
    public var identity: String
    /// The SSRC the relay assigned (the endpoint may use its own: its first packet's SSRC is taken instead).
    public var ssrc: UInt32
    /// The UDP port of the worker owning the room: where the endpoint sends.
    public var port: UInt16
    /// Opus payload type.
    public var payloadType: UInt8
    /// The only address the endpoint's RTP is accepted from (publishing endpoints).
    public var sourceAddress: PeerAddress?
    /// Where the relay sends the room's media (subscribing endpoints).
    public var receiveAddress: PeerAddress?
    /// Member id.
    public var memberID: UInt32
    /// The SDES keys (nil: a cleartext endpoint, which only `allowCleartext` permits).
    public var keys: RTPEndpointKeys?
    /// The SSRC of the one stream the endpoint receives in a forward room (nil: it does not subscribe).
    public var streamSSRC: UInt32?
    /// The relay's CNAME for that stream (RTCP SDES, the SDP's `a=ssrc … cname:`).
    public var cname: String
    /// The RFC 6464 and RFC 6465 header extension ids the relay uses.
    public var audioLevelExtensionID: UInt8
    public var csrcAudioLevelExtensionID: UInt8
}

/// The backend's plain-RTP endpoints: members with no signalling whose addresses the backend names.
extension RelayCore {
    /// Opus payload type of plain-RTP endpoints.
    public static let rtpEndpointPayloadType: UInt8 = 111

    /// The CNAME of the streams this worker originates (RTCP SDES and the endpoints' SDP): random, names no one.
    public var relayCNAME: String { "parley-" + String(relaySSRC, radix: 16) }

    /// Creates a plain-RTP member of `room` (no signalling). Its addresses are named by the backend that creates it,
    /// never learned from traffic: RTP is accepted only from `source` (a publisher must have one; default `receive`,
    /// as tools that send and receive on one port do), and the room's media goes only to `receive` (a subscriber must
    /// have one; default `source`). A stranger's packet therefore takes nothing, and nothing is sent anywhere the
    /// backend did not name. With `keys` (the default of the API) the endpoint speaks SRTP `AES_CM_128_HMAC_SHA1_80`:
    /// what it sends is checked and decrypted before anything else, what it is sent is protected; without them it
    /// speaks cleartext RTP, which only a relay that allows cleartext (`allowCleartext`) accepts.
    public func createRTPEndpoint(room name: String, identity: String, displayName: String?, publish: Bool, subscribe: Bool,
                                  source: PeerAddress?, receive: PeerAddress?, keys: RTPEndpointKeys?, now: Moment) -> AdminResult {
        guard !shuttingDown else { return .unavailable("the relay is shutting down") }
        guard keys != nil || config.allowCleartext else {
            return .invalid("this relay refuses cleartext RTP endpoints (allow_cleartext is off): leave out \"srtp\": false")
        }
        var srtp: EndpointSRTP?
        if let keys {
            guard let sessions = EndpointSRTP(keys: keys) else { return .unavailable("libsrtp could not set up the endpoint's SRTP") }
            srtp = sessions
        }
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        let source = publish ? source ?? receive : nil
        let destination = subscribe ? receive ?? source : nil
        if publish && source == nil { return .invalid("a publishing endpoint needs source_address (or receive_address, when it sends from there)") }
        if subscribe && destination == nil { return .invalid("a subscribing endpoint needs receive_address") }
        guard room.member(identity: identity) == nil else { return .conflict("\(identity) is already in room \(name)") }
        let capacity = rooms.capacity(of: room)
        guard room.members.count < capacity else { return .conflict("room \(name) is full (\(capacity) members)") }
        if let s = source, sessions.byAddress[s] != nil { return .conflict("\(s) is already a member's address") }

        let session = SignallingSession(connectionID: sessions.newConnectionID(random), identity: identity, name: displayName ?? "",
                                        sessionSecret: [], nonce: [], token: "", signals: false,
                                        address: destination ?? source ?? PeerAddress(ipv4: 0, port: 0), viaPublicPort: false,
                                        now: now.monotonic)
        let ssrc = newMemberSSRC()
        let endpoint = EndpointLink(rtpSource: source)
        endpoint.srtp = srtp
        let member = Member(id: shared.nextMemberID(), session: session, kind: .rtpEndpoint, endpoint: endpoint, ssrc: ssrc, canPublish: publish,
                            canSubscribe: subscribe, joinedAt: now.unixMilliseconds, room: room, muted: false, mixSequence: random.uint16())
        member.hasDestination = destination != nil
        if destination != nil && !room.hearsMix(member) {
            member.endpoint!.streams = [RTPStreamRewriter(ssrc: newMemberSSRC(), initialSequence: random.uint16(), initialTimestamp: random.uint32())]
        }
        room.members.append(member)
        room.emptySince = nil
        room.cascade?.retarget(room: room)
        if room.mixesHere { room.mix?.start(now: now.monotonic) }
        sessions.add(.member(member), at: source)
        sessions.bySSRC[ssrc] = member
        // RTCP may also come from the RTP port + 1 of the tool (no RTCP multiplexing) and, for a subscriber, from its
        // receive address: each linked unless another member already uses it.
        var rtcp: [PeerAddress] = []
        for base in [source, destination].compactMap({ $0 }) {
            var next = base
            next.port &+= 1
            for a in [base, next] where a.port != 0 && a != source && !rtcp.contains(a) && sessions.byAddress[a] == nil { rtcp.append(a) }
        }
        for a in rtcp { sessions.link(a, to: .member(member)) }
        endpoint.rtcpSources = rtcp
        noteTimerWork(at: now.monotonic)
        member.traits.isAudience = room.roster.audienceMode && !member.canPublish
        rooms.announceJoin(member, now: now)
        if log.threshold <= .info {
            log.write(.info, "\(srtp == nil ? "cleartext RTP" : "SRTP") endpoint \(identity) added to \(room.name) (member \(member.id), ssrc \(ssrc), from \(source.map(\.description) ?? "-"), to \(destination.map(\.description) ?? "-"))")
        }
        let port = shared.workerPorts[min(workerIndex, shared.workerPorts.count - 1)]
        return .rtpEndpoint(RTPEndpointInfo(identity: identity, ssrc: ssrc, port: port, payloadType: Self.rtpEndpointPayloadType,
                                            sourceAddress: source, receiveAddress: destination, memberID: member.id, keys: keys,
                                            streamSSRC: destination == nil ? nil : room.hearsMix(member) ? room.mix?.ssrc : member.endpoint!.streams.first?.ssrc,
                                            cname: relayCNAME,
                                            audioLevelExtensionID: config.audioLevelExtensionID,
                                            csrcAudioLevelExtensionID: config.csrcAudioLevelExtensionID))
    }

    /// Removes the RTP endpoint `identity` of `room` (a signalling member is not touched).
    public func deleteRTPEndpoint(room name: String, identity: String, now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        guard let member = room.member(identity: identity), member.isRTPEndpoint else {
            return .notFound("\(identity) is not an RTP endpoint of room \(name)")
        }
        removeMember(member, reason: "removed by the backend", goodbye: nil, now: now)
        return .ok
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

    /// Queues `packet` from `speaker` to an endpoint as its stream `slot` (`EndpointLink.streams`): same payload, the
    /// stream's SSRC, sequence number and timestamp (`RTPStreamRewriter`: continuous across speaker changes, marker at
    /// each change), the speaker named in the CSRC list, its level in both the RFC 6464 element and the RFC 6465
    /// element of the CSRC; protected in place with the endpoint's SDES session when it has one. Returns the bytes
    /// queued (0: not queued — a packet from before the speaker's first in this stream, or libsrtp refused).
    func forwardToEndpoint(_ packet: RTPPacketView, from speaker: Member, to endpoint: EndpointLink, slot: Int,
                           srtp: EndpointCipher?, address: PeerAddress, now: Moment) -> Int {
        guard let out = endpoint.streams[slot].rewrite(source: speaker.id, sequence: packet.sequenceNumber, timestamp: packet.timestamp,
                                                         marker: packet.marker, payloadBytes: packet.payloadCount, now: now.monotonic)
        else { return 0 }
        let space = output.reserve(EndpointPacket.headerSize + packet.payloadCount + EndpointCipher.trailerCapacity)
        let header = EndpointPacket.Header(for: endpoint, config: config)
        var n = EndpointPacket.write(packet.payload, as: out, ssrc: endpoint.streams[slot].ssrc, speaker: speaker.ssrc,
                                     level: EndpointPacket.level(of: packet, from: speaker, config: config), header: header, into: space)
        if let srtp {
            guard let protected = try? srtp.protectRTP(space, length: n) else { return 0 }
            n = protected
        }
        output.commit(space, length: n, to: address)
        return n
    }

    /// Which of `endpoint`'s streams a forwarded `speaker`'s packet goes into, if any. With several (a WebRTC member's
    /// slots): the one that speaker holds; else a free one — never fed, or fed by a speaker no longer forwarded — which
    /// it then holds while forwarded, so each forwarded speaker stays on one track. With one stream, `endpointHears`.
    func endpointSlot(for speaker: Member, endpoint: EndpointLink, id: UInt32, now: Instant) -> Int? {
        // Indexed in place (no copy of the array: this runs per packet per endpoint).
        let count = endpoint.streams.count
        guard count > 1 else { return count == 1 && endpointHears(speaker, endpoint: endpoint, id: id, now: now) ? 0 : nil }
        for k in 0..<count where endpoint.streams[k].source == speaker.id { return k }
        let selector = speaker.room.selector
        guard selector.isForwarded(speaker.id) else { return nil }
        for k in 0..<count where endpoint.streams[k].source == nil { return k }
        for k in 0..<count where !selector.isForwarded(endpoint.streams[k].source!) { return k }
        return nil
    }

    /// Whether a forwarded `speaker`'s packet goes into `endpoint`'s (member `id`'s) one stream: the endpoint hears one
    /// speaker at a time, the one it hears now for as long as it holds a forwarding slot and keeps speaking; another
    /// takes over when that one has been silent for the speech hold, or is `hysteresis` louder (smoothed) after
    /// `minimumDwell`. Packets of the one it hears flow through silence too (DTX), so its stream's timing stays its own.
    func endpointHears(_ speaker: Member, endpoint: EndpointLink, id: UInt32, now: Instant) -> Bool {
        guard !endpoint.streams.isEmpty else { return false }
        guard let current = endpoint.streams[0].source, current != speaker.id else { return true }
        let selector = speaker.room.selector
        guard selector.isForwarded(current), current != id else { return true }
        let held = selector.state(of: current), candidate = selector.state(of: speaker.id)
        guard let spoke = candidate.lastSpeech, selector.rules.isSpeaking(lastSpeech: spoke, now: now) else { return false }
        guard let heldSpoke = held.lastSpeech, selector.rules.isSpeaking(lastSpeech: heldSpoke, now: now) else { return true }
        return candidate.loudness > held.loudness + selector.hysteresis && now - endpoint.streams[0].lastSwitchAt >= selector.minimumDwell
    }
}

/// One packet of an endpoint's rewritten stream (see `RelayCore.forwardToEndpoint`).
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
