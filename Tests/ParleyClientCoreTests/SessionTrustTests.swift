// Who may speak for a session, and what a relay that forgot the session means: `ClientSession` and `PresenceSession`
// against a relay written by hand (its datagrams built here, its addresses chosen here), on a manual clock.
import ParleyClientCore
import ParleyWire
import Testing

/// The relay's side of one session: where it speaks from, and the datagrams it sends.
struct ScriptedRelay {
    static let publicAddress = PeerAddress(ipv4: 10, 0, 0, 1, port: 7400)
    /// The worker that owns the room (the welcome names its port).
    static let workerAddress = PeerAddress(ipv4: 10, 0, 0, 1, port: 7401)
    static let connection: UInt32 = 0x00C0_FFEE
    static let unixMilliseconds: Int64 = 1_800_000_000_000
    static let ms = Interval.milliseconds(1)

    /// A datagram as the relay would serialize it.
    static func datagram(_ message: SignalMessage, connection: UInt32 = connection, sequence: UInt32 = 0) -> [UInt8] {
        (try? SignalDatagram(connectionID: connection, sequence: sequence, ack: 0, message: message).serialized()) ?? []
    }

    /// The welcome for the join or register in `outgoing` (its nonce), on `port`.
    static func welcome(answering outgoing: [[UInt8]], port: UInt16, room: String = "lobby") -> [UInt8] {
        let nonce = outgoing.lazy.compactMap { try? SignalDatagram(parsing: $0) }.compactMap { d -> [UInt8]? in
            switch d.message {
            case .join(let j): j.nonce
            case .register(let r): r.nonce
            default: nil
            }
        }.first ?? []
        return datagram(.welcome(Welcome(nonce: nonce, memberID: 7, ssrc: 0x1234_5678, port: port, sessionSecret: Array(repeating: 0x5A, count: 32),
                                         room: room, mode: room.isEmpty ? "presence" : "forward", identity: "alice", memberCount: 0,
                                         keepaliveMilliseconds: 5000, timeoutMilliseconds: 15000, flags: MemberFlags(rawValue: 6))),
                        sequence: 1)
    }

    /// Whether `outgoing` holds a resume.
    static func holdsResume(_ outgoing: [[UInt8]]) -> Bool {
        outgoing.contains { if case .resume = (try? SignalDatagram(parsing: $0))?.message { true } else { false } }
    }
}

/// A member welcomed by the room's worker on port 7401.
func welcomedMember() -> ClientSession {
    let s = ClientSession(server: ScriptedRelay.publicAddress, token: "t", room: "lobby", security: .cleartext, now: t0,
                          unixMilliseconds: { ScriptedRelay.unixMilliseconds })
    _ = s.tick(now: t0)
    let welcome = ScriptedRelay.welcome(answering: s.drainOutgoing(), port: ScriptedRelay.workerAddress.port)
    _ = welcome.withUnsafeBytes { s.handle($0, from: ScriptedRelay.publicAddress, now: t0 + 1 * ScriptedRelay.ms) }
    _ = s.drainOutgoing()
    return s
}

/// An identity online (presence lives on the public port: the welcome names it).
func registeredPresence() -> PresenceSession {
    let s = PresenceSession(server: ScriptedRelay.publicAddress, token: "t", security: .cleartext, now: t0, unixMilliseconds: { ScriptedRelay.unixMilliseconds })
    _ = s.tick(now: t0)
    let welcome = ScriptedRelay.welcome(answering: s.drainOutgoing(), port: ScriptedRelay.publicAddress.port, room: "")
    _ = welcome.withUnsafeBytes { s.handle($0, from: ScriptedRelay.publicAddress, now: t0 + 1 * ScriptedRelay.ms) }
    _ = s.drainOutgoing()
    return s
}

/// One forged or genuine goodbye: where it comes from and which session it names.
struct GoodbyeCase: CustomTestStringConvertible, Sendable {
    var label: String
    var from: PeerAddress
    var connection: UInt32
    var endsTheSession: Bool
    var testDescription: String { label }
}

