import ParleyAuth
import ParleyWire

/// What happens in a room besides media: mute, texts between members, a member leaving, and the speaker list
/// announcements.
extension RelayCore {
    /// Mutes or unmutes a member and tells the room (the member included).
    func setMuted(_ member: Member, _ muted: Bool, now: Moment) {
        guard member.muted != muted else { return }
        member.muted = muted
        let room = member.room
        if muted, room.selector.remove(member.id) { scheduleSpeakerPush(room, now: now) }
        broadcast(.memberEvent(kind: muted ? .muted : .unmuted, member: member.entry, reason: ""), in: room, now: now)
        events.append(RelayEvent(kind: muted ? .memberMuted : .memberUnmuted, room: room.name, identity: member.identity,
                                 unixMilliseconds: now.unixMilliseconds))
    }

    /// Queues a text to its recipients in the room, skipping those that are not keeping up (`textQueueLimit`), and
    /// tells the sender: delivered when anyone took it, with the laggards named in the reason.
    func deliverText(_ text: String, from member: Member, to identity: String, messageID: UInt32, now: Moment) {
        let room = member.room
        let recipients = identity.isEmpty ? room.members.filter { $0 !== member } : room.members.filter { $0.identity == identity }
        let fragments = TextFragment.split(text, messageID: messageID) ?? []
        var taken = 0
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
        let reason = recipients.isEmpty ? (identity.isEmpty ? "nobody else is in the room" : "\(identity) is not in the room")
            : Self.laggards(behind)
        outbox.enqueue(.textStatus(messageID: messageID, delivered: taken > 0, reason: reason), to: member.session)
    }

    /// The reason a text status gives for recipients that were not keeping up ("" for none).
    static func laggards(_ identities: [String]) -> String {
        switch identities.count {
        case 0: ""
        case 1: "\(identities[0]) is not keeping up"
        default: "\(identities.count) members are not keeping up"
        }
    }

    /// Removes a member: tells it why (when `goodbye` is set) and tells the room it left.
    func removeMember(_ member: Member, reason: String, goodbye: GoodbyeCode?, now: Moment) {
        if let code = goodbye { outbox.sayGoodbye(code, reason, to: member.session) }
        sessions.remove(.member(member), at: member.isRTPEndpoint ? member.rtpSource : member.address)
        bySSRC[member.ssrc] = nil
        let room = member.room
        room.members.removeAll { $0 === member }
        if room.selector.remove(member.id) { scheduleSpeakerPush(room, now: now) }
        broadcast(.memberEvent(kind: .left, member: member.entry, reason: reason), in: room, now: now)
        room.mix?.remove(member)
        events.append(RelayEvent(kind: .memberLeft, room: room.name, identity: member.identity, detail: reason,
                                 unixMilliseconds: now.unixMilliseconds))
        if room.members.isEmpty {
            room.emptySince = now.monotonic
            room.mix?.stop()
        }
        if log.threshold <= .info { log.write(.info, "\(member.identity) left \(room.name): \(reason)") }
    }

    // MARK: Speakers

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
        let due = room.lastSpeakerPush &+ (change == .speakers ? config.speakerUpdateInterval : config.speakerLevelUpdateInterval)
        if now.monotonic >= due {
            pushSpeakers(room, speakerEntries(room, now: now), now: now)
        } else {
            room.speakerPushDue = min(room.speakerPushDue ?? .max, due)
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
            let level = Int(max(0, min(127, (127 - s.loudness).rounded())))
            if abs(level - Int(announced.level)) >= 10 { levelMoved = true }
        }
        if speaking != room.announcedSpeakers.count { return .speakers }
        return levelMoved ? .levels : .none
    }

    func pushSpeakers(_ room: Room, _ entries: [SpeakerEntry], now: Moment) {
        room.announcedSpeakers = entries
        room.lastSpeakerPush = now.monotonic
        room.speakerPushDue = nil
        broadcast(.speakers(entries), in: room, including: { $0.wantsSpeakerLists }, now: now)
    }
}

extension SignalMessage {
    /// A bare acknowledgement or a keepalive ping: handling one touches nothing but the sender's channel.
    var isAckOrPing: Bool {
        switch self {
        case .ack, .ping: return true
        default: return false
        }
    }
}

extension SignalMessage {
    /// Whether a newer message of this kind makes an older one still waiting to go out pointless (it carries state,
    /// not an event): speaker lists, and a member's mute state.
    var replacesOlderCopies: Bool {
        switch self {
        case .speakers: true
        case .memberEvent(let kind, _, _): kind == .muted || kind == .unmuted
        default: false
        }
    }

    /// Whether this message replaces `older` (see `replacesOlderCopies`): any older speaker list, or an older mute
    /// or unmute of the same member.
    func supersedes(_ older: SignalMessage) -> Bool {
        switch (self, older) {
        case (.speakers, .speakers):
            return true
        case (.memberEvent(let kind, let member, _), .memberEvent(let olderKind, let olderMember, _)):
            return (kind == .muted || kind == .unmuted) && (olderKind == .muted || olderKind == .unmuted)
                && member.memberID == olderMember.memberID
        default:
            return false
        }
    }
}
