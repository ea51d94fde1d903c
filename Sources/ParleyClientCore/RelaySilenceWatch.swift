import ParleyWire

/// Whether the relay still answers, as a person should be told it: "stopped answering" once, as soon as the session
/// starts resuming (nothing heard for `min(keepalive, 3 s) + 1 s` — at most 4 s, since the session pings every second
/// once the relay has been quiet for 3 s), and "answers again" once a resume is accepted or a new session welcomed.
/// Between the two the engine keeps retrying; sessions may end and be replaced, the silence goes on. Pure.
public struct RelaySilenceWatch: Equatable, Sendable {
    /// A change worth telling.
    public enum Change: Equatable, Sendable {
        /// Nothing heard from the relay for this long.
        case silent(for: Interval)
        /// The relay answers again after being silent this long.
        case back(after: Interval)
    }

    /// When the relay was last heard before it went silent; nil while it answers.
    public private(set) var silentSince: Instant?

    /// Nobody silent yet.
    public init() {}

    /// How long the relay has been silent, or nil while it answers.
    public func silence(now: Instant) -> Interval? { silentSince.map { now - $0 } }

    /// Looks at the session after its timers ran: a session that started resuming means the relay went silent.
    public mutating func observe(resuming: Bool, lastHeard: Instant, now: Instant) -> Change? {
        guard resuming, silentSince == nil else { return nil }
        silentSince = lastHeard
        return .silent(for: now - lastHeard)
    }

    /// The relay answered (a resume accepted, a welcome): ends the silence, if there was one.
    public mutating func answered(now: Instant) -> Change? {
        guard let since = silentSince else { return nil }
        silentSince = nil
        return .back(after: now - since)
    }
}
