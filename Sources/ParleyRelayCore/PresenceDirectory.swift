import ParleyWire

/// Worker 0's online identities and the direct texts between them (the sessions themselves are in the core's
/// `SessionTable`, their calls in its `CallRouter`). An identity may be online from several devices: each has its
/// own presence session, oldest first, at most `maxPresenceSessionsPerIdentity`. Owned by one `RelayCore` (one thread).
final class PresenceDirectory {
    /// Online identities: every live presence session of each, oldest first (never an empty list).
    private(set) var byIdentity: [String: [Presence]] = [:]
    private let outbox: Outbox

    init(outbox: Outbox) { self.outbox = outbox }

    /// Every live session of `identity`, oldest first (empty when it is not online).
    func sessions(of identity: String) -> [Presence] { byIdentity[identity] ?? [] }

    /// Presence sessions online, across identities.
    var sessionCount: Int { byIdentity.values.reduce(0) { $0 + $1.count } }

    func add(_ p: Presence) { byIdentity[p.identity, default: []].append(p) }

    func remove(_ p: Presence) {
        guard var list = byIdentity[p.identity] else { return }
        list.removeAll { $0 === p }
        byIdentity[p.identity] = list.isEmpty ? nil : list
    }

    /// Whether `p` is still one of its identity's live sessions (false once it went offline or was replaced).
    func isOnline(_ p: Presence) -> Bool { byIdentity[p.identity]?.contains { $0 === p } ?? false }

    /// Whether any session of `identity` takes part in a call (ringing, calling or answered): one call per identity.
    func isInCall(_ identity: String) -> Bool { byIdentity[identity]?.contains { $0.call != nil } ?? false }

    /// Forgets every identity.
    func removeAll() { byIdentity.removeAll() }

    /// A direct text between online identities: delivered to every presence session of `identity` as
    /// `text(direct: true)`; delivered when at least one session took it (one that cannot take it is skipped).
    func deliverDirectText(_ text: String, from p: Presence, to identity: String, messageID: UInt32, now: Moment) {
        let recipients = identity.isEmpty ? [] : sessions(of: identity)
        let fragments = TextFragment.split(text, messageID: messageID) ?? []
        var reason = identity.isEmpty ? "a direct text needs a recipient" : "\(identity) is not online"
        if !recipients.isEmpty { reason = Outbox.laggards([identity]) }
        for r in recipients where outbox.canTakeText(r.session.channel, fragments: fragments.count) {
            for f in fragments {
                outbox.enqueue(.text(fromMemberID: p.id, fromIdentity: p.identity, direct: true, fragment: f), to: r.session)
            }
            outbox.pump(r.session, now: now)
            reason = ""
        }
        outbox.enqueue(.textStatus(messageID: messageID, delivered: reason.isEmpty, reason: reason), to: p.session)
    }
}
