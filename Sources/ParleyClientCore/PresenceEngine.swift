import ParleyWire

/// An online identity kept online: one `PresenceSession` at a time, and, when its owner asks (`renewal`), a fresh
/// registration after `RejoinBackoff`'s wait if the session ended in a way a new one can mend. Pure, like
/// `ClientEngine`: the owner passes `now`, hands in datagrams, and sends what the engine gives to `transmit`.
///
/// The owner decides when to look at an ending (`parley listen` does so between calls, so a call's room is left
/// before it registers again); `parley call` and `parley message` never renew.
public final class PresenceEngine {
    /// What follows a session's end.
    public enum Renewal: Equatable, Sendable {
        /// The relay went away, forgot us, timed us out, or went silent: registering again after the wait.
        case registerAgain(reason: String, after: Interval)
        /// The relay refused the registration: final.
        case refused(RefusalCode, String)
        /// The relay ended the session for good (replaced by a newer registration, kicked…): final.
        case removed(GoodbyeCode, String)
    }

    /// The relay's public address.
    public let server: PeerAddress
    /// The current session (calls, texts, state).
    public private(set) var session: PresenceSession
    /// How the current session ended (a refusal, `forgotten`, a goodbye, or `ended`); nil while it lives.
    public private(set) var ending: PresenceSession.Event?
    /// When a new session registers, once `renewal` scheduled it.
    public private(set) var registerAgainAt: Instant?
    /// Whether the relay answers; its changes are collected for `takeRelayChanges`.
    public private(set) var relayWatch = RelaySilenceWatch()
    private var relayChanges: [RelaySilenceWatch.Change] = []

    private let token: () -> String
    private let unixMilliseconds: () -> Int64
    private let transmit: (UnsafeRawBufferPointer, PeerAddress) -> Void
    private var random: any RandomNumberGenerator
    private var backoff = RejoinBackoff()
    /// Encrypted (the default) or cleartext (debugging), for every session.
    public let security: SignallingSession.Security

    /// An engine whose first session registers `token()` at `server` at its first `tick`. Nonces come from `random`;
    /// datagrams go out through `transmit(bytes, to)`.
    public init(server: PeerAddress, token: @escaping () -> String, security: SignallingSession.Security = .encrypted(relayKey: nil),
                now: Instant, unixMilliseconds: @escaping () -> Int64,
                random: some RandomNumberGenerator, transmit: @escaping (UnsafeRawBufferPointer, PeerAddress) -> Void) {
        self.server = server
        self.security = security
        self.token = token
        self.unixMilliseconds = unixMilliseconds
        self.transmit = transmit
        var random = random
        session = PresenceSession(server: server, token: token(), security: security, now: now, unixMilliseconds: unixMilliseconds,
                                  random: &random)
        self.random = random
    }

    /// Takes a signalling datagram from `from`; returns what the session said.
    public func receive(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Instant) -> [PresenceSession.Event] {
        note(session.handle(bytes, from: from, now: now), now: now)
    }

    /// Timers: registers afresh when the wait `renewal` set is over, then the session's retries, keepalives and resume.
    public func tick(now: Instant) -> [PresenceSession.Event] {
        if let at = registerAgainAt, now >= at {
            registerAgainAt = nil
            ending = nil
            var generator = random
            session = PresenceSession(server: server, token: token(), security: security, now: now, unixMilliseconds: unixMilliseconds,
                                      random: &generator)
            random = generator
        }
        let events = note(session.tick(now: now), now: now)
        if let change = relayWatch.observe(resuming: session.state == .resuming, lastHeard: session.signalling.lastHeard, now: now) {
            relayChanges.append(change)
        }
        return events
    }

    /// The relay went silent or answers again since the last call (`RelaySilenceWatch`), oldest first.
    public func takeRelayChanges() -> [RelaySilenceWatch.Change] {
        defer { relayChanges.removeAll() }
        return relayChanges
    }

    private func note(_ events: [PresenceSession.Event], now: Instant) -> [PresenceSession.Event] {
        for e in events {
            switch e {
            case .registered, .resumed:
                if case .registered = e { backoff.reset() }
                if let change = relayWatch.answered(now: now) { relayChanges.append(change) }
            case .refused, .forgotten, .goodbye, .ended: ending = ending ?? e
            default: break
            }
        }
        flush()
        return events
    }

    /// What follows the current session's end: nil while it lives (or a new registration is already scheduled);
    /// otherwise the decision, and with `.registerAgain` the new session is opened by `tick` after the wait.
    public func renewal(now: Instant) -> Renewal? {
        guard registerAgainAt == nil, let ending else { return nil }
        switch ending {
        case .refused(let code, let reason):
            return .refused(code, reason)
        case .forgotten(let reason), .ended(let reason), .goodbye(.relayShutdown, let reason), .goodbye(.timedOut, let reason):
            let wait = backoff.take()
            registerAgainAt = now + wait
            return .registerAgain(reason: reason, after: wait)
        case .goodbye(let code, let reason):
            return .removed(code, reason)
        default:
            return nil
        }
    }

    /// Sends what the session queued (call after acting on `session` directly: `call`, `answer`, `hangUp`, texts).
    public func flush() {
        for d in session.drainOutgoing() { d.withUnsafeBytes { transmit($0, session.destination) } }
    }

    /// Goes offline now.
    public func leave(now: Instant) {
        session.leave(now: now)
        flush()
    }
}
