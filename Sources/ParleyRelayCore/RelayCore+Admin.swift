import ParleyAuth
import ParleyWire

/// The outcome of an administrative command, as the HTTP API maps it onto a status.
public enum AdminResult: Sendable, Equatable {
    /// Done.
    case ok
    /// The room (or member) is not on this worker.
    case notFound(String)
    /// The command conflicts with the current state (a room that already exists).
    case conflict(String)
    /// The relay cannot do it now (room limit reached, mixer failed, shutting down).
    case unavailable(String)
    /// The command is incomplete or contradicts itself (an endpoint without the address it needs).
    case invalid(String)
    /// A plain-RTP endpoint was created (see `RelayCore+RTPEndpoints.swift`).
    case rtpEndpoint(RTPEndpointInfo)
    /// A WebRTC member was created (see `RelayCore+WebRTC.swift`).
    case webRTCMember(WebRTCMemberInfo)
    /// A web page's call was placed under this id (see `RelayCore+WebPresence.swift`).
    case webCall(callID: UInt32)
    /// The token may not do this (a page's presence stream named by another identity's token).
    case forbidden(String)
    /// A worker drained: members told to move to another node, and those that stay (see `RelayCore.drain`).
    case drained(moved: Int, staying: Int)
    /// A WebRTC member's ICE restarted: the relay's new credentials for the answer (`WebRTCMembers.restartICE`).
    case iceRestarted(ufrag: String, password: String, port: UInt16)
}

/// Why a room could not be opened: the refusal a joiner gets.
struct OpenRoomFailure: Error {
    var code: RefusalCode
    var reason: String
}

/// The backend's commands (HTTP API): rooms created, closed and limited, members kicked and muted, texts from the
/// backend, and the event stream.
extension RelayCore {
    /// Replaces this worker's core settings (a reload, SIGHUP): what is decided from now on follows them — joins and
    /// their budget, limits on rooms and members, queues, timers as they next run. Rooms keep the mode and limits they
    /// were opened with; sessions stay.
    public func reconfigure(_ new: RelayCoreConfig) -> AdminResult {
        if new.joinsPerSecond != config.joinsPerSecond {
            admission.joinBudget = JoinBudget(perSecond: new.joinsPerSecond)
        }
        outbox.config = new
        return .ok
    }

    /// Creates an empty room from the backend: it closes after `emptyTimeout` (default: the relay's) unless
    /// someone joins; `maxMembers` (default: the relay's) caps its members; `audience`: its listeners are counted, not
    /// announced (`RoomRoster`).
    public func createRoom(name: String, mode: RoomMode?, maxMembers: Int?, emptyTimeout: Interval?,
                           audience: Bool = false, now: Moment) -> AdminResult {
        guard !shuttingDown else { return .unavailable("the relay is shutting down") }
        guard rooms[name] == nil else { return .conflict("room \(name) already exists") }
        let mode = mode ?? config.defaultRoomMode
        let room: Room
        switch rooms.open(name: name, mode: mode, audience: audience, now: now) {
        case .success(let r): room = r
        case .failure(let f): return .unavailable(f.reason)
        }
        room.maxMembers = maxMembers
        room.emptyTimeout = emptyTimeout
        room.emptySince = now.monotonic
        return .ok
    }

    /// Closes a room: every member is told why (goodbye `roomClosed`) and removed, then the room is forgotten.
    public func closeRoom(name: String, reason: String, now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        for member in room.members where member.isLocal {
            removeMember(member, reason: reason, goodbye: .roomClosed, now: now)
        }
        cluster.leaveCascade(room, now: now)
        room.mix?.stop()
        rooms.forget(room, reason: reason, now: now)
        if log.threshold <= .info { log.write(.info, "room \(name) closed: \(reason)", fields: [("room", name)]) }
        return .ok
    }

    /// Kicks the member `identity` out of `room` (goodbye `kicked`).
    public func kick(room name: String, identity: String, now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        guard let member = room.member(identity: identity) else { return .notFound("\(identity) is not in room \(name)") }
        removeMember(member, reason: "kicked by the backend", goodbye: .kicked, now: now)
        return .ok
    }

    /// Mutes or unmutes the member `identity` of `room`; the room (the member included) is told. A mute from here
    /// is the room's (flag `mutedByRoom`): it holds, across rejoins, until lifted here; the member cannot undo it.
    public func setMuted(room name: String, identity: String, muted: Bool, now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        guard let member = room.member(identity: identity) else { return .notFound("\(identity) is not in room \(name)") }
        rooms.setMutedByRoom(member, muted, now: now)
        return .ok
    }

