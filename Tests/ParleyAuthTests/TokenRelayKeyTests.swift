import ParleyAuth
import Testing

/// The optional `relay_key` claim: the public key of the one relay a token is for (issue 15).
@Suite("Tokens naming a relay key: relay_key round trip, absent means the bytes of before, another relay refuses")
struct TokenRelayKeyTests {
    /// A relay key: the bytes 0…31 in base64url without padding.
    static let relayKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
    static let otherRelayKey = "HxwdHh8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo"

    /// `Fixture.knownClaims` with `relay_key`, minted independently of this module with the Python of
    /// `Fixture.knownToken` and `"relay_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"` added to the claims:
    /// {"exp":2000000000,"grants":{…},"iat":1700000000,"name":"Alice","relay_key":"AAEC…Hh8","room":"lobby","sub":"alice"}.
    static let knownTokenWithRelayKey =
        "eyJhbGciOiJIUzI1NiIsImtpZCI6ImRldmtleSIsInR5cCI6IkpXVCJ9"
        + ".eyJleHAiOjIwMDAwMDAwMDAsImdyYW50cyI6eyJhZG1pbiI6ZmFsc2UsImNyZWF0ZSI6dHJ1ZSwiam9pbiI6dHJ1ZSwicHVibGlzaCI6dHJ1ZSwic3Vic2NyaWJlIjp0cnVlfSwiaWF0IjoxNzAwMDAwMDAwLCJuYW1lIjoiQWxpY2UiLCJyZWxheV9rZXkiOiJBQUVDQXdRRkJnY0lDUW9MREEwT0R4QVJFaE1VRlJZWEdCa2FHeHdkSGg4Iiwicm9vbSI6ImxvYmJ5Iiwic3ViIjoiYWxpY2UifQ"
        + ".685r3LExqM1rxHp2tvxv24BfRCIU5ifKGx9lamunlfg"

    static var claimsWithRelayKey: TokenClaims {
        var c = Fixture.knownClaims
        c.relayKey = relayKey
        return c
    }

    @Test("relay_key is minted byte for byte as an independent implementation does, and read back")
    func roundTrip() throws {
        #expect(Fixture.signer.mint(Self.claimsWithRelayKey) == Self.knownTokenWithRelayKey)
        let claims = try Fixture.verifier.verify(Self.knownTokenWithRelayKey, now: Fixture.now)
        #expect(claims.relayKey == Self.relayKey)
        #expect(claims == Self.claimsWithRelayKey)
        #expect(TokenClaims.unverified(Self.knownTokenWithRelayKey)?.relayKey == Self.relayKey)
    }

    @Test("without relay_key a token encodes exactly as before the claim existed")
    func absentClaimKeepsTheBytes() throws {
        var claims = Fixture.knownClaims
        claims.relayKey = nil
        #expect(Fixture.signer.mint(claims) == Fixture.knownToken)
        #expect(try Fixture.verifier.verify(Fixture.knownToken, now: Fixture.now).relayKey == nil)
    }

    @Test("the relay named accepts the token; another relay refuses it as token_wrong_relay")
    func anotherRelayRefuses() throws {
        let mine = TokenVerifier(keys: [Fixture.apiKey: Fixture.apiSecret], relayKey: Self.relayKey)
        let other = TokenVerifier(keys: [Fixture.apiKey: Fixture.apiSecret], relayKey: Self.otherRelayKey)
        #expect(try mine.verify(Self.knownTokenWithRelayKey, now: Fixture.now).identity == "alice")
        #expect(throws: TokenError.wrongRelay) { try other.verify(Self.knownTokenWithRelayKey, now: Fixture.now) }
        #expect(throws: TokenError.wrongRelay) {
            try other.verify(Self.knownTokenWithRelayKey, now: Fixture.now, room: "lobby", requiring: \.join, grantName: "join")
        }
        #expect(TokenError.wrongRelay.code == "token_wrong_relay")
        #expect(TokenError.wrongRelay.reason.contains("token is for another relay"))
    }

    @Test("a token naming no relay is accepted by any relay; a verifier without a relay key checks no relay_key")
    func unnamedAndUnchecked() throws {
        let relay = TokenVerifier(keys: [Fixture.apiKey: Fixture.apiSecret], relayKey: Self.otherRelayKey)
        #expect(try relay.verify(Fixture.knownToken, now: Fixture.now).identity == "alice")
        #expect(try Fixture.verifier.verify(Self.knownTokenWithRelayKey, now: Fixture.now).relayKey == Self.relayKey)
    }

    @Test("the relay key is checked only after the signature: a forged relay_key is a bad signature, not a wrong relay")
    func signatureFirst() {
        let relay = TokenVerifier(keys: [Fixture.apiKey: Fixture.apiSecret], relayKey: Self.otherRelayKey)
        let forged = TokenSigner(apiKey: Fixture.apiKey, apiSecret: "not-the-secret-0123456789").mint(Self.claimsWithRelayKey)
        #expect(throws: TokenError.badSignature) { try relay.verify(forged, now: Fixture.now) }
    }
}
