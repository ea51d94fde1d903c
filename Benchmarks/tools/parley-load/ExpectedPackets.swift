/// How many packets the members asked for should have received. Every member asked for counts, not only those the
/// relay admitted: a member that was refused, or admitted after media started, counts as not delivered for every
/// packet it missed. Pure: no sockets, no clocks.
enum ExpectedPackets {
    /// Forward mode: each packet a speaker sent, or would have sent had it been admitted (`packetsDue`, one entry per
    /// speaker asked for), is due to every other member asked for in its room.
    static func forward(packetsDue: [Int], membersPerRoom: Int) -> Int {
        packetsDue.reduce(0) { $0 + $1 * max(0, membersPerRoom - 1) }
    }

    /// What one member asked for received of its mix, for `mix(_:)`.
    struct MixReceipt: Equatable {
        var room: Int
        /// Speakers receive minus-one mixes, listeners the room's shared mix: their ranges are compared only within a role.
        var isSpeaker: Bool
        /// The sequence range it received (highest offset from its first packet + 1); 0 when it received nothing.
        var range: Int
    }

    /// Mix mode: the mix numbers each listener's packets from its first one, so a member that was not there from the
    /// start cannot show what it missed. Each member is due the widest range received by a member of its room and
    /// role (or its own, if wider); when nobody of that role in the room received anything — everyone refused — the
    /// widest of that role in any room (the rooms share one shape).
    static func mix(_ receipts: [MixReceipt]) -> Int {
        var widestInRoom: [Int: [Bool: Int]] = [:]
        var widest: [Bool: Int] = [:]
        for r in receipts {
            widestInRoom[r.room, default: [:]][r.isSpeaker] = max(widestInRoom[r.room]?[r.isSpeaker] ?? 0, r.range)
            widest[r.isSpeaker] = max(widest[r.isSpeaker] ?? 0, r.range)
        }
        return receipts.reduce(0) { sum, r in
            let roomWidest = widestInRoom[r.room]?[r.isSpeaker] ?? 0
            return sum + max(r.range, roomWidest > 0 ? roomWidest : widest[r.isSpeaker] ?? 0)
        }
    }
}
