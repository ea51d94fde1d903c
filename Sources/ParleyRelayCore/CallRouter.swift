import ParleyWire

import ParleyAuth

/// Worker 0's calls: routing of invitations, answers and hang-ups between presence sessions, where a call rings and
/// times out (`tick`, called by the core's), and the call log. See `Call` for the state machine. One
/// call per identity at a time, whichever of its devices (presence sessions) it is on: while any of them rings, calls
/// or talks, a call to the identity is busy and a call from it fails.
final class CallRouter: TimedWork {
    /// Calls ringing or answered, by relay call id.
    private(set) var active: [UInt32: Call] = [:]
    /// Recent call events for the HTTP API.
    var events: CallEventLog
    private var lastCallID: UInt32 = 0
    private let outbox: Outbox
    private let directory: PresenceDirectory
    /// Mints the call rooms' join tokens; nil when the relay has no key for that (calls then fail at the answer).
    /// Asked at each answer: a reload may have replaced the keys.
    private let currentSigner: () -> TokenSigner?
    /// This relay's public key (base64url), named in the call tokens so no other relay takes them; nil names none.
    private let relayKey: String?
    private let random: RelayRandom
    /// In a cluster: the node another identity is online on (nil: nowhere else), and how to tell that node's worker 0
    /// something (set by the core; `RelayCore+ClusterPresence.swift`). A call to an identity online elsewhere is run
    /// by its node: the caller's node passes the invitation and the caller's hang-up there, and its statuses back.
    var onlineElsewhere: ((String) -> UInt64?)?
    var sendToNode: ((CascadeMessage, UInt64) -> Void)?
    /// With `sipCallees`: a call to a `sip:` address nobody is online as rings a stand-in device made here for it —
    /// a presence in the SIP gateway's stream range (`firstStandInStream` on), in the directory only for its call —,
    /// whose notices the gateway takes: it places the call through a trunk and answers, declines or hangs up for the
    /// phone. Set by the core.
    var sipStandIn: ((_ identity: String, _ stream: UInt64) -> Presence)?
    private var lastStandInStream = CallRouter.firstStandInStream
    /// The stand-ins' streams: within the SIP gateway's (`SIPGateway.firstStream`, 2⁶², on), clear of its own.
    static let firstStandInStream: UInt64 = 3 << 61
    private var config: RelayCoreConfig { outbox.config }
    private var log: LogSink { outbox.log }

    init(outbox: Outbox, directory: PresenceDirectory, signer: @escaping () -> TokenSigner?, relayKey: String? = nil,
        random: RelayRandom) {
        self.outbox = outbox
        self.directory = directory
        currentSigner = signer
        self.relayKey = relayKey
        self.random = random
        events = CallEventLog(capacity: outbox.config.callEventCapacity)
    }

    /// A fresh relay call id, never 0 and never one in use.
    private func nextCallID() -> UInt32 {
        repeat { lastCallID &+= 1 } while lastCallID == 0 || active[lastCallID] != nil
        return lastCallID
    }

    /// `caller` invites `identity` (its call id `callID`): ring the callee, or tell the caller why not. `keyShare` (the
    /// caller's end-to-end share, empty or 32 bytes as the codec enforces) goes to every ringing session unread.
    func invite(from caller: Presence, callID: UInt32, to identity: String, keyShare: [UInt8] = [], now: Moment) {
        func reply(_ state: CallState, _ reason: String) {
            directory.send(.callStatus(CallStatus(callID: callID, state: state, reason: reason)), to: caller, now: now)
        }
        guard caller.call == nil, caller.remoteCall == nil else { return reply(.failed, "you are already in a call") }
        guard !directory.isInCall(caller.identity) else { return reply(.failed, "you are already in a call on another device") }
        guard identity != caller.identity else { return reply(.failed, "you cannot call yourself") }
        var callees = directory.sessions(of: identity)
        if callees.isEmpty, config.sipCallees, identity.hasPrefix("sip:"), let sipStandIn {
            lastStandInStream &+= 1
            callees = [sipStandIn(identity, lastStandInStream)]
        }
        if callees.isEmpty, !caller.isRemote, let node = onlineElsewhere?(identity), let sendToNode {
            // Online on another node of the cluster: that node rings and runs the call; its statuses come back here.
            caller.remoteCall = (node, callID)
            sendToNode(.invite(callID: callID, caller: caller.identity, name: caller.name, callee: identity, keyShare: keyShare), node)
            if log.threshold <= .info { log.write(.info, "call from \(caller.identity) to \(identity): passed to the node it is online on") }
            return
        }
        guard !callees.isEmpty else {
            let id = nextCallID()
            record(.started, id, caller.identity, identity, now: now)
            record(.ended, id, caller.identity, identity, reason: .unavailable, detail: "\(identity) is not online", now: now)
            return reply(.unavailable, "\(identity) is not online")
        }
        guard !directory.isInCall(identity) else {
            let id = nextCallID()
            record(.started, id, caller.identity, identity, now: now)
            record(.ended, id, caller.identity, identity, reason: .busy, detail: "busy", now: now)
            return reply(.declined, "busy")
        }
        let call = Call(id: nextCallID(), callerCallID: callID, caller: caller, calleeIdentity: identity, ringing: callees,
                        startedAt: now.unixMilliseconds, ringDeadline: now.monotonic + config.ringTimeout)
        active[call.id] = call
        caller.call = call
        outbox.counters.callsStarted &+= 1
        record(.started, call.id, caller.identity, identity, now: now)
        for callee in callees {
            callee.call = call
            directory.send(.incomingCall(callID: call.id, fromIdentity: caller.identity, fromName: caller.name, keyShare: keyShare,
                                         request: directory.isRequest(from: caller.identity, to: identity)),
                           to: callee, now: now)
        }
        reply(.ringing, "")
        if log.threshold <= .info {
            log.write(.info, "call \(call.id): \(caller.identity) → \(identity) ringing (\(callees.count) session\(callees.count == 1 ? "" : "s"))")
        }
    }

