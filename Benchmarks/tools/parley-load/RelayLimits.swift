/// The limits a relay spawned by parley-load is given (`PARLEY_*` variables), so that the relay, not its default
/// limits, decides how much of the shape it can take. Pure: from the shape to the variables.
enum RelayLimits {
    /// The ranges `parley-relay` accepts for these keys (`RelayConfig.set`); a shape beyond them is clamped and
    /// the members that do not fit are refused and reported.
    static let maxMembersPerRoomRange = 1...100_000
    static let maxRoomsRange = 1...10_000_000
    static let joinsPerSecondRange = 1...1_000_000

    /// - Parameters:
    ///   - membersPerRoom: the largest room the run will fill.
    ///   - roomsOverRun: how many distinct rooms the run opens (find-max opens fresh rooms for every step, and an
    ///     emptied room stays open until `empty_room_timeout_s`).
    ///   - membersAtOnce: the most members joining in one ramp.
    ///   - rampSeconds: the ramp they join over (`--ramp`).
    static func environment(membersPerRoom: Int, roomsOverRun: Int, membersAtOnce: Int, rampSeconds: Double) -> [String: String] {
        // Joins are paced evenly over the ramp; twice that rate leaves room for retransmitted requests, and the
        // relay's burst (twice the rate) takes a ramp shorter than a second at once.
        let joinsPerSecond = 2 * Double(membersAtOnce) / max(rampSeconds, 1)
        return [
            "PARLEY_MAX_MEMBERS_PER_ROOM": "\(clamp(membersPerRoom, maxMembersPerRoomRange))",
            "PARLEY_MAX_ROOMS": "\(clamp(roomsOverRun, maxRoomsRange))",
            "PARLEY_JOINS_PER_SECOND": "\(clamp(Int(joinsPerSecond.rounded(.up)), joinsPerSecondRange))",
        ]
    }

    /// Find-max: the members per room of each step — listeners grow (×2 + 3 while under 10, then ×2) from the shape's
    /// listeners — for as many steps as fit in `capSeconds` at `stepSeconds` each, and no room beyond what a relay accepts.
    static func findMaxSteps(members: Int, speakers: Int, stepSeconds: Double, capSeconds: Double) -> [Int] {
        var steps: [Int] = []
        var listeners = max(1, members - speakers)
        while Double(steps.count + 1) * stepSeconds <= capSeconds, speakers + listeners <= maxMembersPerRoomRange.upperBound {
            steps.append(speakers + listeners)
            listeners = listeners < 10 ? listeners * 2 + 3 : listeners * 2
        }
        return steps
    }

    private static func clamp(_ v: Int, _ range: ClosedRange<Int>) -> Int { min(max(v, range.lowerBound), range.upperBound) }
}
