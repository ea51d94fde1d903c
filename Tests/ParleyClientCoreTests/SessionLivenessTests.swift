// Both kinds of client session are one `SignallingSession` underneath, so they give up the same ways. This suite
// would have caught the drift issue 13 found: the member's session never looked at `ReliableChannel.failed`.
import ParleyClientCore
import ParleyWire
import Testing

@Suite("A session whose reliable messages are never acknowledged gives up")
struct SessionLivenessTests {
    static let ms = ScriptedRelay.ms

    /// Keeps the relay audible (a pong every 100 ms, acknowledging nothing) while a reliable message goes
    /// unacknowledged; returns when the session ended, or nil after two minutes.
    static func outlast(tick: (Instant) -> Void, hear: (Instant) -> Void, ended: () -> Bool) -> Instant? {
        for step in 1...1_200 {
            let now = t0 + Int64(step) * 100 * ms
            hear(now)
            tick(now)
            if ended() { return now }
        }
        return nil
    }

    static let pong = ScriptedRelay.datagram(.pong(timestamp: 0))

    @Test("a member's session ends once the relay never acknowledges a reliable message, though it keeps answering")
    func member() throws {
        let s = welcomedMember()
        s.setMuted(true, now: t0 + 2 * Self.ms)
        let endedAt = try #require(Self.outlast(
            tick: { _ = s.tick(now: $0); _ = s.drainOutgoing() },
            hear: { now in _ = Self.pong.withUnsafeBytes { s.handle($0, from: ScriptedRelay.workerAddress, now: now) } },
            ended: { if case .ended = s.state { true } else { false } }))
        #expect(s.state == .ended("lost contact with the relay"))
        #expect(s.retransmissions == ReliableChannel.Limits().maxAttempts - 1)  // every attempt after the first
        #expect(endedAt < t0 + 60_000 * Self.ms)
    }

    @Test("a presence session ends the same way, its calls with it")
    func presence() throws {
        let s = registeredPresence()
        let call = try #require(s.call("bob", now: t0 + 2 * Self.ms))
        var events: [PresenceSession.Event] = []
        _ = try #require(Self.outlast(
            tick: { events += s.tick(now: $0); _ = s.drainOutgoing() },
            hear: { now in _ = Self.pong.withUnsafeBytes { s.handle($0, from: ScriptedRelay.publicAddress, now: now) } },
            ended: { if case .ended = s.state { true } else { false } }))
        #expect(s.state == .ended("lost contact with the relay"))
        #expect(events.suffix(2) == [.ended("lost contact with the relay"),
                                     .callStatus(callID: call, state: .ended, reason: "connection lost", room: nil, token: nil)])
    }
}
