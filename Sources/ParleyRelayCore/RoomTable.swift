import ParleyWire

/// The rooms one core owns: opening (against the relay's room budget) and forgetting them, what happens in a room
/// besides media (a member leaving, mute, texts between members), announcing each room's speakers, closing rooms
/// left empty, and the log of room and member events for the HTTP API. Members join and leave through the core
/// (admission, `RelayCore.removeMember`), which updates the session table and this one together. Owned by one
/// `RelayCore` (one thread).
final class RoomTable: TimedWork {
    /// Rooms by name.
    private(set) var byName: [String: Room] = [:]
    /// The mix-mode rooms among `byName` (kept apart so the loop's deadline scan touches only them).
    private(set) var mixRooms: [Room] = []
    /// Room, member and mute events for the HTTP API's event stream.
    var events = RelayEventLog(capacity: 1024)
    private let shared: RelayShared
    private let workerIndex: Int
    private let outbox: Outbox
    private let random: RelayRandom
    /// Where a closing room's recording is ended.
    let recordings: RecordingTap
    /// Where room texts are kept (set by the core).
    var history = TextLog()
    private var config: RelayCoreConfig { outbox.config }
    private var log: LogSink { outbox.log }

    init(shared: RelayShared, workerIndex: Int, outbox: Outbox, random: RelayRandom, recordings: RecordingTap) {
        self.recordings = recordings
        self.shared = shared
        self.workerIndex = workerIndex
        self.outbox = outbox
        self.random = random
    }

    /// The room named `name` on this worker.
    subscript(name: String) -> Room? { byName[name] }
    /// Every room.
    var values: Dictionary<String, Room>.Values { byName.values }
    /// Rooms on this worker.
    var count: Int { byName.count }

    /// The members a room admits: two in a call room, else the room's own limit or the relay's.
    func capacity(of room: Room) -> Int {
        CallRoom.isCallRoom(room.name) ? CallRoom.capacity : room.maxMembers ?? config.maxMembersPerRoom
    }

    /// Creates a room and its speaker selector (and mixer in mix mode), reserving it against `maxRooms`.
    /// Fails when the relay is full or the mixer cannot start; the caller refuses.
    func open(name: String, mode: RoomMode, creator: String? = nil, audience: Bool = false,
              now: Moment) -> Result<Room, OpenRoomFailure> {
        if let creator {
            if let failure = shared.tryReserveRoom(creator: creator) { return .failure(failure) }
        } else {
            guard shared.tryReserveRoom() else { return .failure(OpenRoomFailure(code: .tooManyRooms, reason: "the relay has reached its room limit")) }
        }
        let room = Room(name: name, mode: mode, createdAt: now.unixMilliseconds, creator: creator,
                        selector: SpeakerSelector(capacity: config.maxForwardedSpeakers, rules: config.speech,
                                                  releaseAfter: config.speakerReleaseAfter, minimumDwell: config.speakerMinimumDwell,
                                                  hysteresis: config.speakerHysteresisDecibels),
                        fanOut: FanOutTable(workerIndex: workerIndex, workerCount: shared.workerPorts.count,
                                            spreadThreshold: config.spreadThreshold))
        if let cluster = shared.cluster { room.cascade = RoomCascade(selfKey: cluster.key) }
        if mode != .forward {
            do {
                room.mix = try MixEngine(ssrc: random.ssrc(), timestampBase: random.uint32(), config: config,
                                         sharedOnly: mode == .hybrid)
            } catch {
                shared.releaseRoom(creator: creator)
                log.write(.error, "cannot create the mixer for \(name): \(error.message)")
                return .failure(OpenRoomFailure(code: .badRequest, reason: "the relay could not start a mixer"))
            }
        }
        room.roster.audienceMode = audience
        byName[name] = room
        if room.mix != nil { mixRooms.append(room) }
        events.append(RelayEvent(kind: .roomStarted, room: name, detail: audience ? "\(mode), audience" : mode.rawValue,
                                 unixMilliseconds: now.unixMilliseconds))
        if log.threshold <= .info {
            log.write(.info, "room \(name) opened (mode \(mode), worker \(workerIndex))", fields: [("room", name)])
        }
        return .success(room)
    }

    /// Forgets a room (already emptied of members) and returns its reservation.
    func forget(_ room: Room, reason: String, now: Moment) {
        endRecording(room, reason: "the room closed", now: now)
        byName[room.name] = nil
        mixRooms.removeAll { $0 === room }
        shared.releaseRoom(creator: room.creator)
        events.append(RelayEvent(kind: .roomClosed, room: room.name, detail: reason, unixMilliseconds: now.unixMilliseconds))
    }

