import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// A member token admits to the rooms it names, never to all, and one identity opens a bounded number of rooms:
/// before, a token without a `room` claim (what `parley listen` and `parley call` mint) joined or created any room,
/// and one such token filled `max_rooms` in 0.3 s.
@Suite("Room claims: a token admits to the rooms it names; room creation is limited per identity")
struct RoomClaimTests {
    @Test("room claims: exact names, prefix patterns, and never all", arguments: [
        ("lobby", "lobby", true),
        ("lobby", "lobby2", false),
        ("team-*", "team-a", true),
        ("team-*", "team-", true),
        ("team-*", "tea", false),
        ("team-*", "other", false),
        ("*", "anything", false),   // a lone star names no room
        ("team-a", "team-*", false),
    ])
    func claims(claim: String, room: String, admits: Bool) {
        #expect(TokenVerifier.roomClaim(claim, admits: room) == admits)
    }

    @Test("the attack: a member token without a room claim joins nothing; an admin's still goes anywhere")
    func noRoomClaimAdmitsNowhere() throws {
        let net = FakeNetwork()
        let signer = TokenSigner(apiKey: "devkey", apiSecret: FakeNetwork.apiSecret)
        func token(_ identity: String, room: String?, admin: Bool = false) -> String {
            signer.mint(TokenClaims(identity: identity, room: room, expiresAt: net.now.unixSeconds + 3600,
                                    grants: Grants(admin: admin)))
        }
        let mallory = net.addClient("mallory", room: "lobby", token: token("mallory", room: nil))
        let ops = net.addClient("ops", room: "lobby", token: token("ops", room: nil, admin: true))
        net.joinAll()
        #expect(mallory.events.contains { if case .refused(.tokenWrongRoom, let why) = $0 { why.contains("names no room") } else { false } },
                "\(mallory.events)")
        #expect(ops.session.state == .joined)
        #expect(net.core.snapshot().flatMap(\.members).map(\.identity) == ["ops"])
    }

    @Test("a pattern token opens rooms up to max_rooms_per_identity; others still can; a closed room frees a place")
    func roomsPerIdentity() throws {
        var config = RelayCoreConfig()
        config.maxRoomsPerIdentity = 3
        let net = FakeNetwork(config: config)
        let signer = TokenSigner(apiKey: "devkey", apiSecret: FakeNetwork.apiSecret)
        let pattern = signer.mint(TokenClaims(identity: "mallory", room: "flood-*", expiresAt: net.now.unixSeconds + 3600))
        var clients: [FakeClient] = []
        for k in 0..<5 {
            clients.append(net.addClient("mallory", room: "flood-\(k)", token: pattern))
            net.joinAll()
        }
        #expect(clients.prefix(3).allSatisfy { $0.session.state == .joined })
        for c in clients.suffix(2) {
            #expect(c.events.contains { if case .refused(.tooManyRooms, _) = $0 { true } else { false } }, "\(c.events)")
        }
        #expect(net.core.snapshot().count == 3)
        // Another identity is not limited by mallory's rooms.
        let alice = net.addClient("alice", room: "flood-9", token: signer.mint(TokenClaims(identity: "alice", room: "flood-9",
                                                                                           expiresAt: net.now.unixSeconds + 3600)))
        net.joinAll()
        #expect(alice.session.state == .joined)
        // Mallory's first room closes (its only member leaves and the empty room times out): one more may open.
        clients[0].session.leave(now: net.instant)
        net.exchange()
        net.advance(milliseconds: (config.emptyRoomTimeout + .seconds(1)).milliseconds, stepMilliseconds: 500)
        let again = net.addClient("mallory", room: "flood-7", token: pattern)
        net.joinAll()
        #expect(again.session.state == .joined)
    }
}