@Suite("Only the relay speaks for a session")
struct SessionSourceTests {
    static let goodbyes: [GoodbyeCase] = [
        GoodbyeCase(label: "another port on the relay's host", from: PeerAddress(ipv4: 10, 0, 0, 1, port: 9999),
                    connection: ScriptedRelay.connection, endsTheSession: false),
        GoodbyeCase(label: "the worker's port number on another host", from: PeerAddress(ipv4: 10, 0, 0, 2, port: 7401),
                    connection: ScriptedRelay.connection, endsTheSession: false),
        GoodbyeCase(label: "the worker's port, naming no session", from: ScriptedRelay.workerAddress, connection: 0, endsTheSession: false),
        GoodbyeCase(label: "the worker's port, naming another session", from: ScriptedRelay.workerAddress,
                    connection: ScriptedRelay.connection + 1, endsTheSession: false),
        GoodbyeCase(label: "the worker's port, this session", from: ScriptedRelay.workerAddress,
                    connection: ScriptedRelay.connection, endsTheSession: true),
        // A worker answers from the public port until it hears the member on its own.
        GoodbyeCase(label: "the public port, this session", from: ScriptedRelay.publicAddress,
                    connection: ScriptedRelay.connection, endsTheSession: true),
    ]

    @Test("a member's session ends on a goodbye only from the relay's ports, naming it", arguments: goodbyes)
    func memberGoodbye(_ c: GoodbyeCase) {
        let s = welcomedMember()
        let goodbye = ScriptedRelay.datagram(.goodbye(code: .kicked, reason: "bye"), connection: c.connection)
        let events = goodbye.withUnsafeBytes { s.handle($0, from: c.from, now: t0 + 2 * ScriptedRelay.ms) }
        if c.endsTheSession {
            #expect(events == [.goodbye(.kicked, "bye")])
            #expect(s.state == .ended("bye"))
        } else {
            #expect(events.isEmpty)
            #expect(s.state == .joined)
            #expect(s.drainOutgoing().isEmpty, "a forged datagram got an answer")
        }
    }

    @Test("a presence session ends on a goodbye only from the relay's ports, naming it", arguments: goodbyes)
    func presenceGoodbye(_ c: GoodbyeCase) {
        let s = registeredPresence()
        // Presence lives on the public port: the welcome's port and the public port are one.
        let from = c.from == ScriptedRelay.workerAddress ? ScriptedRelay.publicAddress : c.from
        let goodbye = ScriptedRelay.datagram(.goodbye(code: .replaced, reason: "bye"), connection: c.connection)
        let events = goodbye.withUnsafeBytes { s.handle($0, from: from, now: t0 + 2 * ScriptedRelay.ms) }
        if c.endsTheSession {
            #expect(events == [.goodbye(.replaced, "bye")])
            #expect(s.state == .ended("bye"))
        } else {
            #expect(events.isEmpty)
            #expect(s.state == .registered)
        }
    }

    @Test("before the welcome only the public port answers a join")
    func beforeTheWelcome() {
        let s = ClientSession(server: ScriptedRelay.publicAddress, token: "t", room: "lobby", security: .cleartext, now: t0,
                              unixMilliseconds: { ScriptedRelay.unixMilliseconds })
        _ = s.tick(now: t0)
        let join = s.drainOutgoing()
        let refused = ScriptedRelay.datagram(.refused(code: .tokenBadSignature, reason: "forged"), connection: 0)
        let welcome = ScriptedRelay.welcome(answering: join, port: ScriptedRelay.workerAddress.port)
        for from in [ScriptedRelay.workerAddress, PeerAddress(ipv4: 10, 0, 0, 1, port: 9999)] {
            #expect(refused.withUnsafeBytes { s.handle($0, from: from, now: t0 + .nanoseconds(1)) }.isEmpty)
            #expect(welcome.withUnsafeBytes { s.handle($0, from: from, now: t0 + .nanoseconds(1)) }.isEmpty)
            #expect(s.state == .joining)
            #expect(!s.isFromRelay(from))
        }
        let events = welcome.withUnsafeBytes { s.handle($0, from: ScriptedRelay.publicAddress, now: t0 + .nanoseconds(2)) }
        #expect(events.count == 2)  // welcomed, and the (empty) member list
        #expect(s.state == .joined)
        #expect(s.destination == ScriptedRelay.workerAddress)
        #expect(s.isFromRelay(ScriptedRelay.workerAddress) && s.isFromRelay(ScriptedRelay.publicAddress))
        #expect(!s.isFromRelay(PeerAddress(ipv4: 10, 0, 0, 1, port: 7402)))
    }

