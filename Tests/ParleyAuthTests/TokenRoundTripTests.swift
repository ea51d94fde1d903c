import Testing
import ParleyAuth

@Suite struct TokenRoundTripTests {
    @Test func mintsTheKnownTokenByteForByte() {
        #expect(Fixture.signer.mint(Fixture.knownClaims) == Fixture.knownToken)
    }

    @Test func verifiesTheKnownToken() throws {
        let claims = try Fixture.verifier.verify(Fixture.knownToken, now: Fixture.now)
        #expect(claims == Fixture.knownClaims)
    }

    @Test func mintThenVerifyKeepsEveryClaim() throws {
        let claims = TokenClaims(identity: "bob@example.org", name: "Bob Ø", room: "studio/1", expiresAt: 1_000_100,
                                 notBefore: 999_000, issuedAt: 999_000,
                                 grants: Grants(join: true, publish: false, subscribe: true, admin: true, create: false),
                                 mode: "mix")
        let token = Fixture.signer.mint(claims)
        #expect(try Fixture.verifier.verify(token, now: 1_000_000) == claims)
        #expect(Fixture.signer.mint(claims) == token, "minting is deterministic")
    }

    @Test func adminTokenWithoutRoomJoinsAnyRoom() throws {
        let claims = TokenClaims(identity: "ops", room: nil, expiresAt: 2_000_000_000, grants: Grants(admin: true))
        let token = Fixture.signer.mint(claims)
        let verified = try Fixture.verifier.verify(token, now: Fixture.now, room: "anything", requiring: \.admin,
                                                   grantName: "admin")
        #expect(verified.room == nil)
    }

    @Test func roomAndGrantCheckPasses() throws {
        let claims = try Fixture.verifier.verify(Fixture.knownToken, now: Fixture.now, room: "lobby",
                                                 requiring: \.publish, grantName: "publish")
        #expect(claims.identity == "alice")
    }

    @Test func verifierAcceptsEveryConfiguredKey() throws {
        let verifier = TokenVerifier(keys: ["old": "old-secret", "new": "new-secret"])
        let claims = TokenClaims(identity: "carol", room: "r", expiresAt: 2_000_000_000)
        for (key, secret) in [("old", "old-secret"), ("new", "new-secret")] {
            let token = TokenSigner(apiKey: key, apiSecret: secret).mint(claims)
            #expect(try verifier.verify(token, now: Fixture.now) == claims)
        }
    }

    @Test func missingGrantsObjectMeansNoGrants() throws {
        let token = Fixture.signRaw(claims: #"{"exp":2000000000,"sub":"dave"}"#)
        let claims = try Fixture.verifier.verify(token, now: Fixture.now)
        #expect(claims.grants == .empty)
        #expect(claims.room == nil && claims.name == nil && claims.notBefore == nil && claims.mode == nil)
    }

    @Test func nameRulesAcceptTheLimits() throws {
        let identity = String(repeating: "é", count: 64)   // 128 UTF-8 bytes
        let token = Fixture.signer.mint(TokenClaims(identity: identity, room: String(repeating: "r", count: 128),
                                                    expiresAt: 2_000_000_000))
        #expect(try Fixture.verifier.verify(token, now: Fixture.now).identity == identity)
    }
}
