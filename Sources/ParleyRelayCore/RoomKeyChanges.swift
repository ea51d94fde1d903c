import ParleyCrypto
import ParleyWire

/// A room's downstream key change in progress (forward rooms, encrypted members; `Room.keyChange`).
///
///     a holder leaves ─▶ due (at once, or a second after the last change) ─▶ next key sent to every holder (roomKey)
///       ─▶ every holder acknowledged it, or `RelayCore.keySwitchTimeout` passed ─▶ forwarded packets use it
struct RoomKeyChange {
    /// When the next key is drawn and sent: at once after a departure, or `RelayCore.keyChangeSpacing` after the last
    /// change (departures that close together share one change).
    var due: Instant
    /// Once sent: the next key, its id, and when it went out.
    var next: (key: MediaKey, id: UInt32, sentAt: Instant)?
    /// A holder left after the next key went out (it may hold that one too): another change follows this one.
    var again = false
}

/// The room's downstream key outlives no member: every forwarded packet is protected once with the room's key, which
/// all its encrypted listeners hold, so a member that leaves (or is kicked) could go on reading what the room hears.
/// When a member that held the key leaves, the room draws a new key, sends it sealed to each member that stays (a
/// reliable `roomKey` message over its session, with where each forwarded stream stands), and protects forwarded
/// packets with it once every one of them acknowledged it — at most `keySwitchTimeout` later. Members accept both
/// keys while the change is under way (`MediaCrypto`). A key that left with a member thus stops covering the room's
/// audio within a round trip of the change (a second or so when departures come in a burst), never later than the
/// change's spacing plus the switch timeout.
///
/// What this does not give: authenticity per speaker. Every holder of the room's key can protect packets under it,
/// so a member who can send to a listener's address (spoofing the relay's) can forge any speaker's packets to it.
///
/// A part of the core (`CorePart`): the core tells it who is leaving and who joined, and ticks it; it reports when it
/// next has work.
final class RoomKeyChanges: CorePart, TimedWork {
    unowned(unsafe) let core: RelayCore  // the core owns its parts and outlives them
    /// Rooms whose downstream key is changing.
    private(set) var changing: [Room] = []

    init(core: RelayCore) { self.core = core }

    /// Departures within this of the last change wait for the next one (one change for a burst of them).
    static let keyChangeSpacing = Interval.seconds(1)
    /// The longest the relay waits for every member to acknowledge the next key before it uses it.
    static let keySwitchTimeout = Interval.seconds(2)

    /// Whether `member` holds its room's downstream key: a sealed session to which speakers are forwarded.
    func holdsRoomKey(_ member: Member) -> Bool {
        member.srtpOut != nil && member.room.downstream != nil && member.room.forwards && !member.room.hearsMix(member)
    }

    /// `member`, which holds its room's key, is leaving: the room's key changes.
    func holderLeaving(_ member: Member, now: Instant) {
        let room = member.room
        if var change = room.keyChange {
            if change.next != nil {
                change.again = true
                room.keyChange = change
            }
            return
        }
        let due = max(now, room.keyChangedAt + Self.keyChangeSpacing)
        room.keyChange = RoomKeyChange(due: due)
        changing.append(room)
        noteTimerWork(at: due)
    }

    /// A member joining while a change is under way gets the next key too (after its welcome, which has the current).
    func sendNextKey(_ room: Room, to member: Member) {
        guard let next = room.keyChange?.next, holdsRoomKey(member) else { return }
        outbox.enqueue(.roomKey(keyID: next.id, material: next.key.material, streamIndices: Admission.streamIndices(room)), to: member.session)
    }

    /// For `tick`: sends the next key of the rooms whose change is due, and switches those whose holders all have it.
    func tick(now: Moment, housekeeping: Bool) {
        guard !changing.isEmpty else { return }
        changing.removeAll { room in
            guard core.rooms[room.name] === room, let change = room.keyChange else {
                room.keyChange = nil
                return true
            }
            return advanceKeyChange(room, change, now: now)
        }
    }

    /// One step of `room`'s change; true when it is over.
    private func advanceKeyChange(_ room: Room, _ change: RoomKeyChange, now: Moment) -> Bool {
        var change = change
        let holders = room.members.filter { $0.isLocal && holdsRoomKey($0) }
        guard let next = change.next else {
            guard change.due <= now.monotonic else { return false }
            let key = MediaKey.random()
            let id = room.downstreamKeyID &+ 1
            let indices = Admission.streamIndices(room)
            for member in holders {
                outbox.enqueue(.roomKey(keyID: id, material: key.material, streamIndices: indices), to: member.session)
                outbox.pump(member.session, now: now)
            }
            change.next = (key, id, now.monotonic)
            room.keyChange = change
            if !holders.isEmpty { return false }
            return switchKey(room, now: now)
        }
        let waiting = holders.contains { member in
            member.session.channel.isPending { if case .roomKey(let id, _, _) = $0 { id == next.id } else { false } }
        }
        guard !waiting || now.monotonic - next.sentAt >= Self.keySwitchTimeout else { return false }
        return switchKey(room, now: now)
    }

    /// Forwarded packets use the next key from now on; true when no further change is due.
    private func switchKey(_ room: Room, now: Moment) -> Bool {
        guard let change = room.keyChange, let next = change.next else { return true }
        do {
            try room.useDownstreamKey(next.key, id: next.id)
        } catch {
            log.write(.error, "room \(room.name): cannot use its next key (\(error)); the old one stays")
        }
        room.keyChangedAt = now.monotonic
        if log.threshold <= .debug { log.write(.debug, "room \(room.name): downstream key \(next.id) in use") }
        guard change.again else {
            room.keyChange = nil
            return true
        }
        room.keyChange = RoomKeyChange(due: now.monotonic + Self.keyChangeSpacing)
        noteTimerWork(at: now.monotonic + Self.keyChangeSpacing)
        return false
    }

    /// When `serviceRoomKeys` next has work: a change's due time, or, while members are acknowledging a key, the next
    /// housekeeping pass (their acknowledgements do not wake the loop), at the latest the switch timeout.
    func nextDeadline(housekeepingDue: Instant) -> Instant {
        var due = Instant.distantFuture
        for room in changing {
            guard let change = room.keyChange else { continue }
            if let next = change.next {
                due = min(due, max(housekeepingDue, next.sentAt), next.sentAt + Self.keySwitchTimeout)
            } else {
                due = min(due, change.due)
            }
        }
        return due
    }
}
