import ParleyRelayCore

extension SoakWorld {
    /// `count` members join rooms of `shape.members` (named `flood-N`) as fast as the relay admits them (its
    /// `joinsPerSecond`); `shape.speakers` of each room speak for `shape.mediaMilliseconds`. Returns the members
    /// (the caller lets them die).
    func runFlood(_ count: Int, shape: CycleShape) -> [SoakPeer] {
        var members: [SoakPeer] = []
        var speakers: [SoakPeer] = []
        let joinsPerStep = max(1, Int(core.shared.config.joinsPerSecond / 50))  // one 20 ms step
        for i in 0..<count {
            let m = addMember("f\(i)", room: "flood-\(i / shape.members)", mode: shape.mode)
            members.append(m)
            if i % shape.members < shape.speakers { speakers.append(m) }
            exchange()
            if i % joinsPerStep == joinsPerStep - 1 { step(speakers: []) }
        }
        run(milliseconds: shape.mediaMilliseconds, speakers: speakers)
        return members
    }
}
