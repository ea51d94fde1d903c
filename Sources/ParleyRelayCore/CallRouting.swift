import ParleyWire

/// Routing of invitations, answers and hang-ups between presence sessions, where a call rings and times out
/// (`ringTimeouts`, called by `tick`), and the call log.
/// See `Call` for the state machine. One call per identity at a time.
extension RelayCore {
    func inviteCall(from caller: Presence, callID: UInt32, to identity: String, now: Moment) {
        func reply(_ state: CallState, _ reason: String) {
            send(.callStatus(CallStatus(callID: callID, state: state, reason: reason)), to: caller.session, now: now)
        }
        guard caller.call == nil else { return reply(.failed, "you are already in a call") }
        guard identity != caller.identity else { return reply(.failed, "you cannot call yourself") }
        guard let callee = presence.byIdentity[identity] else {
            let id = presence.nextCallID()
            record(.started, id, caller.identity, identity, now: now)
            record(.ended, id, caller.identity, identity, reason: .unavailable, detail: "\(identity) is not online", now: now)
            return reply(.unavailable, "\(identity) is not online")
        }
        guard callee.call == nil else {
            let id = presence.nextCallID()
            record(.started, id, caller.identity, identity, now: now)
            record(.ended, id, caller.identity, identity, reason: .busy, detail: "busy", now: now)
            return reply(.declined, "busy")
        }
        let call = Call(id: presence.nextCallID(), callerCallID: callID, caller: caller, callee: callee,
                        startedAt: now.unixMilliseconds, ringDeadline: now.monotonic + config.ringTimeout)
        presence.calls[call.id] = call
        caller.call = call
        callee.call = call
        counters.callsStarted &+= 1
        record(.started, call.id, caller.identity, identity, now: now)
        send(.incomingCall(callID: call.id, fromIdentity: caller.identity, fromName: caller.name), to: callee.session, now: now)
        reply(.ringing, "")
        if log.threshold <= .info { log.write(.info, "call \(call.id): \(caller.identity) → \(identity) ringing") }
    }

    func answerCall(by callee: Presence, callID: UInt32, accept: Bool, now: Moment) {
        guard let call = callee.call, call.matches(callee, callID: callID) else {
            // Cancelled or timed out meanwhile: the callee learns the call is over.
            return send(.callStatus(CallStatus(callID: callID, state: .ended, reason: "the call is over")), to: callee.session, now: now)
        }
        guard call.callee === callee, call.room == nil else { return }  // the caller answering, or a repeated answer
        let caller = call.caller
        guard accept else {
            finishCall(call, .declined, detail: "declined by \(callee.identity)", now: now)
            return tell(caller, call, .declined, "declined by \(callee.identity)", now: now)
        }
        guard let signer = shared.callSigner else {
            finishCall(call, .failed, detail: "the relay has no API key to mint call tokens with", now: now)
            for p in [caller, callee] { tell(p, call, .failed, "the relay cannot set up call rooms", now: now) }
            return
        }
        let room = CallRoom.newName(random)
        call.room = room
        call.ringDeadline = nil
        counters.callsAnswered &+= 1
        record(.answered, call.id, caller.identity, callee.identity, room: room, now: now)
        for p in [caller, callee] {
            let token = CallRoom.token(identity: p.identity, name: p.name, room: room, signer: signer, now: now,
                                       lifetimeSeconds: config.callTokenLifetimeSeconds)
            send(.callStatus(CallStatus(callID: call.callID(for: p), state: .answered, room: room, token: token)), to: p.session, now: now)
        }
        if log.threshold <= .info { log.write(.info, "call \(call.id): answered, room \(room)") }
    }

    func hangUpCall(by p: Presence, callID: UInt32, now: Moment) {
        guard let call = p.call, call.matches(p, callID: callID) else { return }  // already over
        let other = call.other(than: p)
        if call.room != nil {
            finishCall(call, .hungUp, detail: "hung up by \(p.identity)", now: now)
            tell(other, call, .ended, "hung up by \(p.identity)", now: now)
        } else if p === call.caller {
            finishCall(call, .cancelled, detail: "cancelled by \(p.identity)", now: now)
            tell(other, call, .ended, "cancelled", now: now)
        } else {
            finishCall(call, .declined, detail: "declined by \(p.identity)", now: now)
            tell(other, call, .declined, "declined by \(p.identity)", now: now)
        }
    }

    /// Ends every call that rang for `ringTimeout` unanswered (oldest first).
    func ringTimeouts(now: Moment) {
        var due: [Call] = []  // allocates only when a ring times out
        for call in presence.calls.values {
            if let deadline = call.ringDeadline, deadline <= now.monotonic { due.append(call) }
        }
        for call in due.sorted(by: { $0.id < $1.id }) { ringTimedOut(call, now: now) }
    }

    /// The earliest ring deadline, or `.max`.
    var nextRingDeadline: Int64 {
        var due = Int64.max
        for call in presence.calls.values {
            if let deadline = call.ringDeadline { due = min(due, deadline) }
        }
        return due
    }

    func ringTimedOut(_ call: Call, now: Moment) {
        let seconds = config.ringTimeout / 1_000_000_000
        finishCall(call, .noAnswer, detail: "no answer after \(seconds) s", now: now)
        tell(call.caller, call, .noAnswer, "no answer after \(seconds) s", now: now)
        tell(call.callee, call, .ended, "no answer", now: now)
    }

    /// Ends a call and tells `notifying` it `ended` with `detail`.
    func endCall(_ call: Call, _ reason: CallEndReason, detail: String, notifying: [Presence], now: Moment) {
        finishCall(call, reason, detail: detail, now: now)
        for p in notifying { tell(p, call, .ended, detail, now: now) }
    }

    /// Forgets a call and logs its end.
    private func finishCall(_ call: Call, _ reason: CallEndReason, detail: String, now: Moment) {
        presence.calls[call.id] = nil
        if call.caller.call === call { call.caller.call = nil }
        if call.callee.call === call { call.callee.call = nil }
        record(.ended, call.id, call.caller.identity, call.callee.identity, room: call.room ?? "", reason: reason, detail: detail, now: now)
        if log.threshold <= .info { log.write(.info, "call \(call.id) ended: \(detail)") }
    }

    /// Sends a status to one party if its session is still online.
    private func tell(_ p: Presence, _ call: Call, _ state: CallState, _ reason: String, now: Moment) {
        guard presence.isOnline(p) else { return }
        send(.callStatus(CallStatus(callID: call.callID(for: p), state: state, reason: reason)), to: p.session, now: now)
    }

    private func record(_ kind: CallEvent.Kind, _ id: UInt32, _ caller: String, _ callee: String, room: String = "",
                        reason: CallEndReason? = nil, detail: String = "", now: Moment) {
        presence.events.append(CallEvent(kind: kind, callID: id, caller: caller, callee: callee, room: room, endReason: reason,
                                         detail: detail, unixMilliseconds: now.unixMilliseconds))
    }
}
