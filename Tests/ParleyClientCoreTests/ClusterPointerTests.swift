// Issue 33, finding 1: where a cluster sends a member (a refusal `roomElsewhere`, a goodbye `moved`, a welcome's
// alternates) comes with the target node's relay key, and the member insists on that key there; a pointer without a
// usable key is never followed (the token would go to whoever answers at that address).
import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing

@Suite("Cluster pointers: a member goes to another node only with its key, and insists on it there")
struct ClusterPointerTests {
    static let nodeB = PeerAddress(ipv4: 10, 0, 0, 2, port: 7410)
    static let keyB = "hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHo"
    static let pointerB = "10.0.0.2:7410 \(keyB)"

    /// An engine that sent its join to the scripted relay; nothing answered yet.
    static func joining() throws -> EngineHarness {
        let h = try EngineHarness()
        h.tick()
        return h
    }

    static func refusal(_ reason: String) -> [UInt8] {
        ScriptedRelay.datagram(.refused(code: .roomElsewhere, reason: reason), connection: 0)
    }

    @Test("a redirect names the node and its key: the engine joins there at once, insisting on that key")
    func redirectPinsTheKey() throws {
        let h = try Self.joining()
        #expect(h.engine.serverKey == nil)  // the relay it was given: no key configured
        h.deliver(Self.refusal(Self.pointerB), from: ScriptedRelay.publicAddress)
        #expect(h.events.contains(.redirected(Self.nodeB)))
        #expect(h.engine.server == Self.nodeB)
        #expect(h.engine.serverKey == Base64URL.decode(Substring(Self.keyB)))
        #expect(h.outbox.take().contains { $0.to == Self.nodeB && $0.signal.map { if case .join = $0 { true } else { false } } == true })
        #expect(h.engine.phase == .inSession)
    }

    @Test("a redirect without a usable key is not followed: the member stops with a clear reason and sends that address nothing",
          arguments: ["10.0.0.2:7410", "10.0.0.2:7410 short", "10.0.0.2:7410 \(keyB) extra", "10.0.0.2 \(keyB)", "nonsense", "",
                      "10.0.0.2:7410 hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHp"])  // last: 2 bits over, not canonical
    func redirectWithoutKey(reason: String) throws {
        let h = try Self.joining()
        h.deliver(Self.refusal(reason), from: ScriptedRelay.publicAddress)
        guard case .over(.refused(.roomElsewhere, let why)) = h.engine.phase else {
            Issue.record("still going: \(h.engine.phase)")
            return
        }
        #expect(why.contains("without its relay key") && why.contains("not followed"), "\(why)")
        h.advance(to: .seconds(10))
        h.tick()
        #expect(!h.outbox.everything.contains { $0.to.ipv4Value == Self.nodeB.ipv4Value })
        #expect(h.engine.server == ScriptedRelay.publicAddress)
    }

    @Test("a drained member moves to the node the goodbye names, insisting on its key; a goodbye `moved` without a key ends the stay")
    func movedPinsTheKey() throws {
        let h = try Self.joining()
        h.welcome()
        h.deliver(ScriptedRelay.datagram(.goodbye(code: .moved, reason: Self.pointerB)), from: ScriptedRelay.workerAddress)
        #expect(h.events.contains(.moving(Self.nodeB, from: ScriptedRelay.publicAddress)))
        #expect(h.engine.server == Self.nodeB && h.engine.serverKey == Base64URL.decode(Substring(Self.keyB)))

        let bare = try Self.joining()
        bare.welcome()
        bare.deliver(ScriptedRelay.datagram(.goodbye(code: .moved, reason: "10.0.0.2:7410")), from: ScriptedRelay.workerAddress)
        guard case .over(.removed(.moved, let why)) = bare.engine.phase else {
            Issue.record("still going: \(bare.engine.phase)")
            return
        }
        #expect(why.contains("not followed"))
        #expect(bare.engine.server == ScriptedRelay.publicAddress)
    }

    @Test("a welcome's alternates keep their keys (one without is dropped); a lost node's member fails over insisting on the next one's key")
    func failoverPinsTheKey() throws {
        let h = try Self.joining()
        let joins = h.outbox.everything.map(\.bytes).filter { if case .join = (try? SignalDatagram(parsing: $0))?.message { true } else { false } }
        let nonce: [UInt8] = joins.last.flatMap { b -> [UInt8]? in
            if case .join(let j) = (try? SignalDatagram(parsing: b))?.message { return j.nonce }
            return nil
        } ?? []
        let welcome = Welcome(nonce: nonce, memberID: 7, ssrc: 0x1234_5678, port: ScriptedRelay.workerAddress.port,
                              sessionSecret: Array(repeating: 0x5A, count: 32), room: "lobby", mode: "forward", identity: "alice", memberCount: 0,
                              keepaliveMilliseconds: 5000, timeoutMilliseconds: 15000, flags: MemberFlags(rawValue: 6),
                              alternates: ["10.0.0.3:7420", Self.pointerB])
        h.deliver(ScriptedRelay.datagram(.welcome(welcome), sequence: 1), from: ScriptedRelay.publicAddress)
        #expect(h.engine.alternates.map(\.description) == [Self.pointerB])
        // The relay falls silent: the member rejoins through the alternate, with its key.
        var t = Interval.zero
        while t < .seconds(8), !h.events.contains(.failingOver(to: Self.nodeB)) {
            t = t + .milliseconds(100)
            h.advance(to: t)
            h.tick()
        }
        #expect(h.events.contains(.failingOver(to: Self.nodeB)))
        #expect(h.engine.server == Self.nodeB && h.engine.serverKey == Base64URL.decode(Substring(Self.keyB)))
    }
}
