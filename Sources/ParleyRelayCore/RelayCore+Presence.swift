import ParleyWire

/// Presence sessions: direct texts between online identities, going offline, and what the HTTP API reads.
extension RelayCore {
    /// A direct text between online identities: delivered to `to`'s presence session as `text(direct: true)`.
    func deliverDirectText(_ text: String, from p: Presence, to identity: String, messageID: UInt32, now: Moment) {
        let recipient = identity.isEmpty ? nil : presence.byIdentity[identity]
        let fragments = TextFragment.split(text, messageID: messageID) ?? []
        var reason = identity.isEmpty ? "a direct text needs a recipient" : "\(identity) is not online"
        if let r = recipient {
            if outbox.canTakeText(r.session.channel, fragments: fragments.count) {
                for f in fragments {
                    outbox.enqueue(.text(fromMemberID: p.id, fromIdentity: p.identity, direct: true, fragment: f), to: r.session)
                }
                outbox.pump(r.session, now: now)
                reason = ""
            } else {
                reason = Self.laggards([identity])
            }
        }
        outbox.enqueue(.textStatus(messageID: messageID, delivered: reason.isEmpty, reason: reason), to: p.session)
    }

    /// Forgets a presence session (telling it why when `goodbye` is set); its call ends for the other party.
    func removePresence(_ p: Presence, reason: String, goodbye: GoodbyeCode?, now: Moment) {
        if let code = goodbye { outbox.sayGoodbye(code, reason, to: p.session) }
        sessions.remove(.presence(p), at: p.session.address)
        presence.remove(p)
        if let call = p.call { calls.end(call, .connectionLost, detail: "connection lost", notifying: [call.other(than: p)], now: now) }
        if log.threshold <= .info { log.write(.info, "\(p.identity) offline: \(reason)") }
    }

    /// Forgets every presence session's calls and identity (`shutdown` says goodbye to every session).
    func shutdownPresence(now: Moment) {
        calls.endAll(detail: "the relay is shutting down", now: now)
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
        calls.snapshot()
    }

    /// The recent call events, oldest first, without removing them (at most `callEventCapacity`).
    public var recentCallEvents: [CallEvent] { calls.events.events }

    /// Takes the recent call events, oldest first, and empties the log.
    public func drainCallEvents() -> [CallEvent] { calls.events.drain() }

    /// Call events overwritten in the log before they were drained.
    public var callEventsOverwritten: UInt64 { calls.events.overwritten }
}
