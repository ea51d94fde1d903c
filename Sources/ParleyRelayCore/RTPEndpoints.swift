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

/// The backend's plain-RTP endpoints: members with no signalling whose addresses the backend names. A part of the
/// core (`CorePart`): it makes and removes them; their packets take the core's RTP path like any member's.
final class RTPEndpoints: CorePart {
    unowned(unsafe) let core: RelayCore  // the core owns its parts and outlives them

    init(core: RelayCore) { self.core = core }

    /// Creates a plain-RTP member of `room` (no signalling). Its addresses are named by the backend that creates it,
    /// never learned from traffic: RTP is accepted only from `source` (a publisher must have one; default `receive`,
    /// as tools that send and receive on one port do), and the room's media goes only to `receive` (a subscriber must
    /// have one; default `source`). A stranger's packet therefore takes nothing, and nothing is sent anywhere the
    /// backend did not name. With `keys` (the default of the API) the endpoint speaks SRTP `AES_CM_128_HMAC_SHA1_80`:
    /// what it sends is checked and decrypted before anything else, what it is sent is protected; without them it
    /// speaks cleartext RTP, which only a relay that allows cleartext (`allowCleartext`) accepts.
    func create(room name: String, identity: String, displayName: String?, publish: Bool, subscribe: Bool,
                                  source: PeerAddress?, receive: PeerAddress?, keys: RTPEndpointKeys?, now: Moment) -> AdminResult {
        guard !core.shuttingDown else { return .unavailable("the relay is shutting down") }
        // Cleartext only where allowed, or inside this host: the relay's own SIP gateway on loopback (the HTTP API
        // refuses cleartext endpoints itself whatever their address, unless allow_cleartext is on).
        let insideHost = [source, receive].allSatisfy { $0?.isLoopback ?? true } && (source ?? receive) != nil
        guard keys != nil || config.allowCleartext || insideHost else {
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

        let session = RelaySession(connectionID: sessions.newConnectionID(random), identity: identity, name: displayName ?? "",
                                        sessionSecret: [], nonce: [], token: "", signals: false,
                                        address: destination ?? source ?? PeerAddress(ipv4: 0, port: 0), viaPublicPort: false,
                                        now: now.monotonic)
        let ssrc = core.newMemberSSRC()
        let endpoint = EndpointLink(rtpSource: source)
        endpoint.srtp = srtp
        let member = Member(id: shared.nextMemberID(), session: session, kind: .rtpEndpoint, endpoint: endpoint, ssrc: ssrc, canPublish: publish,
                            canSubscribe: subscribe, joinedAt: now.unixMilliseconds, room: room, muted: false, mixSequence: random.uint16())
        member.hasDestination = destination != nil
        if destination != nil && !room.hearsMix(member) {
            member.endpoint!.streams = [RTPStreamRewriter(ssrc: core.newMemberSSRC(), initialSequence: random.uint16(), initialTimestamp: random.uint32())]
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
        return .rtpEndpoint(RTPEndpointInfo(identity: identity, ssrc: ssrc, port: port, payloadType: RelayCore.rtpEndpointPayloadType,
                                            sourceAddress: source, receiveAddress: destination, memberID: member.id, keys: keys,
                                            streamSSRC: destination == nil ? nil : room.hearsMix(member) ? room.mix?.ssrc : member.endpoint!.streams.first?.ssrc,
                                            cname: core.relayCNAME,
                                            audioLevelExtensionID: config.audioLevelExtensionID,
                                            csrcAudioLevelExtensionID: config.csrcAudioLevelExtensionID))
    }

    /// Removes the RTP endpoint `identity` of `room` (a signalling member is not touched).
    func delete(room name: String, identity: String, now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        guard let member = room.member(identity: identity), member.isRTPEndpoint else {
            return .notFound("\(identity) is not an RTP endpoint of room \(name)")
        }
        removeMember(member, reason: "removed by the backend", goodbye: nil, now: now)
        return .ok
    }
}