    /// A ringing callee session accepts or declines. The first to accept takes the call: both parties get the private
    /// room and a token for it, and the callee's other sessions stop ringing. A decline withdraws that session only.
    /// The accepting session's `keyShare` goes to the caller with `answered`, unread.
    func answer(by callee: Presence, callID: UInt32, accept: Bool, keyShare: [UInt8] = [], now: Moment) {
        guard let call = callee.call, call.matches(callee, callID: callID) else {
            // Cancelled, timed out or taken on another device meanwhile: the callee learns the call is over.
            return directory.send(.callStatus(CallStatus(callID: callID, state: .ended, reason: "the call is over")), to: callee, now: now)
        }
        guard call.room == nil, call.ringing.contains(where: { $0 === callee }) else { return }  // the caller answering, or a repeated answer
        let caller = call.caller
        guard accept else { return decline(call, by: callee, now: now) }
        call.ringing.removeAll { $0 === callee }
        call.callee = callee
        for other in call.ringing {
            other.call = nil
            tell(other, call, .ended, Call.answeredElsewhere, now: now)
        }
        call.ringing = []
        guard let signer = currentSigner() else {
            finishCall(call, .failed, detail: "the relay has no API key to mint call tokens with", now: now)
            for p in [caller, callee] { tell(p, call, .failed, "the relay cannot set up call rooms", now: now) }
            return
        }
        let room = CallRoom.newName(random)
        call.room = room
        call.ringDeadline = nil
        outbox.counters.callsAnswered &+= 1
        record(.answered, call.id, caller.identity, call.calleeIdentity, room: room, now: now)
        for p in [caller, callee] {
            let token = CallRoom.token(identity: p.identity, name: p.name, room: room, signer: signer, relayKey: relayKey, now: now,
                                       lifetimeSeconds: config.callTokenLifetimeSeconds)
            let share = p === caller ? keyShare : []  // the callee already has the caller's share from its ring
            directory.send(.callStatus(CallStatus(callID: call.callID(for: p), state: .answered, room: room, token: token, keyShare: share)),
                           to: p, now: now)
        }
        if log.threshold <= .info { log.write(.info, "call \(call.id): answered, room \(room)") }
    }

    /// Either party ends the call (before the answer: the caller cancels, a ringing callee session declines).
    func hangUp(by p: Presence, callID: UInt32, now: Moment) {
        if let remote = p.remoteCall, remote.callID == callID {
            p.remoteCall = nil
            sendToNode?(.hangup(callID: callID, identity: p.identity), remote.node)
            return
        }
        guard let call = p.call, call.matches(p, callID: callID) else { return }  // already over
        let others = call.others(than: p)
        if call.room != nil {
            finishCall(call, .hungUp, detail: "hung up by \(p.identity)", now: now)
            for other in others { tell(other, call, .ended, "hung up by \(p.identity)", now: now) }
        } else if p === call.caller {
            finishCall(call, .cancelled, detail: "cancelled by \(p.identity)", now: now)
            for other in others { tell(other, call, .ended, "cancelled", now: now) }
        } else {
            decline(call, by: p, now: now)
        }
    }

    /// A ringing callee session declines: it stops ringing; when it was the last one ringing the call is declined.
    private func decline(_ call: Call, by callee: Presence, now: Moment) {
        call.ringing.removeAll { $0 === callee }
        if callee.call === call { callee.call = nil }
        if callee.isSIPStandIn { directory.remove(callee) }
        guard call.ringing.isEmpty else {
            if log.threshold <= .info { log.write(.info, "call \(call.id): declined on one device, \(call.ringing.count) still ringing") }
            return
        }
        finishCall(call, .declined, detail: "declined by \(callee.identity)", now: now)
        tell(call.caller, call, .declined, "declined by \(callee.identity)", now: now)
    }

