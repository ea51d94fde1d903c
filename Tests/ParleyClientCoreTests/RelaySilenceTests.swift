// A relay that stops answering (killed with kill -9, a cable pulled): the engine says so within 5 s, keeps trying,
// and says when the relay answers again. Manual clock, scripted relay.
import ParleyClientCore
import ParleyWire
import Testing

@Suite("The relay stops answering: said within 5 s, retried, and its return said")
struct RelaySilenceTests {
    static let ms = EngineHarness.ms

    /// Ticks every 100 ms until `until` (exclusive of the start), answering each ping with a pong when `answering`.
    static func run(_ h: EngineHarness, until end: Instant, answering: Bool) {
        while h.now < end {
            h.advance(to: h.now + 100 * ms)
            h.tick()
            let pinged = h.outbox.take().contains { if case .ping = $0.signal { true } else { false } }
            if answering, pinged { h.deliver(ScriptedRelay.datagram(.pong(timestamp: 0))) }
        }
    }

    static func silences(_ events: [ClientEngine.Event]) -> [Interval] {
        events.compactMap { if case .relaySilent(let quiet) = $0 { quiet } else { nil } }
    }

    @Test("a relay that answers its pings is never called silent, over a minute of a quiet room")
    func answeringRelay() throws {
        let h = try ClientEngineTests.joined()
        Self.run(h, until: h.now + 60_000 * Self.ms, answering: true)
        #expect(Self.silences(h.events).isEmpty)
        #expect(h.engine.relaySilence(now: h.now) == nil)
    }

    @Test("killed relay: silent said once, within 5 s of its last word; the session retries, and the return is said once it welcomes us")
    func killedRelay() throws {
        let h = try ClientEngineTests.joined()
        let lastWord = h.now  // the welcome
        Self.run(h, until: lastWord + 5_000 * Self.ms, answering: false)
        let said = Self.silences(h.events)
        #expect(said.count == 1)
        #expect(said.allSatisfy { $0 <= 5_000 * Self.ms && $0 > 3_000 * Self.ms }, "\(said)")
        #expect(h.engine.relayWatch.silentSince == lastWord)
        #expect(h.engine.relaySilence(now: h.now) == h.now - lastWord)
        // The engine keeps at it: the session gives up (timeout + 5 s) and joins afresh, silent still, said once.
        Self.run(h, until: lastWord + 30_000 * Self.ms, answering: false)
        #expect(Self.silences(h.events).count == 1)
        #expect(h.events.contains { if case .connectionLost = $0 { true } else { false } })
        #expect(h.sessionsOpened >= 2)
        #expect(h.engine.relaySilence(now: h.now) == h.now - lastWord)
        // The relay is back: whichever session is joining now is welcomed, and the silence is over.
        if case .waitingToRejoin(let until) = h.engine.phase { h.advance(to: until); h.tick() }
        let before = h.events.count
        h.welcome()
        #expect(h.events[before...].contains(.relayBack(after: h.now - lastWord)))
        #expect(h.engine.relayWatch.silentSince == nil && h.engine.inRoom)
    }

    @Test("a resume answered (a new address, the same relay) ends the silence with `relayBack`")
    func resumed() throws {
        let h = try ClientEngineTests.joined()
        let lastWord = h.now
        Self.run(h, until: lastWord + 5_000 * Self.ms, answering: false)
        #expect(Self.silences(h.events).count == 1)
        let resumed = ScriptedRelay.datagram(.resumed, sequence: 2)  // reliable: the next after the welcome (1)
        let events = h.deliver(resumed)
        #expect(events.contains(.relayBack(after: h.now - lastWord)), "\(events)")
        #expect(h.engine.relaySilence(now: h.now) == nil)
        // A later silence is said again.
        Self.run(h, until: h.now + 5_000 * Self.ms, answering: false)
        #expect(Self.silences(h.events).count == 2)
    }
}

@Suite("An online identity's relay stops answering: said once, and its return said")
struct PresenceRelaySilenceTests {
    static let ms = ScriptedRelay.ms

    @Test("silent within 5 s of the relay's last word; back when a resume is accepted")
    func presence() throws {
        // The engine registers at its first tick; the welcome answers that register's nonce.
        var outgoing: [[UInt8]] = []
        let capture = PresenceEngine(server: ScriptedRelay.publicAddress, token: { "t" }, security: .cleartext, now: t0,
                                     unixMilliseconds: { ScriptedRelay.unixMilliseconds }, random: SeededRandomNumberGenerator(seed: 3),
                                     transmit: { bytes, _ in outgoing.append(Array(bytes)) })
        _ = capture.tick(now: t0)
        let welcome = ScriptedRelay.welcome(answering: outgoing, port: ScriptedRelay.publicAddress.port, room: "")
        let lastWord = t0 + 1 * Self.ms
        _ = welcome.withUnsafeBytes { capture.receive($0, from: ScriptedRelay.publicAddress, now: lastWord) }
        #expect(capture.session.state == .registered)
        #expect(capture.takeRelayChanges().isEmpty)
        var changes: [RelaySilenceWatch.Change] = []
        var now = lastWord
        while now < lastWord + 5_000 * Self.ms {
            now = now + 100 * Self.ms
            _ = capture.tick(now: now)
            changes += capture.takeRelayChanges()
        }
        #expect(changes.count == 1)
        guard case .silent(let quiet) = changes.first else { Issue.record("\(changes)"); return }
        #expect(quiet <= 5_000 * Self.ms && quiet > 3_000 * Self.ms)
        let resumed = ScriptedRelay.datagram(.resumed, sequence: 2)
        _ = resumed.withUnsafeBytes { capture.receive($0, from: ScriptedRelay.publicAddress, now: now) }
        #expect(capture.takeRelayChanges() == [.back(after: now - lastWord)])
        #expect(capture.relayWatch.silentSince == nil)
    }
}
