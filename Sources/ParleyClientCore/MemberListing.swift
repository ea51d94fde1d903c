import ParleyWire

/// A room's members as a person sees them: one entry per identity. In a cluster a member moving between nodes (a
/// drain) is for a moment two members — its new session joined, through the node it moved to, before the node it left
/// dropped the old one — and the lists would show it twice, then say it left while it is there. Here it is listed once
/// (its newest session: member ids grow), its second join is not announced, nor its old session's leave. When the
/// mover is this member, its old session is in the list the node it moved to sends: never listed. Pure.
public struct MemberListing: Sendable {
    /// Every member session the relay announced (but this member's own), by member id.
    public private(set) var byID: [UInt32: MemberEntry] = [:]
    /// This member's identity: entries with it are its own session on the node it left.
    public let me: String

    /// Nobody; `me`: this member's identity.
    public init(me: String = "") { self.me = me }

    /// Forgets everyone: a new session's welcome, whose member list follows (ids are the new node's).
    public mutating func reset() { byID = [:] }

    /// Members of a welcome's list (its pages add up).
    public mutating func add(_ list: [MemberEntry]) {
        for m in list where m.identity != me { byID[m.memberID] = m }
    }

    /// A member joined; returns whether to announce it (not when its identity is listed already).
    public mutating func joined(_ m: MemberEntry) -> Bool {
        guard m.identity != me else { return false }
        let listed = byID.values.contains { $0.identity == m.identity && $0.memberID != m.memberID }
        byID[m.memberID] = m
        return !listed
    }

    /// A member left; returns whether to announce it (not while its identity is still listed through another session).
    public mutating func left(_ m: MemberEntry) -> Bool {
        guard m.identity != me else { return false }
        byID[m.memberID] = nil
        return !byID.values.contains { $0.identity == m.identity }
    }

    /// A member's entry changed (muted, unmuted).
    public mutating func update(_ m: MemberEntry) {
        if m.identity != me { byID[m.memberID] = m }
    }

    /// One entry per identity, its newest session's, sorted by identity.
    public var entries: [MemberEntry] {
        var newest: [String: MemberEntry] = [:]
        for m in byID.values where (newest[m.identity]?.memberID ?? 0) <= m.memberID { newest[m.identity] = m }
        return newest.values.sorted { $0.identity < $1.identity }
    }

    /// The member with this id, if listed.
    public subscript(id id: UInt32) -> MemberEntry? { byID[id] }

    /// The member sending with this SSRC, if listed.
    public func member(ssrc: UInt32) -> MemberEntry? { byID.values.first { $0.ssrc == ssrc } }
}