    /// Ends `room`'s recording if one runs: the recorder is told, and the event stream; members are told by the caller.
    func endRecording(_ room: Room, reason: String, now: Moment) {
        guard let recording = room.recording else { return }
        room.recording = nil
        room.mix?.recording = nil
        recordings.recordStopped(id: recording.id, now: now, reason: reason)
        events.append(RelayEvent(kind: .recordingStopped, room: room.name, detail: "\(recording.name): \(reason)",
                                 unixMilliseconds: now.unixMilliseconds))
        if log.threshold <= .info { log.write(.info, "room \(room.name): recording \(recording.name) stopped (\(reason))") }
    }

    /// Queues a message to every member of a room except `except` (and those `including` leaves out), and pumps them.
    func broadcast(_ message: SignalMessage, in room: Room, except: Member? = nil, including: (Member) -> Bool = { _ in true },
                   now: Moment) {
        for m in room.members where m !== except && m.isLocal && including(m) {
            outbox.send(message, to: m.session, now: now)
        }
    }

    /// The speakers to announce: those speaking within `speakingHold`, with their SSRC and level.
    func speakerEntries(_ room: Room, now: Moment) -> [SpeakerEntry] {
        room.selector.speaking(now: now.monotonic, hold: config.speakingHold).compactMap { s in
            guard let m = room.members.first(where: { $0.id == s.member }) else { return nil }
            return SpeakerEntry(memberID: m.id, ssrc: m.ssrc, level: s.level)
        }
    }

    /// Pushes the room's speaker list now if it changed and the rate limit for that kind of change allows, else
    /// schedules it (a change of who speaks is never held back by a pending level-only update).
    func scheduleSpeakerPush(_ room: Room, now: Moment) {
        let change = speakerChange(room, now: now)
        guard change != .none else {
            room.speakerPushDue = nil
            return
        }
        let due = room.lastSpeakerPush + (change == .speakers ? config.speakerUpdateInterval : config.speakerLevelUpdateInterval)
        if now.monotonic >= due {
            pushSpeakers(room, speakerEntries(room, now: now), now: now)
        } else {
            room.speakerPushDue = min(room.speakerPushDue ?? .distantFuture, due)
        }
    }

    /// What differs between the room's speakers and what it was last told.
    enum SpeakerChange { case none, levels, speakers }

    /// Whether the speaking set, or only a level (by 10 dB or more), differs from what the room was last told.
    /// Allocation-free: runs every housekeeping pass for every room with speakers.
    func speakerChange(_ room: Room, now: Moment) -> SpeakerChange {
        var speaking = 0
        var levelMoved = false
        for id in room.selector.forwarded {
            let s = room.selector.state(of: id)
            guard let last = s.lastSpeech, now.monotonic - last <= config.speakingHold else { continue }
            speaking += 1
            guard let announced = room.announcedSpeakers.first(where: { $0.memberID == id }) else { return .speakers }
            let level = Int(AudioLevel.level(loudness: s.loudness))
            if abs(level - Int(announced.level)) >= 10 { levelMoved = true }
        }
        if speaking != room.announcedSpeakers.count { return .speakers }
        return levelMoved ? .levels : .none
    }

    /// Tells the room its speakers now.
    func pushSpeakers(_ room: Room, _ entries: [SpeakerEntry], now: Moment) {
        room.announcedSpeakers = entries
        room.lastSpeakerPush = now.monotonic
        room.speakerPushDue = nil
        broadcast(.speakers(entries), in: room, including: { $0.wantsSpeakerLists }, now: now)
        let names = entries.compactMap { e in room.members.first { $0.id == e.memberID }?.identity }
        if names != room.announcedSpeakerNames {  // levels alone moving are not an event
            room.announcedSpeakerNames = names
            events.append(RelayEvent(kind: .speakers, room: room.name, detail: names.joined(separator: ","), unixMilliseconds: now.unixMilliseconds))
        }
    }

    /// Tells the room a member joined (already in `room.members`, `isAudience` set): an audience member only moves
    /// the count; an announced one is told now or with the room's next batched update (`RoomRoster`), and logged.
    func announceJoin(_ member: Member, now: Moment) {
        let room = member.room
        if member.isLocal { room.cascade?.dirty = true }
        if member.traits.isAudience {
            room.roster.audienceChanged(by: 1, config: config, now: now.monotonic)
            return
        }
        if room.roster.joined(member.entry, roomSize: room.members.count, config: config, now: now.monotonic) == .now {
            broadcast(.memberEvent(kind: .joined, member: member.entry, reason: ""), in: room, except: member, now: now)
        }
        var joined = RelayEvent(kind: .memberJoined, room: room.name, identity: member.identity, detail: member.name,
                                unixMilliseconds: now.unixMilliseconds)
        joined.otherNode = !member.isLocal
        events.append(joined)
    }

