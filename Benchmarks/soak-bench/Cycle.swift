import ParleyClientCore
import ParleyRelayCore

/// The shape of one join/leave cycle.
struct CycleShape {
    /// Members joining the cycle's room.
    var members = 10
    /// Members among them that speak during the media phase.
    var speakers = 3
    /// Manual time of media per cycle.
    var mediaMilliseconds: Int64 = 2_000
    /// Room mode ("forward", "mix" or "hybrid").
    var mode = "forward"
}

extension SoakWorld {
    /// One cycle: `shape.members` members join a fresh room, a plain-RTP endpoint is created in it, two presence
    /// sessions register and one calls the other (answered on even cycles, when both join the call room; declined on
    /// odd ones); the speakers, the endpoint's tool and one call member send media for `mediaMilliseconds`; then
    /// everything ends, each member in one of five ways by its index: leave, kick, replaced by a new session (which
    /// then leaves), dies (timed out `memberTimeout` later, during later cycles), or stays until the room ends (closed
    /// by the backend on even cycles; on odd ones the stayers leave and the room closes after its empty timeout).
    /// Returns the sessions started (members, endpoint, presences, call members, replacements).
    func runCycle(_ k: Int, shape: CycleShape) -> Int {
        let room = "soak-\(k)"
        let members = (0..<shape.members).map { addMember("u\(k)-\($0)", room: room, mode: shape.mode) }
        exchange()
        var sessions = members.count

        let tool = addTool()
        _ = core.createRTPEndpoint(room: room, identity: "tool\(k)", displayName: nil, publish: true, subscribe: true,
                                   source: nil, receive: tool.address, keys: nil, now: clock.now)
        let caller = addPresence("p\(k)-a"), callee = addPresence("p\(k)-b")
        exchange()
        sessions += 3
        var callMembers: [SoakPeer] = []
        let callID = caller.presence!.call("p\(k)-b", now: clock.monotonic)
        exchange()
        if callID != nil, let incoming = callee.incomingCallIDs.last {
            callee.presence!.answer(incoming, accept: k % 2 == 0, now: clock.monotonic)
            exchange()
            for (p, identity) in [(caller, "p\(k)-a"), (callee, "p\(k)-b")] {
                if let (callRoom, token) = p.answeredCall { callMembers.append(addMember(identity, room: callRoom, token: token)) }
            }
            exchange()
        }
        sessions += callMembers.count

        run(milliseconds: shape.mediaMilliseconds, speakers: Array(members.prefix(shape.speakers)) + [tool] + callMembers.prefix(1))

        if let callID { caller.presence!.hangUp(callID, now: clock.monotonic) }
        for m in callMembers { m.member!.leave(now: clock.monotonic) }
        exchange()
        for p in [caller, callee] { p.presence!.leave(now: clock.monotonic) }
        exchange()
        _ = core.deleteRTPEndpoint(room: room, identity: "tool\(k)", now: clock.now)
        for p in [tool, caller, callee] + callMembers { remove(p) }

        var stayers: [SoakPeer] = []
        for (i, m) in members.enumerated() {
            switch (i + k) % 5 {
            case 0: m.member!.leave(now: clock.monotonic)
            case 1: _ = core.kick(room: room, identity: "u\(k)-\(i)", now: clock.now)
            case 2:
                let replacement = addMember("u\(k)-\(i)", room: room, token: token("u\(k)-\(i)", room: room, mode: shape.mode, generation: 1))
                exchange()
                replacement.member!.leave(now: clock.monotonic)
                exchange()
                remove(replacement)
                sessions += 1
            case 3: m.online = false
            default: stayers.append(m)
            }
        }
        exchange()
        if k % 2 == 0 {
            _ = core.closeRoom(name: room, reason: "closed by the backend", now: clock.now)
        } else {
            for m in stayers { m.member!.leave(now: clock.monotonic) }
        }
        exchange()
        for m in members { remove(m) }
        return sessions
    }
}

extension SoakPeer {
    /// Relay ids of the calls offered to this presence session.
    var incomingCallIDs: [UInt32] {
        presenceEvents.compactMap { if case .incomingCall(let id, _, _) = $0 { id } else { nil } }
    }

    /// The room and token of an answered call, if any.
    var answeredCall: (room: String, token: String)? {
        for e in presenceEvents { if case .callStatus(_, .answered, _, let room?, let token?) = e { return (room, token) } }
        return nil
    }
}
