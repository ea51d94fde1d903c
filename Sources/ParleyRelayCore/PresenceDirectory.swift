/// Worker 0's online identities and the calls between them, and the log of recent call events (the sessions
/// themselves are in the core's `SessionTable`). Owned by one `RelayCore` (one thread).
final class PresenceDirectory {
    /// Online identities.
    private(set) var byIdentity: [String: Presence] = [:]
    /// Calls ringing or answered, by relay call id.
    var calls: [UInt32: Call] = [:]
    var events: CallEventLog
    private var lastCallID: UInt32 = 0

    init(eventCapacity: Int) { events = CallEventLog(capacity: eventCapacity) }

    /// A fresh relay call id, never 0 and never one in use.
    func nextCallID() -> UInt32 {
        repeat { lastCallID &+= 1 } while lastCallID == 0 || calls[lastCallID] != nil
        return lastCallID
    }

    func add(_ p: Presence) { byIdentity[p.identity] = p }

    func remove(_ p: Presence) {
        if byIdentity[p.identity] === p { byIdentity[p.identity] = nil }
    }

    /// Whether `p` is the identity's current session (false once it went offline or was replaced).
    func isOnline(_ p: Presence) -> Bool { byIdentity[p.identity] === p }

    /// Forgets every identity.
    func removeAll() { byIdentity.removeAll() }
}
