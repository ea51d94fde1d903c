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
}

/// Why a room could not be opened: the refusal a joiner gets.
struct OpenRoomFailure: Error {
    var code: RefusalCode
    var reason: String
}

extension RelayCore {
    /// Creates a room and its speaker selector (and mixer in mix mode), reserving it against `maxRooms`.
    /// Fails when the relay is full or the mixer cannot start; the caller refuses.
    func openRoom(name: String, mode: String, creator: String? = nil, now: Moment) -> Result<Room, OpenRoomFailure> {
        if let creator {
            if let failure = shared.tryReserveRoom(creator: creator) { return .failure(failure) }
        } else {
            guard shared.tryReserveRoom() else { return .failure(OpenRoomFailure(code: .tooManyRooms, reason: "the relay has reached its room limit")) }
        }
        let room = Room(name: name, mode: mode, createdAt: now.unixMilliseconds, creator: creator,
                        selector: SpeakerSelector(capacity: config.maxForwardedSpeakers, speechThreshold: config.speechLevelThreshold,
                                                  releaseAfter: config.speakerReleaseAfter, minimumDwell: config.speakerMinimumDwell,
                                                  hysteresis: config.speakerHysteresisDecibels))
        if mode == "mix" {
            do {
                room.mix = try MixEngine(ssrc: random.ssrc(), timestampBase: random.uint32(), config: config)
            } catch {
                shared.releaseRoom(creator: creator)
                log.write(.error, "cannot create the mixer for \(name): \(error.message)")
                return .failure(OpenRoomFailure(code: .badRequest, reason: "the relay could not start a mixer"))
            }
        }
        rooms[name] = room
        if room.mix != nil { mixRooms.append(room) }
        events.append(RelayEvent(kind: .roomStarted, room: name, detail: mode, unixMilliseconds: now.unixMilliseconds))
        if log.threshold <= .info { log.write(.info, "room \(name) opened (mode \(mode), worker \(workerIndex))") }
        return .success(room)
    }

    /// Forgets a room (already emptied of members) and returns its reservation.
    func forgetRoom(_ room: Room, reason: String, now: Moment) {
        rooms[room.name] = nil
        mixRooms.removeAll { $0 === room }
        shared.releaseRoom(creator: room.creator)
        events.append(RelayEvent(kind: .roomClosed, room: room.name, detail: reason, unixMilliseconds: now.unixMilliseconds))
    }

    /// Creates an empty room from the backend: it closes after `emptyTimeout` (default: the relay's) unless
    /// someone joins; `maxMembers` (default: the relay's) caps its members.
    public func createRoom(name: String, mode: String?, maxMembers: Int?, emptyTimeout: Int64?, now: Moment) -> AdminResult {
        guard !shuttingDown else { return .unavailable("the relay is shutting down") }
        guard rooms[name] == nil else { return .conflict("room \(name) already exists") }
        let mode = mode ?? config.defaultRoomMode
        let room: Room
        switch openRoom(name: name, mode: mode, now: now) {
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
        for member in room.members {
            removeMember(member, reason: reason, goodbye: .roomClosed, now: now)
        }
        room.mix?.stop()
        forgetRoom(room, reason: reason, now: now)
        if log.threshold <= .info { log.write(.info, "room \(name) closed: \(reason)") }
        return .ok
    }

    /// Kicks the member `identity` out of `room` (goodbye `kicked`).
    public func kick(room name: String, identity: String, now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        guard let member = room.member(identity: identity) else { return .notFound("\(identity) is not in room \(name)") }
        removeMember(member, reason: "kicked by the backend", goodbye: .kicked, now: now)
        return .ok
    }

    /// Mutes or unmutes the member `identity` of `room`; the room (the member included) is told.
    public func setMuted(room name: String, identity: String, muted: Bool, now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        guard let member = room.member(identity: identity) else { return .notFound("\(identity) is not in room \(name)") }
        setMuted(member, muted, now: now)
        return .ok
    }

    /// Sends a text to every member of `room` from the backend (sender identity `fromIdentity`, member id 0).
    public func sendText(room name: String, text: String, fromIdentity: String = "backend", now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        backendMessageID &+= 1
        guard let fragments = TextFragment.split(text, messageID: backendMessageID) else {
            return .conflict("a text must be 1–\(Signalling.maxTextBytes) bytes")
        }
        for member in room.members where outbox.canTakeText(member.session.channel, fragments: fragments.count) {
            for f in fragments { outbox.enqueue(.text(fromMemberID: 0, fromIdentity: fromIdentity, direct: false, fragment: f), to: member.session) }
            outbox.pump(member.session, now: now)
        }
        return .ok
    }

    /// Events since the last drain (room, member and call events), oldest first.
    public func drainEvents() -> [RelayEvent] {
        var drained = events.drain()
        for call in drainCallEvents() { drained.append(RelayEvent(call)) }
        return drained
    }

    /// Bumped by every event: unchanged means no room or member came or went, and no one was (un)muted.
    public var eventRevision: UInt64 { events.revision }

    /// The per-room limits set at creation (nil = the relay's defaults).
    public func roomLimits(_ name: String) -> (maxMembers: Int?, emptyTimeout: Int64?)? {
        rooms[name].map { ($0.maxMembers, $0.emptyTimeout) }
    }
}