    /// Sends the room its batched membership update when due; logs an `audience` event when the count moved.
    func sendRosterUpdate(_ room: Room, now: Moment) {
        let before = room.roster.announcedAudience
        guard let deltas = room.roster.takeUpdate(now: now.monotonic), !deltas.isEmpty else { return }
        for delta in deltas { broadcast(.memberDelta(delta), in: room, now: now) }
        if room.roster.announcedAudience != before {
            events.append(RelayEvent(kind: .audience, room: room.name, detail: String(room.roster.announcedAudience),
                                     unixMilliseconds: now.unixMilliseconds))
        }
    }

    /// The room's side of a member leaving: out of the room and its speaker selection and mixer, the room told, the
    /// event logged; an emptied room starts its empty timeout.
    func memberLeft(_ member: Member, reason: String, retire: Bool = true, now: Moment) {
        let room = member.room
        if member.isLocal { room.cascade?.dirty = true }
        room.members.removeAll { $0 === member }
        // Its stream under the room's key ends: the slot is freed, the SSRC never protected again under this key. (Not
        // for a member of a node that only went quiet: it may come back with the same stream, which continues.)
        if retire { room.downstream?.retire(ssrc: member.ssrc) }
        if room.selector.remove(member.id) { scheduleSpeakerPush(room, now: now) }
        if member.traits.isAudience {
            room.roster.audienceChanged(by: -1, config: config, now: now.monotonic)
        } else {
            if room.roster.left(member.entry, reason: reason, roomSize: room.members.count, config: config, now: now.monotonic) == .now {
                broadcast(.memberEvent(kind: .left, member: member.entry, reason: reason), in: room, now: now)
            }
            var left = RelayEvent(kind: .memberLeft, room: room.name, identity: member.identity, detail: reason,
                                  unixMilliseconds: now.unixMilliseconds)
            left.otherNode = !member.isLocal
            events.append(left)
        }
        room.mix?.remove(member)
        if room.members.isEmpty {
            room.emptySince = now.monotonic
            room.mix?.stop()
        }
        if log.threshold <= .info {
            log.write(.info, "\(member.identity) left \(room.name): \(reason)",
                      fields: [("room", room.name), ("identity", member.identity), ("member", "\(member.id)")])
        }
    }

    /// Mutes or unmutes a member and tells the room (the member included).
    func setMuted(_ member: Member, _ muted: Bool, now: Moment) {
        if member.mutedByRoom, !muted {
            // The room's mute holds: the member is told again, with why, and nothing changes.
            outbox.send(.memberEvent(kind: .muted, member: member.entry, reason: Self.mutedByRoomReason), to: member.session, now: now)
            return
        }
        guard member.muted != muted else { return }
        member.muted = muted
        announceMute(member, now: now)
    }

    /// Why a member's own unmute is refused.
    static let mutedByRoomReason = "only the room can unmute you"

    /// The backend mutes or unmutes a member: its mute holds (across rejoins too) until the backend lifts it; lifting
    /// it unmutes the member.
    func setMutedByRoom(_ member: Member, _ muted: Bool, now: Moment) {
        let room = member.room
        if muted { room.mutedByRoom.insert(member.identity) } else { room.mutedByRoom.remove(member.identity) }
        guard member.muted != muted || member.mutedByRoom != muted else { return }
        member.muted = muted
        member.mutedByRoom = muted
        announceMute(member, now: now)
    }

    /// A member of another node was muted or unmuted there: the room here is told.
    func announceRemoteMute(_ member: Member, now: Moment) { announceMute(member, now: now) }

    /// Tells the room (the member included) that a member's mute changed, and the event stream.
    private func announceMute(_ member: Member, now: Moment) {
        let muted = member.muted
        let room = member.room
        if member.isLocal { room.cascade?.dirty = true }
        if muted, room.selector.remove(member.id) { scheduleSpeakerPush(room, now: now) }
        broadcast(.memberEvent(kind: muted ? .muted : .unmuted, member: member.entry, reason: ""), in: room, now: now)
        events.append(RelayEvent(kind: muted ? .memberMuted : .memberUnmuted, room: room.name, identity: member.identity,
                                 unixMilliseconds: now.unixMilliseconds))
    }