    /// A party's presence session went away (left, timed out, replaced): a ringing callee session just stops ringing
    /// (the call ends "connection lost" when it was the last one); the caller or the answering session ends the call
    /// for the other side.
    func sessionLost(_ p: Presence, now: Moment) {
        if let remote = p.remoteCall { hangUp(by: p, callID: remote.callID, now: now) }
        guard let call = p.call else { return }
        if call.room == nil, p !== call.caller {
            call.ringing.removeAll { $0 === p }
            p.call = nil
            guard call.ringing.isEmpty else { return }
            return end(call, .connectionLost, detail: "connection lost", notifying: [call.caller], now: now)
        }
        end(call, .connectionLost, detail: "connection lost", notifying: call.others(than: p), now: now)
    }

    /// Ends every call that rang for `ringTimeout` unanswered (oldest first).
    func tick(now: Moment, housekeeping: Bool) {
        var due: [Call] = []  // allocates only when a ring times out
        for call in active.values {
            if let deadline = call.ringDeadline, deadline <= now.monotonic { due.append(call) }
        }
        for call in due.sorted(by: { $0.id < $1.id }) { ringTimedOut(call, now: now) }
    }

    /// The earliest ring deadline, or `.distantFuture`.
    func nextDeadline(housekeepingDue: Instant) -> Instant {
        var due = Instant.distantFuture
        for call in active.values {
            if let deadline = call.ringDeadline { due = min(due, deadline) }
        }
        return due
    }

    private func ringTimedOut(_ call: Call, now: Moment) {
        let seconds = config.ringTimeout.wholeSeconds
        finishCall(call, .noAnswer, detail: "no answer after \(seconds) s", now: now)
        tell(call.caller, call, .noAnswer, "no answer after \(seconds) s", now: now)
        for callee in call.ringing { tell(callee, call, .ended, "no answer", now: now) }
    }

    /// Another node's caller hung up (or cancelled) the call this node runs for it.
    func remoteHangUp(node: UInt64, identity: String, callID: UInt32, now: Moment) {
        guard let call = active.values.first(where: {
            if case .remote(let n) = $0.caller.link { return n == node && $0.caller.identity == identity && $0.callerCallID == callID }
            return false
        }) else { return }
        hangUp(by: call.caller, callID: callID, now: now)
    }

    /// A status from the node running a call this node's caller placed: to that caller's session (the one that placed
    /// it); a final one ends its remote call here.
    func remoteStatus(_ status: CallStatus, for identity: String, from node: UInt64, now: Moment) {
        guard let p = directory.sessions(of: identity).first(where: { $0.remoteCall?.node == node && $0.remoteCall?.callID == status.callID }) else { return }
        if status.state != .ringing && status.state != .answered { p.remoteCall = nil }
        directory.send(.callStatus(status), to: p, now: now)
    }

    /// Ends a call and tells `notifying` it `ended` with `detail`.
    func end(_ call: Call, _ reason: CallEndReason, detail: String, notifying: [Presence], now: Moment) {
        finishCall(call, reason, detail: detail, now: now)
        for p in notifying { tell(p, call, .ended, detail, now: now) }
    }

    /// Ends every call without telling anyone (the relay is shutting down and says goodbye to every session).
    func endAll(detail: String, now: Moment) {
        for call in active.values.sorted(by: { $0.id < $1.id }) {
            end(call, .connectionLost, detail: detail, notifying: [], now: now)
        }
    }

    /// Calls ringing or answered, oldest first.
    func snapshot() -> [CallSnapshot] {
        active.values.sorted { $0.id < $1.id }.map {
            CallSnapshot(callID: $0.id, caller: $0.caller.identity, callee: $0.calleeIdentity, answered: $0.room != nil,
                         room: $0.room, startedAtUnixMilliseconds: $0.startedAtUnixMilliseconds,
                         ringingSessions: $0.ringing.count)
        }
    }

    /// Forgets a call and logs its end.
    private func finishCall(_ call: Call, _ reason: CallEndReason, detail: String, now: Moment) {
        active[call.id] = nil
        for p in call.parties where p.call === call { p.call = nil }
        for p in call.parties where p.isSIPStandIn { directory.remove(p) }  // still told how it ended
        record(.ended, call.id, call.caller.identity, call.calleeIdentity, room: call.room ?? "", reason: reason, detail: detail, now: now)
        if log.threshold <= .info { log.write(.info, "call \(call.id) ended: \(detail)") }
    }

    /// Sends a status to one party if its session is still online.
    private func tell(_ p: Presence, _ call: Call, _ state: CallState, _ reason: String, now: Moment) {
        guard directory.isOnline(p) else { return }
        directory.send(.callStatus(CallStatus(callID: call.callID(for: p), state: state, reason: reason)), to: p, now: now)
    }

    private func record(_ kind: CallEvent.Kind, _ id: UInt32, _ caller: String, _ callee: String, room: String = "",
                        reason: CallEndReason? = nil, detail: String = "", now: Moment) {
        events.append(CallEvent(kind: kind, callID: id, caller: caller, callee: callee, room: room, endReason: reason,
                                         detail: detail, unixMilliseconds: now.unixMilliseconds))
    }
}
