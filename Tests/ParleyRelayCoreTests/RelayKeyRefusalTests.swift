import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// Tokens that name a relay (`relay_key`): only that relay admits them, so a token cannot be replayed to another.
@Suite("A token naming another relay's key is refused: 18 token wrong relay, \"token is for another relay\"")
struct RelayKeyRefusalTests {
    /// This relay's public key, and another relay's (base64url, 32 bytes each).
    static let ours = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
    static let theirs = "HxwdHh8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo"

    @Test("a join with a token for another relay is refused after the cookie round trip, with the reason, in no more bytes than it sent",
          arguments: [1, 3])
    func joinRefused(workers: Int) throws {
        let net = FakeNetwork(workers: workers, relayKey: Self.ours)
        let eve = net.addClient("eve", token: net.token("eve", relayKey: Self.theirs))
        net.joinAll()
        guard case .refused(let code, let reason)? = eve.events.last else { Issue.record("not refused: \(eve.events)"); return }
        #expect(code == .tokenWrongRelay)
        #expect(code.rawValue == 18)
        #expect(reason.contains("token is for another relay"))
        #expect(eve.session.state == .ended(reason))
        #expect(net.cores.allSatisfy { $0.memberCount == 0 })
        #expect(net.cores.reduce(0) { $0 + ($1.counters.joinsRefused[RefusalCode.tokenWrongRelay.rawValue] ?? 0) } == 1)
        let refusal = try #require(eve.sentToRelay.last)
        #expect(net.sent.filter { $0.to == eve.address }.allSatisfy { $0.bytes.count <= refusal.count })
    }

    @Test("tokens naming this relay, or no relay, are admitted")
    func ownAndUnnamedAdmitted() {
        let net = FakeNetwork(relayKey: Self.ours)
        let alice = net.addClient("alice", token: net.token("alice", relayKey: Self.ours))
        let bob = net.addClient("bob")
        net.joinAll()
        #expect(alice.session.state == .joined)
        #expect(bob.session.state == .joined)
        #expect(net.core.memberCount == 2)
    }

    @Test("a relay started without a key checks no relay_key (as before)")
    func noRelayKeyNoCheck() {
        let net = FakeNetwork()
        let alice = net.addClient("alice", token: net.token("alice", relayKey: Self.theirs))
        net.joinAll()
        #expect(alice.session.state == .joined)
    }

    @Test("going online (register) with a token for another relay is refused the same way")
    func registerRefused() {
        let world = CallWorld(relayKey: Self.ours)
        let claims = TokenClaims(identity: "eve", room: nil, expiresAt: world.net.now.unixSeconds + 3600, relayKey: Self.theirs)
        let eve = world.addPresence("eve", token: TokenSigner(apiKey: "devkey", apiSecret: FakeNetwork.apiSecret).mint(claims))
        let alice = world.addPresence("alice")
        world.registerAll()
        #expect(eve.events.contains { if case .refused(.tokenWrongRelay, let why) = $0 { why.contains("token is for another relay") } else { false } })
        #expect(alice.session.state == .registered)
        #expect(world.core.presenceSnapshot().map(\.identity) == ["alice"])
    }
}

extension RelayKeyRefusalTests {
    @Test("the tokens of an answered call name this relay's key: they join here, and no other relay of the same API secret takes them")
    func callTokensNameTheRelay() throws {
        let world = CallWorld(relayKey: Self.ours)
        let alice = world.addPresence("alice"), bob = world.addPresence("bob")
        world.registerAll()
        let (aliceID, bobID) = try #require(world.ring(alice, bob))
        world.answer(bob, bobID)
        let a = try #require(alice.answered(aliceID))
        #expect(TokenClaims.unverified(a.token)?.relayKey == Self.ours)
        let media = world.net.addClient("alice", room: a.room, token: a.token)
        world.net.joinAll()
        #expect(media.session.state == .joined)
        let elsewhere = TokenVerifier(keys: ["devkey": FakeNetwork.apiSecret], relayKey: Self.theirs)
        #expect(throws: TokenError.wrongRelay) { try elsewhere.verify(a.token, now: world.net.now.unixSeconds) }
    }
}
