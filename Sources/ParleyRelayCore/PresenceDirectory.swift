import ParleyWire

/// Worker 0's online identities and the direct texts between them (the sessions themselves are in the core's
/// `SessionTable`, their calls in its `CallRouter`). Owned by one `RelayCore` (one thread).
final class PresenceDirectory {
    /// Online identities.
    private(set) var byIdentity: [String: Presence] = [:]
    private let outbox: Outbox

    init(outbox: Outbox) { self.outbox = outbox }

    func add(_ p: Presence) { byIdentity[p.identity] = p }

    func remove(_ p: Presence) {
        if byIdentity[p.identity] === p { byIdentity[p.identity] = nil }
    }

    /// Whether `p` is the identity's current session (false once it went offline or was replaced).
    func isOnline(_ p: Presence) -> Bool { byIdentity[p.identity] === p }

    /// Forgets every identity.
    func removeAll() { byIdentity.removeAll() }

    /// A direct text between online identities: delivered to `to`'s presence session as `text(direct: true)`.
    func deliverDirectText(_ text: String, from p: Presence, to identity: String, messageID: UInt32, now: Moment) {
        let recipient = identity.isEmpty ? nil : byIdentity[identity]
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
                reason = Outbox.laggards([identity])
            }
        }
        outbox.enqueue(.textStatus(messageID: messageID, delivered: reason.isEmpty, reason: reason), to: p.session)
    }
}
