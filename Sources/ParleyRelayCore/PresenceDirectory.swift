/// Worker 0's online identities (the sessions themselves are in the core's `SessionTable`, their calls in its
/// `CallRouter`). Owned by one `RelayCore` (one thread).
final class PresenceDirectory {
    /// Online identities.
    private(set) var byIdentity: [String: Presence] = [:]
    init() {}

    func add(_ p: Presence) { byIdentity[p.identity] = p }

    func remove(_ p: Presence) {
        if byIdentity[p.identity] === p { byIdentity[p.identity] = nil }
    }

    /// Whether `p` is the identity's current session (false once it went offline or was replaced).
    func isOnline(_ p: Presence) -> Bool { byIdentity[p.identity] === p }

    /// Forgets every identity.
    func removeAll() { byIdentity.removeAll() }
}