    /// Sends `text` to everyone in `room`: from the backend (`fromIdentity` "backend", member id 0), or from a member
    /// of the room writing through the API (`asMember`: the web page), whose own copy is not sent back. Logged as a
    /// `text` event either way. `attachments`: image ids (`TextAttachments`) the text carries, passed on unread; with
    /// one or more the text may be empty. `keepRequest`: the HTTP request the message store answers once it kept the
    /// text, or could not (0: none).
    public func sendText(room name: String, text: String, attachments: [String] = [], fromIdentity: String = "backend", asMember: Bool = false,
                         keepRequest: UInt64 = 0, now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        let sender = asMember ? room.member(identity: fromIdentity) : nil
        if asMember && sender == nil { return .notFound("\(fromIdentity) is not in room \(name)") }
        backendMessageID &+= 1
        guard let fragments = TextFragment.split(text, messageID: backendMessageID, attachments: attachments) else {
            return .conflict("a text must be 1–\(Signalling.maxTextBytes) bytes (or empty with an image), with at most "
                             + "\(TextAttachments.maxCount) attachment ids")
        }
        _ = cluster.cascadeText(fragments, from: sender, to: "", room: room)
        for member in room.members where member !== sender && member.isLocal && outbox.canTakeText(member.session.channel, fragments: fragments.count) {
            for f in fragments {
                outbox.enqueue(.text(fromMemberID: sender?.id ?? 0, fromIdentity: fromIdentity, direct: false, fragment: f), to: member.session)
            }
            outbox.pump(member.session, now: now)
        }
        rooms.events.append(RelayEvent(kind: .text, room: room.name, identity: fromIdentity, detail: text, unixMilliseconds: now.unixMilliseconds,
                                       attachments: attachments))
        history.append(.roomText(room: room.name, identity: fromIdentity, name: sender?.name ?? "", text: text, at: now.unixMilliseconds,
                                 attachments: attachments, receipt: keepRequest == 0 ? nil : .init(request: keepRequest)))
        return .ok
    }

    /// Events since the last drain (room, member and call events), oldest first.
    public func drainEvents() -> [RelayEvent] {
        var drained = rooms.events.drain()
        for call in drainCallEvents() { drained.append(RelayEvent(call)) }
        drained += presence.drainNotices()
        return drained
    }

    /// Bumped by every event and every web page's notice: unchanged means no room or member came or went, no one
    /// was (un)muted, and no page has anything new.
    public var eventRevision: UInt64 { rooms.events.revision &+ presence.noticeRevision }

    /// The per-room limits set at creation (nil = the relay's defaults).
    public func roomLimits(_ name: String) -> (maxMembers: Int?, emptyTimeout: Interval?)? {
        rooms[name].map { ($0.maxMembers, $0.emptyTimeout) }
    }

    // MARK: WebRTC members (`WebRTCMembers`)

    /// Adds a WebRTC member to `room` (the backend's WHIP/WHEP offer): see `WebRTCMembers.create`.
    public func createWebRTCMember(room: String, identity: String, displayName: String?, createMode: RoomMode?,
                                   terms: WebRTCOfferTerms, now: Moment) -> AdminResult {
        webRTCMembers.create(room: room, identity: identity, displayName: displayName, createMode: createMode, terms: terms, now: now)
    }

    /// Ends the WebRTC member `identity` of `room` (the WHIP/WHEP `DELETE`): it leaves, its browser told by close_notify.
    public func restartWebRTCICE(room: String, identity: String, remoteUfrag: String, remotePassword: String,
                                 now: Moment) -> AdminResult {
        webRTCMembers.restartICE(room: room, identity: identity, remoteUfrag: remoteUfrag, remotePassword: remotePassword, now: now)
    }

    public func deleteWebRTCMember(room: String, identity: String, now: Moment) -> AdminResult {
        webRTCMembers.delete(room: room, identity: identity, now: now)
    }

    /// Why the token with `claims` may not join `room` as a WebRTC member, or nil: a call room admits only the two
    /// parties' call tokens (`CallRoom`), through WebRTC as natively.
    public static func webRTCRefusal(_ claims: TokenClaims, room: String) -> String? {
        CallRoom.refusal(claims, room: room)?.1
    }

    // MARK: Plain-RTP endpoints (`RTPEndpoints`)

    /// Creates a plain-RTP member of `room` with the addresses the backend names: see `RTPEndpoints.create`.
    public func createRTPEndpoint(room: String, identity: String, displayName: String?, publish: Bool, subscribe: Bool,
                                  source: PeerAddress?, receive: PeerAddress?, keys: RTPEndpointKeys?, now: Moment) -> AdminResult {
        rtpEndpoints.create(room: room, identity: identity, displayName: displayName, publish: publish, subscribe: subscribe,
                            source: source, receive: receive, keys: keys, now: now)
    }

    /// Removes the RTP endpoint `identity` of `room` (a signalling member is not touched).
    public func deleteRTPEndpoint(room: String, identity: String, now: Moment) -> AdminResult {
        rtpEndpoints.delete(room: room, identity: identity, now: now)
    }

    /// Drains this worker (`POST /v1/cluster/drain`): see `ClusterRooms.drain`.
    public func drain(now: Moment) -> AdminResult { cluster.drain(now: now) }
}