    @Test("a forged datagram is no sign of life: the session still resumes when the relay goes quiet")
    func forgedTrafficDoesNotKeepAlive() {
        let s = welcomedMember()
        let pong = ScriptedRelay.datagram(.pong(timestamp: 1))
        var resumed = false
        for step in 1...50 {
            let now = t0 + Int64(step) * 100 * ScriptedRelay.ms
            _ = pong.withUnsafeBytes { s.handle($0, from: PeerAddress(ipv4: 10, 0, 0, 1, port: 9999), now: now) }
            _ = s.tick(now: now)
            if ScriptedRelay.holdsResume(s.drainOutgoing()) { resumed = true; break }
        }
        #expect(resumed)
        #expect(s.state == .resuming)
    }
}

@Suite("A relay that forgot the session: join afresh")
struct ForgottenSessionTests {
    /// Ticks without hearing from the relay until the session sends a resume (about 4 s of silence).
    static func goQuiet<S>(_ s: S, tick: (S, Instant) -> Void, drain: (S) -> [[UInt8]]) -> Instant? {
        for step in 1...100 {
            let now = t0 + Int64(step) * 100 * ScriptedRelay.ms
            tick(s, now)
            if ScriptedRelay.holdsResume(drain(s)) { return now }
        }
        return nil
    }

    static let unknownSession = ScriptedRelay.datagram(.refused(code: .unknownSession, reason: "unknown session"))

    @Test("`unknown session` in answer to a resume ends the member's session as forgotten, not refused")
    func memberForgotten() throws {
        let s = welcomedMember()
        let resumedAt = try #require(Self.goQuiet(s, tick: { _ = $0.tick(now: $1) }, drain: { $0.drainOutgoing() }))
        #expect(s.state == .resuming)
        let events = Self.unknownSession.withUnsafeBytes { s.handle($0, from: ScriptedRelay.workerAddress, now: resumedAt + .nanoseconds(1)) }
        #expect(events == [.forgotten("unknown session")])
        #expect(s.state == .ended("unknown session"))
        #expect(s.tick(now: resumedAt + .nanoseconds(2)).isEmpty && s.drainOutgoing().isEmpty)
    }

    @Test("`unknown session` in answer to a resume ends a presence session as forgotten, its calls with it")
    func presenceForgotten() throws {
        let s = registeredPresence()
        let callID = try #require(s.call("bob", now: t0 + 2 * ScriptedRelay.ms))
        let resumedAt = try #require(Self.goQuiet(s, tick: { _ = $0.tick(now: $1) }, drain: { $0.drainOutgoing() }))
        let events = Self.unknownSession.withUnsafeBytes { s.handle($0, from: ScriptedRelay.publicAddress, now: resumedAt + .nanoseconds(1)) }
        #expect(events == [.forgotten("unknown session"),
                           .callStatus(callID: callID, state: .ended, reason: "connection lost", room: nil, token: nil)])
        #expect(s.state == .ended("unknown session"))
        #expect(s.calls.isEmpty)
    }

    @Test("`unknown session` while joined and not resuming is ignored; a refusal of the join itself stays final")
    func otherRefusals() {
        let s = welcomedMember()
        #expect(Self.unknownSession.withUnsafeBytes { s.handle($0, from: ScriptedRelay.workerAddress, now: t0 + 2 * ScriptedRelay.ms) }.isEmpty)
        #expect(s.state == .joined)

        let joining = ClientSession(server: ScriptedRelay.publicAddress, token: "t", room: "lobby", security: .cleartext, now: t0,
                                    unixMilliseconds: { ScriptedRelay.unixMilliseconds })
        _ = joining.tick(now: t0)
        let refused = ScriptedRelay.datagram(.refused(code: .tokenExpired, reason: "token expired"), connection: 0)
        #expect(refused.withUnsafeBytes { joining.handle($0, from: ScriptedRelay.publicAddress, now: t0 + .nanoseconds(1)) } == [.refused(.tokenExpired, "token expired")])
    }

    @Test("rejoin waits: 1 s, doubling to 30 s, and 1 s again after a welcome")
    func backoff() {
        var b = RejoinBackoff()
        let seconds = (0..<7).map { _ in b.take().wholeSeconds }
        #expect(seconds == [1, 2, 4, 8, 16, 30, 30])
        b.reset()
        #expect(b.take() == RejoinBackoff.first)
    }
}
