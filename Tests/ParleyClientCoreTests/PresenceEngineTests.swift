// `parley listen`'s way back online, on a manual clock against a scripted relay: when the owner looks at an ending,
// a mendable one registers afresh after the backoff (1 s, doubling; 1 s again after a welcome), a refusal or a
// removal is final.
import ParleyClientCore
import ParleyWire
import Testing

@Suite("Presence engine: registering again")
struct PresenceEngineTests {
    static let ms = ScriptedRelay.ms

    /// A registered engine at t = 1 ms (presence lives on the public port), its outbox emptied.
    static func online() -> (PresenceEngine, Outbox, TokenCounter) {
        let outbox = Outbox(), tokens = TokenCounter()
        let engine = PresenceEngine(server: ScriptedRelay.publicAddress, token: { tokens.next() }, security: .cleartext, now: t0,
                                    unixMilliseconds: { ScriptedRelay.unixMilliseconds }, random: SeededRandomNumberGenerator(seed: 3),
                                    transmit: { bytes, to in outbox.sent.append((outbox.now, Transmitted(bytes: Array(bytes), to: to))) })
        _ = engine.tick(now: t0)
        register(engine, outbox, at: t0 + 1 * ms)
        return (engine, outbox, tokens)
    }

    /// Answers the last register with a welcome.
    static func register(_ engine: PresenceEngine, _ outbox: Outbox, at now: Instant) {
        let registers = outbox.everything.map(\.bytes).filter { if case .register = (try? SignalDatagram(parsing: $0))?.message { true } else { false } }
        let welcome = ScriptedRelay.welcome(answering: registers.suffix(1), port: ScriptedRelay.publicAddress.port, room: "")
        _ = welcome.withUnsafeBytes { engine.receive($0, from: ScriptedRelay.publicAddress, now: now) }
        _ = outbox.take()
    }

    static func deliver(_ message: SignalMessage, to engine: PresenceEngine, at now: Instant) -> [PresenceSession.Event] {
        ScriptedRelay.datagram(message).withUnsafeBytes { engine.receive($0, from: ScriptedRelay.publicAddress, now: now) }
    }

    @Test("a relay that shuts down: registering again after 1 s with a fresh token, then 2 s if that fails too")
    func registersAgain() throws {
        let (engine, outbox, tokens) = Self.online()
        #expect(engine.session.state == .registered && engine.renewal(now: t0 + 2 * Self.ms) == nil)
        _ = Self.deliver(.goodbye(code: .relayShutdown, reason: "shutting down"), to: engine, at: t0 + 2 * Self.ms)
        #expect(engine.ending == .goodbye(.relayShutdown, "shutting down"))
        // The owner looks later (after a call, say): the wait starts then.
        #expect(engine.renewal(now: t0 + 500 * Self.ms) == .registerAgain(reason: "shutting down", after: 1_000 * Self.ms))
        #expect(engine.renewal(now: t0 + 501 * Self.ms) == nil, "scheduled once")
        #expect(engine.tick(now: t0 + 1_499 * Self.ms).isEmpty && outbox.take().isEmpty && tokens.count == 1)
        _ = engine.tick(now: t0 + 1_500 * Self.ms)
        let sent = outbox.take()
        guard case .register(let r) = sent.first?.signal else { Issue.record("no register: \(sent)"); return }
        #expect(r.token == "t2" && tokens.count == 2 && engine.ending == nil)
        // Unanswered: the new session gives up after its tries, and the next wait is 2 s.
        var now = t0 + 1_500 * Self.ms
        while engine.ending == nil && now < t0 + 20_000 * Self.ms {
            now += 100 * Self.ms
            _ = engine.tick(now: now)
        }
        #expect(engine.ending == .ended("no answer from the relay at \(ScriptedRelay.publicAddress)"))
        #expect(engine.renewal(now: now) == .registerAgain(reason: "no answer from the relay at \(ScriptedRelay.publicAddress)",
                                                          after: 2_000 * Self.ms))
        // A welcome resets the wait to 1 s.
        _ = engine.tick(now: now + 2_000 * Self.ms)
        Self.register(engine, outbox, at: now + 2_001 * Self.ms)
        #expect(engine.session.state == .registered)
        _ = Self.deliver(.goodbye(code: .timedOut, reason: "timed out"), to: engine, at: now + 2_002 * Self.ms)
        #expect(engine.renewal(now: now + 2_003 * Self.ms) == .registerAgain(reason: "timed out", after: 1_000 * Self.ms))
    }

    @Test("a goodbye other than a shutdown or a time-out is final", arguments: [
        (SignalMessage.goodbye(code: .replaced, reason: "registered elsewhere"), PresenceEngine.Renewal.removed(.replaced, "registered elsewhere")),
        (.goodbye(code: .kicked, reason: "bye"), .removed(.kicked, "bye")),
    ])
    func finalEndings(message: SignalMessage, renewal: PresenceEngine.Renewal) {
        let (engine, outbox, tokens) = Self.online()
        _ = Self.deliver(message, to: engine, at: t0 + 2 * Self.ms)
        #expect(engine.renewal(now: t0 + 3 * Self.ms) == renewal)
        #expect(engine.tick(now: t0 + 60_000 * Self.ms).isEmpty && outbox.take().isEmpty && tokens.count == 1)
    }

    @Test("a refused registration is final")
    func refused() {
        let outbox = Outbox()
        let engine = PresenceEngine(server: ScriptedRelay.publicAddress, token: { "t" }, security: .cleartext, now: t0,
                                    unixMilliseconds: { ScriptedRelay.unixMilliseconds }, random: SeededRandomNumberGenerator(seed: 4),
                                    transmit: { bytes, to in outbox.sent.append((outbox.now, Transmitted(bytes: Array(bytes), to: to))) })
        _ = engine.tick(now: t0)
        let events = ScriptedRelay.datagram(.refused(code: .tokenExpired, reason: "token expired"), connection: 0)
            .withUnsafeBytes { engine.receive($0, from: ScriptedRelay.publicAddress, now: t0 + 1 * Self.ms) }
        #expect(events == [.refused(.tokenExpired, "token expired")])
        #expect(engine.renewal(now: t0 + 2 * Self.ms) == .refused(.tokenExpired, "token expired"))
    }
}
