import ParleyAuth
import ParleyWire

extension RelayCore {
    func handleMemberSignal(_ member: Member, _ datagram: SignalDatagram, bytes: UnsafeRawBufferPointer, now: Moment, viaPublicPort: Bool) {
        member.lastHeard = now.monotonic
        if !viaPublicPort { member.viaPublicPort = false }
        let delivered = member.channel.receive(sequence: datagram.sequence, ack: datagram.ack, message: datagram.message,
                                               now: now.monotonic)
        // Acks and pings (most of the signalling a room in steady state receives) change nothing `tick` looks at but
        // this member's channel, whose next due time is marked after the pump below; anything else may.
        if delivered.contains(where: { !$0.isAckOrPing }) { noteTimerWork(at: now.monotonic) }
        for message in delivered {
            guard byConnection[member.connectionID] === member else { return }  // removed while handling
            switch message {
            case .join(let request):
                if request.nonce == member.joinNonce { continue }  // a repeat: the welcome is on its way
                removeMember(member, reason: "rejoined", goodbye: nil, now: now)
                handleJoinRequest(request, bytes: bytes, from: member.address, now: now, viaPublicPort: viaPublicPort)
                return
            case .leave:
                removeMember(member, reason: "left", goodbye: .left, now: now)
                return
            case .ping(let timestamp):
                sendSignal(.pong(timestamp: timestamp), to: member.address, connectionID: member.connectionID,
                           ack: member.channel.ackNumber, viaPublicPort: member.viaPublicPort)
                member.channel.ackSent()
            case .setMuted(let muted):
                setMuted(member, muted, now: now)
            case .sendText(let to, let fragment):
                for finished in member.texts.take(fragment) {
                    switch finished {
                    case .text(let id, let text): deliverText(text, from: member, to: to, messageID: id, now: now)
                    case .refused(let id, let why): enqueue(.textStatus(messageID: id, delivered: false, reason: why.reason), to: member)
                    }
                }
            case .resume(let timestamp, let proof):
                // From the member's own address: nothing moves, but the proof must hold like any other.
                if resumeIsProven(timestamp: timestamp, proof: proof, secret: member.sessionSecret, connectionID: member.connectionID, now: now) {
                    enqueue(.resumed, to: member)
                } else {
                    drop(.resumeRejected, from: member.address, now: now)
                }
            case .pathResponse:
                break  // an answer to a challenge from the address the member already has: nothing to move
            case .ack:
                break
            default:
                drop(.unexpectedMessage, from: member.address, now: now)
            }
        }
        if byConnection[member.connectionID] === member {
            pump(member, now: now)
            noteTimerWork(at: member.channel.serviceDue)
        }
    }

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
            guard canTakeText(r.channel, fragments: fragments.count) else {
                behind.append(r.identity)
                continue
            }
            for f in fragments {
                enqueue(.text(fromMemberID: member.id, fromIdentity: member.identity, direct: !identity.isEmpty, fragment: f), to: r)
            }
            pump(r, now: now)
            taken += 1
        }
        let reason = recipients.isEmpty ? (identity.isEmpty ? "nobody else is in the room" : "\(identity) is not in the room")
            : Self.laggards(behind)
        enqueue(.textStatus(messageID: messageID, delivered: taken > 0, reason: reason), to: member)
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
        if member.isRTPEndpoint { forgetRTPEndpoint(member) }
        if let code = goodbye, !member.isRTPEndpoint {
            sendSignal(.goodbye(code: code, reason: reason), to: member.address, connectionID: member.connectionID,
                       ack: member.channel.ackNumber, viaPublicPort: member.viaPublicPort)
        }
        if byAddress[member.address] === member { byAddress[member.address] = nil }
        byConnection[member.connectionID] = nil
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
            let level = Int(AudioLevel.level(loudness: s.loudness))
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
