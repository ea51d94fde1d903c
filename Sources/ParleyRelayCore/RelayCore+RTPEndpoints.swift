import ParleyAuth
import ParleyWire

/// What the relay tells the backend about a new plain-RTP endpoint.
public struct RTPEndpointInfo: Sendable, Equatable {
    /// The endpoint's identity in the room.
    public var identity: String
    /// The SSRC the relay assigned (the endpoint may use its own: the first packet's SSRC is latched).
    public var ssrc: UInt32
    /// The UDP port of the worker owning the room: where the endpoint sends.
    public var port: UInt16
    /// Opus payload type.
    public var payloadType: UInt8
    /// Where the relay sends the endpoint's media, when given.
    public var receiveAddress: PeerAddress?
    /// Member id.
    public var memberID: UInt32
}

extension RelayCore {
    /// Opus payload type of plain-RTP endpoints.
    public static let rtpEndpointPayloadType: UInt8 = 111

    /// Creates a plain-RTP member of `room` (no signalling). Its source address is latched from the first RTP
    /// packet an unknown address sends to this worker (oldest waiting endpoint first); it receives media at
    /// `receiveAddress`, or else at the latched address.
    public func createRTPEndpoint(room name: String, identity: String, displayName: String?, publish: Bool, subscribe: Bool,
                                  receiveAddress: PeerAddress?, now: Moment) -> AdminResult {
        guard !shuttingDown else { return .unavailable("the relay is shutting down") }
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        guard room.member(identity: identity) == nil else { return .conflict("\(identity) is already in room \(name)") }
        let capacity = CallRoom.isCallRoom(room.name) ? CallRoom.capacity : room.maxMembers ?? config.maxMembersPerRoom
        guard room.members.count < capacity else { return .conflict("room \(name) is full (\(capacity) members)") }
        if let r = receiveAddress, byAddress[r] != nil { return .conflict("\(r) is already a member's address") }

        var connectionID: UInt32
        repeat { connectionID = Crypto.randomUInt32() } while connectionID == 0 || byConnection[connectionID] != nil
            || presence.byConnection[connectionID] != nil
        let ssrc = newMemberSSRC()
        let member = Member(id: shared.nextMemberID(), connectionID: connectionID, ssrc: ssrc, identity: identity,
                            name: displayName ?? "", canPublish: publish, canSubscribe: subscribe, sessionSecret: [],
                            joinNonce: [], joinedAt: now.unixMilliseconds, token: "", room: room,
                            address: receiveAddress ?? PeerAddress(ipv4: 0, port: 0), viaPublicPort: false, muted: false,
                            now: now.monotonic)
        member.isRTPEndpoint = true
        member.hasDestination = receiveAddress != nil
        room.members.append(member)
        room.emptySince = nil
        room.mix?.start(now: now.monotonic)
        byConnection[connectionID] = member
        bySSRC[ssrc] = member
        // A subscribe-only endpoint with a receive address needs no latch; everyone else waits for its first packet.
        if publish || receiveAddress == nil { waitingRTPEndpoints.append(member) }
        broadcast(.memberEvent(kind: .joined, member: member.entry, reason: ""), in: room, except: member, now: now)
        events.append(RelayEvent(kind: .memberJoined, room: room.name, identity: identity, detail: member.name,
                                 unixMilliseconds: now.unixMilliseconds))
        if log.threshold <= .info {
            log.write(.info, "RTP endpoint \(identity) added to \(room.name) (member \(member.id), ssrc \(ssrc), receive at \(receiveAddress.map(\.description) ?? "the latched address"))")
        }
        let port = shared.workerPorts[min(workerIndex, shared.workerPorts.count - 1)]
        return .rtpEndpoint(RTPEndpointInfo(identity: identity, ssrc: ssrc, port: port, payloadType: Self.rtpEndpointPayloadType,
                                            receiveAddress: receiveAddress, memberID: member.id))
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

    /// The unknown-sender path of `handleRTP`: latches the oldest waiting endpoint to `from` when the packet is
    /// valid RTP whose SSRC no other member uses. Costs one `isEmpty` check when no endpoint waits.
    func latchRTPEndpoint(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) -> Member? {
        guard !waitingRTPEndpoints.isEmpty, presence.byAddress[from] == nil,
              let packet = try? RTPPacketView(parsing: bytes) else { return nil }
        let member = waitingRTPEndpoints[0]
        if let owner = bySSRC[packet.ssrc], owner !== member { return nil }
        waitingRTPEndpoints.removeFirst()
        if packet.ssrc != member.ssrc {
            bySSRC[member.ssrc] = nil
            member.ssrc = packet.ssrc
            bySSRC[packet.ssrc] = member
        }
        member.rtpSource = from
        byAddress[from] = member
        noteTimerWork(at: now.monotonic)
        if !member.hasDestination {
            member.address = from
            member.hasDestination = true
        }
        member.lastHeard = now.monotonic
        if log.threshold <= .info {
            log.write(.info, "RTP endpoint \(member.identity) in \(member.room.name) latched to \(from) (ssrc \(packet.ssrc))")
        }
        return member
    }

    /// Drops an endpoint's latch and waiting place (called by `removeMember`).
    func forgetRTPEndpoint(_ member: Member) {
        if let source = member.rtpSource, byAddress[source] === member { byAddress[source] = nil }
        waitingRTPEndpoints.removeAll { $0 === member }
    }

    /// The first forwarded member of `room` other than `listener` (what a plain-RTP endpoint hears in forward mode).
    @inline(__always)
    func firstForwarded(in room: Room, except listener: UInt32) -> UInt32? {
        for id in room.selector.forwarded where id != listener { return id }
        return nil
    }
}
