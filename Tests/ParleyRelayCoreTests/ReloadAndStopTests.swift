import ParleyAuth
import ParleyWire
import Synchronization
import Testing

@testable import ParleyRelayCore

@Suite("A reload replaces keys and limits under live members; a stop refuses joins from its first moment")
struct ReloadAndStopTests {
    @Test("new keys: a token of the old key is refused, one of the new key joins; members already in stay")
    func replaceKeys() {
        let net = FakeNetwork()
        let alice = net.addClient("alice")
        net.joinAll()
        #expect(alice.session.state == .joined)
        let newSecret = "rotated-secret-0123456789abcdef"
        net.shared.replaceKeys(TokenVerifier(keys: ["devkey": newSecret]))
        let old = net.addClient("old")
        let new = net.addClient("new", token: net.token("new", secret: newSecret))
        net.joinAll()
        #expect(old.events.contains { if case .refused(.tokenBadSignature, _) = $0 { true } else { false } })
        #expect(new.session.state == .joined)
        #expect(alice.session.state == .joined)
        #expect(net.core.memberCount == 2)
        #expect(net.shared.callSigner != nil)
    }

    @Test("new limits apply to the next joins and rooms; the room's members stay")
    func reconfigure() {
        let net = FakeNetwork()
        net.addClient("a")
        net.addClient("b")
        net.joinAll()
        var tighter = net.core.config
        tighter.maxMembersPerRoom = 2
        tighter.maxRooms = 1
        #expect(net.core.reconfigure(tighter) == .ok)
        net.shared.replaceRoomLimits(tighter)
        let c = net.addClient("c")
        let d = net.addClient("d", room: "second")
        net.joinAll()
        #expect(c.events.contains { if case .refused(.roomFull, _) = $0 { true } else { false } })
        #expect(d.events.contains { if case .refused(.tooManyRooms, _) = $0 { true } else { false } })
        #expect(net.core.memberCount == 2)
    }

    @Test("stopping (SIGTERM): joins are refused as shutting down while the members in stay until told")
    func stopping() {
        let net = FakeNetwork()
        let alice = net.addClient("alice")
        net.joinAll()
        net.shared.stopping.store(true, ordering: .relaxed)
        let late = net.addClient("late")
        net.joinAll()
        #expect(late.events.contains { if case .refused(.shuttingDown, _) = $0 { true } else { false } })
        #expect(alice.session.state == .joined)
        #expect(net.core.memberCount == 1)
    }
}
