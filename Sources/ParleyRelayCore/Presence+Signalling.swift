import ParleyWire

/// A presence session's messages, keepalive, direct texts, timeouts and removal.
extension RelayCore {
    func handlePresenceSignal(_ p: Presence, _ datagram: SignalDatagram, bytes: UnsafeRawBufferPointer, now: Moment, viaPublicPort: Bool) {
        if case .register = datagram.message {
            // A client that restarted on the same address may register afresh (handled below).
        } else if datagram.connectionID != p.connectionID {
            return drop(.connectionMismatch, from: p.address, now: now)
        }
        p.lastHeard = now.monotonic
        for message in p.channel.receive(sequence: datagram.sequence, ack: datagram.ack, message: datagram.message, now: now.monotonic) {
            guard presence.byConnection[p.connectionID] === p else { return }  // removed while handling
            switch message {
            case .register(let request):
                if request.nonce == p.nonce { continue }  // a repeat: the welcome is on its way
                removePresence(p, reason: "registered again", goodbye: nil, now: now)
                handleRegisterRequest(request, bytes: bytes, from: p.address, now: now, viaPublicPort: viaPublicPort)
                return
            case .leave:
                removePresence(p, reason: "left", goodbye: .left, now: now)
                return
            case .ping(let timestamp):
                sendSignal(.pong(timestamp: timestamp), to: p.address, connectionID: p.connectionID, ack: p.channel.ackNumber,
                           viaPublicPort: p.viaPublicPort)
                p.channel.ackSent()
            case .sendText(let to, let fragment):
                for finished in p.texts.take(fragment) {
                    switch finished {
                    case .text(let id, let text): deliverDirectText(text, from: p, to: to, messageID: id, now: now)
                    case .refused(let id, let why): p.channel.enqueue(.textStatus(messageID: id, delivered: false, reason: why.reason))
                    }
                }
            case .callInvite(let callID, let to):
                inviteCall(from: p, callID: callID, to: to, now: now)
            case .callAnswer(let callID, let accept):
                answerCall(by: p, callID: callID, accept: accept, now: now)
            case .callHangup(let callID):
                hangUpCall(by: p, callID: callID, now: now)
            case .resume(let timestamp, let proof):
                if resumeIsProven(timestamp: timestamp, proof: proof, secret: p.sessionSecret, connectionID: p.connectionID, now: now) {
                    p.channel.enqueue(.resumed)
                } else {
                    drop(.resumeRejected, from: p.address, now: now)
                }
            case .pathResponse:
                break
            case .ack:
                break
            default:
                drop(.unexpectedMessage, from: p.address, now: now)
            }
        }
        if presence.byConnection[p.connectionID] === p { pumpPresence(p, now: now) }
    }

    /// Sends what the session's reliable channel has due, or a bare ack if one is owed.
    func pumpPresence(_ p: Presence, now: Moment) {
        let due = p.channel.transmissions(now: now.monotonic)
        for t in due {
            if t.isRetransmission { counters.signallingRetransmissions &+= 1 }
            sendDatagram(SignalDatagram(connectionID: p.connectionID, sequence: t.sequence, ack: p.channel.ackNumber, message: t.message),
                         to: p.address, viaPublicPort: p.viaPublicPort)
        }
        if !due.isEmpty {
            p.channel.ackSent()
        } else if p.channel.ackOwed {
            sendSignal(.ack, to: p.address, connectionID: p.connectionID, ack: p.channel.ackNumber, viaPublicPort: p.viaPublicPort)
            p.channel.ackSent()
        }
    }

    /// Queues a reliable message to a presence session and sends it.
    func sendPresence(_ message: SignalMessage, to p: Presence, now: Moment) {
        p.channel.enqueue(message)
        pumpPresence(p, now: now)
    }

    /// A direct text between online identities: delivered to `to`'s presence session as `text(direct: true)`.
    func deliverDirectText(_ text: String, from p: Presence, to identity: String, messageID: UInt32, now: Moment) {
        let recipient = identity.isEmpty ? nil : presence.byIdentity[identity]
        let fragments = TextFragment.split(text, messageID: messageID) ?? []
        var reason = identity.isEmpty ? "a direct text needs a recipient" : "\(identity) is not online"
        if let r = recipient {
            if canTakeText(r.channel, fragments: fragments.count) {
                for f in fragments {
                    r.channel.enqueue(.text(fromMemberID: p.id, fromIdentity: p.identity, direct: true, fragment: f))
                }
                pumpPresence(r, now: now)
                reason = ""
            } else {
                reason = Self.laggards([identity])
            }
        }
        p.channel.enqueue(.textStatus(messageID: messageID, delivered: reason.isEmpty, reason: reason))
    }

