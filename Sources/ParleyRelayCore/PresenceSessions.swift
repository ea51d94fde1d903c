import ParleyWire

/// Presence sessions: direct texts between online identities, going offline, and what the HTTP API reads.
extension RelayCore {
    /// A direct text between online identities: delivered to `to`'s presence session as `text(direct: true)`.
    func deliverDirectText(_ text: String, from p: Presence, to identity: String, messageID: UInt32, now: Moment) {
        let recipient = identity.isEmpty ? nil : presence.byIdentity[identity]
        let fragments = TextFragment.split(text, messageID: messageID) ?? []
        var reason = identity.isEmpty ? "a direct text needs a recipient" : "\(identity) is not online"
        if let r = recipient {
            if canTakeText(r.session.channel, fragments: fragments.count) {
                for f in fragments {
                    enqueue(.text(fromMemberID: p.id, fromIdentity: p.identity, direct: true, fragment: f), to: r.session)
                }
                pump(r.session, now: now)
                reason = ""
            } else {
                reason = Self.laggards([identity])
            }
        }
        enqueue(.textStatus(messageID: messageID, delivered: reason.isEmpty, reason: reason), to: p.session)
    }

    /// Forgets a presence session (telling it why when `goodbye` is set); its call ends for the other party.
    func removePresence(_ p: Presence, reason: String, goodbye: GoodbyeCode?, now: Moment) {
        if let code = goodbye { sayGoodbye(code, reason, to: p.session) }
        sessions.remove(.presence(p), at: p.session.address)
        presence.remove(p)
        if let call = p.call { endCall(call, .connectionLost, detail: "connection lost", notifying: [call.other(than: p)], now: now) }
        if log.threshold <= .info { log.write(.info, "\(p.identity) offline: \(reason)") }
    }

    /// Forgets every presence session's calls and identity (`shutdown` says goodbye to every session).
    func shutdownPresence(now: Moment) {
        for call in presence.calls.values.sorted(by: { $0.id < $1.id }) {
            endCall(call, .connectionLost, detail: "the relay is shutting down", notifying: [], now: now)
        }
        presence.removeAll()
    }

    // MARK: Reading presence and calls (HTTP API, tests)

    /// Online identities on this worker (only worker 0 has any), by identity.
    public func presenceSnapshot() -> [PresenceSnapshot] {
        presence.byIdentity.values.sorted { $0.identity < $1.identity }.map {
            PresenceSnapshot(identity: $0.identity, name: $0.name, address: $0.session.address,
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
