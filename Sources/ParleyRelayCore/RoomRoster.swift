import ParleyWire

/// How a room tells its members who is there, at a cost that grows with the room, not with its square.
///
/// - **Audience.** In an audience room (`audienceMode`), members that cannot publish are *audience*: counted, listed
///   through the API, never announced one by one, and not in a joiner's member list. Members that may speak are
///   announced. A popular room that mostly listens then costs each join one welcome, not a message to everyone.
/// - **Batched deltas.** Joins and leaves of announced members are collected and sent as one `memberDelta` (joined,
///   left, audience count) at most once per `memberUpdateInterval`; a change of the audience count alone at most once
///   per `audienceUpdateInterval`. A small room (at most `memberUpdateImmediateLimit` members) with nothing pending is
///   told at once with a `memberEvent`, as before: there a change costs at most that many messages.
///
/// A join and leave within one interval cancel out. Owned by its `Room`; the `RoomTable` sends what it says is due.
struct RoomRoster {
    /// Whether listeners are audience (set when the room is opened).
    var audienceMode = false
    /// Audience members in the room now.
    private(set) var audienceCount = 0
    /// The audience count the room was last told.
    private(set) var announcedAudience = 0
    /// Announced members who joined, and who left, since the last update, in order.
    private(set) var joined: [MemberEntry] = []
    private(set) var left: [MemberDelta.Departure] = []
    /// When the last update went out, and when the next is due (nil: nothing pending).
    private(set) var lastUpdate = Instant.distantPast
    private(set) var due: Instant?

    /// What to do with a change of an announced member.
    enum Telling { case now, later }

    /// An announced member joined: told now (a small room with nothing pending) or with the next update.
    mutating func joined(_ entry: MemberEntry, roomSize: Int, config: RelayCoreConfig, now: Instant) -> Telling {
        if due == nil, roomSize <= config.memberUpdateImmediateLimit { return .now }
        joined.append(entry)
        schedule(after: config.memberUpdateInterval, now: now)
        return .later
    }

    /// An announced member left: told now, with the next update, or not at all when its join is still pending.
    mutating func left(_ entry: MemberEntry, reason: String, roomSize: Int, config: RelayCoreConfig, now: Instant) -> Telling {
        if let k = joined.firstIndex(where: { $0.memberID == entry.memberID }) {
            joined.remove(at: k)  // nobody was told it came
            return .later
        }
        if due == nil, roomSize <= config.memberUpdateImmediateLimit { return .now }
        left.append(MemberDelta.Departure(memberID: entry.memberID, reason: reason))
        schedule(after: config.memberUpdateInterval, now: now)
        return .later
    }

    /// An audience member came (+1) or went (−1).
    mutating func audienceChanged(by change: Int, config: RelayCoreConfig, now: Instant) {
        audienceCount += change
        schedule(after: config.audienceUpdateInterval, now: now)
    }

    private mutating func schedule(after interval: Interval, now: Instant) {
        let at = max(now, lastUpdate + interval)
        due = min(due ?? at, at)
    }

    /// The update due at `now`, if any: the deltas (each fitting a datagram; none when only the count changed and it
    /// came back to what the room was told), and the pending changes cleared.
    mutating func takeUpdate(now: Instant) -> [MemberDelta]? {
        guard let due, due <= now else { return nil }
        self.due = nil
        lastUpdate = now
        defer { joined.removeAll(); left.removeAll() }
        guard !joined.isEmpty || !left.isEmpty || audienceCount != announcedAudience else { return [] }
        announcedAudience = audienceCount
        return Self.split(joined: joined, left: left, audience: UInt32(clamping: audienceCount))
    }

    /// Bytes of a delta's fields that fit one signalling datagram beside its header and the audience count.
    static let deltaBudget = Signalling.maxDatagramSize - Signalling.headerSize - 16

    /// Splits a batch into deltas that each fit a datagram, in order (joins first, then departures); each carries the count.
    static func split(joined: [MemberEntry], left: [MemberDelta.Departure], audience: UInt32) -> [MemberDelta] {
        var out: [MemberDelta] = []
        var current = MemberDelta(audience: audience)
        var size = 0
        func add(_ bytes: Int, _ put: (inout MemberDelta) -> Void) {
            if size + bytes > deltaBudget, !(current.joined.isEmpty && current.left.isEmpty) {
                out.append(current)
                current = MemberDelta(audience: audience)
                size = 0
            }
            put(&current)
            size += bytes
        }
        for e in joined { add(3 + e.encodedSize) { $0.joined.append(e) } }
        for d in left { add(3 + 4 + min(512, d.reason.utf8.count)) { $0.left.append(d) } }
        out.append(current)
        return out
    }
}
