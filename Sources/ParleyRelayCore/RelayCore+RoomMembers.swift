import ParleyAuth
import ParleyWire

/// What happens to a room's members besides media: mute, texts between members, and a member leaving (which
/// touches the session table, the room and its speaker list together).
extension RelayCore {
    /// Mutes or unmutes a member and tells the room (the member included).
    func setMuted(_ member: Member, _ muted: Bool, now: Moment) {
        guard member.muted != muted else { return }
        member.muted = muted
        let room = member.room
        if muted, room.selector.remove(member.id) { rooms.scheduleSpeakerPush(room, now: now) }
        rooms.broadcast(.memberEvent(kind: muted ? .muted : .unmuted, member: member.entry, reason: ""), in: room, now: now)
        rooms.events.append(RelayEvent(kind: muted ? .memberMuted : .memberUnmuted, room: room.name, identity: member.identity,
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
        sessions.bySSRC[member.ssrc] = nil
        let room = member.room
        room.members.removeAll { $0 === member }
        if room.selector.remove(member.id) { rooms.scheduleSpeakerPush(room, now: now) }
        rooms.broadcast(.memberEvent(kind: .left, member: member.entry, reason: reason), in: room, now: now)
        room.mix?.remove(member)
        rooms.events.append(RelayEvent(kind: .memberLeft, room: room.name, identity: member.identity, detail: reason,
                                 unixMilliseconds: now.unixMilliseconds))
        if room.members.isEmpty {
            room.emptySince = now.monotonic
            room.mix?.stop()
        }
        if log.threshold <= .info { log.write(.info, "\(member.identity) left \(room.name): \(reason)") }
    }
}
