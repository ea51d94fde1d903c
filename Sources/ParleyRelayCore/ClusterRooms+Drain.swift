import ParleyWire

extension ClusterRooms {
    /// Draining (`POST /v1/cluster/drain`, `parley-relay drain`): the node stops taking joins (the directory says so,
    /// and joins that still reach it are sent on) and each member of this worker that can rejoin by itself (a `parley`
    /// client) is told to go to the node that has its room's other members, else the one placement picks, with goodbye
    /// `moved` naming it (its address and relay key, `NodePointer`); the client joins there at once. Members that cannot move by themselves (plain-RTP and WebRTC
    /// endpoints, made by a backend) stay until the backend moves them. Without another node nobody moves.
    func drain(now: Moment) -> AdminResult {
        shared.draining.store(true, ordering: .relaxed)
        var moved = 0, staying = 0
        for room in rooms.values {
            let peerNode = room.cascade?.peers.values.filter { $0.heardAt != nil && !$0.members.isEmpty }
                .max { ($0.members.count, $1.key) < ($1.members.count, $0.key) }
            let target = peerNode.flatMap { shared.placement.pointer(toNode: $0.key) }
                ?? shared.placement.node(for: room.name, cascadeAfter: .max, draining: true)
            for member in room.members where member.isLocal {
                guard let target, member.session.signals else {
                    staying += 1
                    continue
                }
                removeMember(member, reason: movedReason(to: target), goodbye: .moved,
                             goodbyeReason: target.description, now: now)
                moved += 1
            }
        }
        if log.threshold <= .info { log.write(.info, "draining: \(moved) members told to move, \(staying) staying") }
        return .drained(moved: moved, staying: staying)
    }

    /// Why a drained member left, as its room and the event stream hear it: "moved to node node-b (10.0.0.2:7410)
    /// because node node-a is draining".
    func movedReason(to target: NodePointer) -> String {
        let there = shared.placement.nodeID(of: target).map { "node \($0) (\(target.address))" }
            ?? "the node at \(target.address)"
        let here = shared.cluster.map { "node \($0.nodeID)" } ?? "this node"
        return "moved to \(there) because \(here) is draining"
    }
}