    /// Queues a text to its recipients in the room, skipping those that are not keeping up (`textQueueLimit`), and
    /// tells the sender: delivered when anyone took it, with the laggards named in the reason. Its attachment ids go
    /// to every recipient unchanged (the relay never reads the images here).
    func deliverText(_ text: String, attachments: [String] = [], from member: Member, to identity: String, messageID: UInt32, now: Moment) {
        let room = member.room
        let recipients = identity.isEmpty ? room.members.filter { $0 !== member && $0.isLocal }
            : room.members.filter { $0.identity == identity && $0.isLocal }
        let fragments = TextFragment.split(text, messageID: messageID, attachments: attachments) ?? []
        // The room's other nodes deliver to their members (each counts as one recipient that took it).
        let elsewhere = cascadeText?(fragments, member, identity, room) ?? 0
        var taken = elsewhere
        var behind: [String] = []
        for r in recipients {
            guard outbox.canTakeText(r.session.channel, fragments: fragments.count) else {
                behind.append(r.identity)
                continue
            }
            for f in fragments {
                outbox.enqueue(.text(fromMemberID: member.id, fromIdentity: member.identity, direct: !identity.isEmpty, fragment: f), to: r.session)
            }
            outbox.pump(r.session, now: now)
            taken += 1
        }
        if identity.isEmpty {
            events.append(RelayEvent(kind: .text, room: room.name, identity: member.identity, detail: text, unixMilliseconds: now.unixMilliseconds,
                                     attachments: attachments))
            // The sender hears again if the store cannot keep it (`RelayCore.roomTextNotKept`).
            history.append(.roomText(room: room.name, identity: member.identity, name: member.name, text: text, at: now.unixMilliseconds,
                                     attachments: attachments,
                                     receipt: .init(connection: member.session.connectionID, messageID: messageID, delivered: taken > 0)))
        }
        let nobody = !identity.isEmpty ? "\(identity) is not in the room"
            : history.enabled ? RoomTextKept.reason : "nobody else is in the room"
        let reason = recipients.isEmpty && elsewhere == 0 ? nobody : Outbox.laggards(behind)
        outbox.enqueue(.textStatus(messageID: messageID, delivered: taken > 0, reason: reason), to: member.session)
    }

    /// A fragment of a text from a member of another node (or its backend): to its recipients here, as from that
    /// member; their clients reassemble it. No status goes back (the sender's node told it already), and the text is
    /// logged as an event on its own node only.
    func deliverCascadedText(_ fragment: TextFragment, from member: Member?, in room: Room, to identity: String, now: Moment) {
        for r in room.members where r.isLocal && (identity.isEmpty || r.identity == identity) {
            guard fragment.index > 0 || outbox.canTakeText(r.session.channel, fragments: Int(fragment.count)) else { continue }
            outbox.enqueue(.text(fromMemberID: member?.id ?? 0, fromIdentity: member?.identity ?? "backend", direct: !identity.isEmpty,
                                 fragment: fragment), to: r.session)
            outbox.pump(r.session, now: now)
        }
    }

    /// Sends a text's fragments to the room's other nodes (set by the core when it is in a cluster): how many
    /// recipients were there.
    var cascadeText: (([TextFragment], Member?, String, Room) -> Int)?

    /// Speaker pushes that fell due (and, on the housekeeping grid, lists gone stale), and rooms empty long enough to
    /// close.
    func tick(now: Moment, housekeeping: Bool) {
        var closing: [Room] = []
        for room in byName.values {
            if let due = room.roster.due, due <= now.monotonic { sendRosterUpdate(room, now: now) }
            if let due = room.speakerPushDue, due <= now.monotonic {
                pushSpeakers(room, speakerEntries(room, now: now), now: now)
            } else if housekeeping, !room.announcedSpeakers.isEmpty || !room.selector.forwarded.isEmpty {
                scheduleSpeakerPush(room, now: now)
            }
            if let since = room.emptySince, room.members.isEmpty, now.monotonic - since >= room.emptyTimeout ?? config.emptyRoomTimeout {
                closing.append(room)
            }
        }
        for room in closing {
            let timeout = room.emptyTimeout ?? config.emptyRoomTimeout
            forget(room, reason: "empty for \(timeout.wholeSeconds) s", now: now)
            if log.threshold <= .info {
                log.write(.info, "room \(room.name) closed after \(timeout.wholeSeconds) s empty", fields: [("room",
                    room.name)])
            }
        }
    }

    /// The earliest time `tick` has work, given when the next housekeeping pass falls.
    func nextDeadline(housekeepingDue: Instant) -> Instant {
        var due = Instant.distantFuture
        for room in byName.values {
            if let pushDue = room.speakerPushDue { due = min(due, pushDue) }
            if let rosterDue = room.roster.due { due = min(due, rosterDue) }
            if !room.announcedSpeakers.isEmpty || !room.selector.forwarded.isEmpty { due = min(due, housekeepingDue) }
            if let since = room.emptySince, room.members.isEmpty {
                due = min(due, since + (room.emptyTimeout ?? config.emptyRoomTimeout))
            }
        }
        return due
    }

    /// Forgets every room (the relay is shutting down; the core forgot the members' sessions).
    func removeAll(now: Moment) {
        for room in byName.values {
            endRecording(room, reason: "the relay stopped", now: now)
            // Members hold their room: emptying `members` breaks the cycle, as `removeMember` does.
            room.members.removeAll()
            room.mix?.stop()
            shared.releaseRoom(creator: room.creator)
        }
        byName.removeAll()
        mixRooms.removeAll()
    }
}