    /// Forgets a presence session (telling it why when `goodbye` is set); its call ends for the other party.
    func removePresence(_ p: Presence, reason: String, goodbye: GoodbyeCode?, now: Moment) {
        if let code = goodbye {
            sendSignal(.goodbye(code: code, reason: reason), to: p.address, connectionID: p.connectionID, ack: p.channel.ackNumber,
                       viaPublicPort: p.viaPublicPort)
        }
        presence.remove(p)
        if let call = p.call { endCall(call, .connectionLost, detail: "connection lost", notifying: [call.other(than: p)], now: now) }
        if log.threshold <= .info { log.write(.info, "\(p.identity) offline: \(reason)") }
    }

    /// Retransmissions, timeouts of silent sessions, and ring timeouts.
    func tickPresence(now: Moment) {
        guard !presence.byConnection.isEmpty else { return }
        var expired: [Presence] = [], slow: [Presence] = []
        for p in presence.byConnection.values {
            if p.channel.serviceDue <= now.monotonic { pumpPresence(p, now: now) }
            if p.channel.overflowed {
                slow.append(p)
            } else if p.channel.failed || now.monotonic - p.lastHeard > config.memberTimeout {
                expired.append(p)
            }
        }
        for p in slow where presence.byConnection[p.connectionID] === p {
            countSlowSession(p.channel)
            removePresence(p, reason: Self.notKeepingUp, goodbye: .timedOut, now: now)
        }
        for p in expired where presence.byConnection[p.connectionID] === p {
            removePresence(p, reason: "timed out", goodbye: .timedOut, now: now)
        }
        var due: [Call] = []  // allocates only when a ring times out
        for call in presence.calls.values {
            if let deadline = call.ringDeadline, deadline <= now.monotonic { due.append(call) }
        }
        for call in due.sorted(by: { $0.id < $1.id }) { ringTimedOut(call, now: now) }
    }

    /// Tells every presence session the relay is going away (twice) and forgets them and their calls.
    func shutdownPresence(now: Moment) {
        for p in presence.byConnection.values {
            for _ in 0..<2 {
                sendSignal(.goodbye(code: .relayShutdown, reason: "the relay is shutting down"), to: p.address,
                           connectionID: p.connectionID, ack: p.channel.ackNumber, viaPublicPort: p.viaPublicPort)
            }
        }
        for call in presence.calls.values.sorted(by: { $0.id < $1.id }) {
            endCall(call, .connectionLost, detail: "the relay is shutting down", notifying: [], now: now)
        }
        for p in Array(presence.byConnection.values) { presence.remove(p) }
    }

    // MARK: Reading presence and calls (HTTP API, tests)

    /// Online identities on this worker (only worker 0 has any), by identity.
    public func presenceSnapshot() -> [PresenceSnapshot] {
        presence.byIdentity.values.sorted { $0.identity < $1.identity }.map {
            PresenceSnapshot(identity: $0.identity, name: $0.name, address: $0.address,
                             registeredAtUnixMilliseconds: $0.registeredAtUnixMilliseconds, callID: $0.call?.id)
        }
    }

    /// Calls ringing or answered, oldest first.
    public func callSnapshot() -> [CallSnapshot] {
        presence.calls.values.sorted { $0.id < $1.id }.map {
            CallSnapshot(callID: $0.id, caller: $0.caller.identity, callee: $0.callee.identity, answered: $0.room != nil,
                         room: $0.room, startedAtUnixMilliseconds: $0.startedAtUnixMilliseconds)
        }
    }

    /// The recent call events, oldest first, without removing them (at most `callEventCapacity`).
    public var recentCallEvents: [CallEvent] { presence.events.events }

    /// Takes the recent call events, oldest first, and empties the log.
    public func drainCallEvents() -> [CallEvent] { presence.events.drain() }

    /// Call events overwritten in the log before they were drained.
    public var callEventsOverwritten: UInt64 { presence.events.overwritten }
}
