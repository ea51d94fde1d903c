import Testing
import ParleyAuth

@Suite struct TokenTimeTests {
    /// exp = 1000. With leeway L the token is accepted while now < 1000 + L.
    @Test(arguments: [
        (Int64(0), Int64(999), true), (0, 1000, false), (0, 1001, false),
        (5, 1004, true), (5, 1005, false), (5, 999, true),
        (30, 1029, true), (30, 1030, false),
    ])
    func expiry(leeway: Int64, now: Int64, accepted: Bool) {
        let verifier = TokenVerifier(keys: [Fixture.apiKey: Fixture.apiSecret], leewaySeconds: leeway)
        let token = Fixture.signer.mint(TokenClaims(identity: "a", room: nil, expiresAt: 1000))
        #expect(tokenError { () throws(TokenError) in try verifier.verify(token, now: now) } == (accepted ? nil : .expired))
    }

    /// nbf = 1000. With leeway L the token is refused while now < 1000 - L.
    @Test(arguments: [
        (Int64(0), Int64(999), false), (0, 1000, true),
        (5, 994, false), (5, 995, true), (5, 1000, true),
        (30, 969, false), (30, 970, true),
    ])
    func notBefore(leeway: Int64, now: Int64, accepted: Bool) {
        let verifier = TokenVerifier(keys: [Fixture.apiKey: Fixture.apiSecret], leewaySeconds: leeway)
        let token = Fixture.signer.mint(TokenClaims(identity: "a", room: nil, expiresAt: 5000, notBefore: 1000))
        #expect(tokenError { () throws(TokenError) in try verifier.verify(token, now: now) } == (accepted ? nil : .notYetValid))
    }

    @Test func expiryAtTheEndOfTimeDoesNotWrap() throws {
        let token = Fixture.signer.mint(TokenClaims(identity: "a", room: nil, expiresAt: .max, notBefore: .min))
        #expect(try Fixture.verifier.verify(token, now: Fixture.now).expiresAt == .max)
    }
}

@Suite struct TokenSignatureTests {
    /// One flipped character in each part; the header flip (offset 51: "typ":"JWT" becomes "J@T") keeps the header
    /// valid JSON with the same alg and kid, so all three reach the signature check.
    @Test(arguments: [0, 1, 2])
    func flippedCharacterInEachPart(part: Int) {
        let ranges = Fixture.partRanges(Fixture.knownToken)
        let offset = part == 0 ? 51 : (ranges[part].lowerBound + ranges[part].upperBound) / 2
        let token = Fixture.flip(Fixture.knownToken, at: offset)
        #expect(token != Fixture.knownToken)
        #expect(tokenError { () throws(TokenError) in try Fixture.verifier.verify(token, now: Fixture.now) } == .badSignature)
    }

    @Test func everySingleCharacterFlipIsRefused() {
        for (offset, character) in Fixture.knownToken.enumerated() where character != "." {
            let token = Fixture.flip(Fixture.knownToken, at: offset)
            #expect(tokenError { () throws(TokenError) in try Fixture.verifier.verify(token, now: Fixture.now) } != nil,
                    "flip at \(offset) was accepted")
        }
    }

    @Test func signedWithAnotherSecret() {
        let token = Fixture.signRaw(secret: "not-the-secret")
        #expect(tokenError { () throws(TokenError) in try Fixture.verifier.verify(token, now: Fixture.now) } == .badSignature)
    }

    @Test func truncatedAndEmptySignatures() {
        let parts = Fixture.knownToken.split(separator: ".")
        for signature in ["", String(parts[2].dropLast(3))] {
            let token = parts[0] + "." + parts[1] + "." + signature
            #expect(tokenError { () throws(TokenError) in try Fixture.verifier.verify(token, now: Fixture.now) } == .badSignature)
        }
    }
}

@Suite struct TokenHeaderTests {
    @Test(arguments: ["none", "HS512", "RS256", "hs256", ""])
    func unsupportedAlgorithm(_ alg: String) {
        for signature in ["", "c2ln"] {
            let parts = Fixture.signRaw(header: #"{"alg":"\#(alg)","kid":"devkey","typ":"JWT"}"#).split(separator: ".")
            let token = parts[0] + "." + parts[1] + "." + signature
            #expect(tokenError { () throws(TokenError) in try Fixture.verifier.verify(token, now: Fixture.now) }
                    == .unsupportedAlgorithm(alg))
        }
    }

    @Test func unknownKey() {
        let token = TokenSigner(apiKey: "other", apiSecret: Fixture.apiSecret).mint(Fixture.knownClaims)
        #expect(tokenError { () throws(TokenError) in try Fixture.verifier.verify(token, now: Fixture.now) } == .unknownKey("other"))
    }
}

@Suite struct TokenRoomAndGrantTests {
    @Test func wrongRoom() {
        let error = tokenError { () throws(TokenError) in
            try Fixture.verifier.verify(Fixture.knownToken, now: Fixture.now, room: "kitchen", requiring: \.join, grantName: "join")
        }
        #expect(error == .wrongRoom(expected: "kitchen", got: "lobby"))
    }

    @Test func missingGrant() {
        let error = tokenError { () throws(TokenError) in
            try Fixture.verifier.verify(Fixture.knownToken, now: Fixture.now, room: "lobby", requiring: \.admin, grantName: "admin")
        }
        #expect(error == .missingGrant("admin"))
    }

    @Test func grantsAbsentFromJSONAreNotGranted() {
        let token = Fixture.signRaw(claims: #"{"exp":2000000000,"grants":{"join":true},"room":"lobby","sub":"e"}"#)
        let error = tokenError { () throws(TokenError) in
            try Fixture.verifier.verify(token, now: Fixture.now, room: "lobby", requiring: \.publish, grantName: "publish")
        }
        #expect(error == .missingGrant("publish"))
    }

    @Test func expiryIsCheckedBeforeRoom() {
        let error = tokenError { () throws(TokenError) in
            try Fixture.verifier.verify(Fixture.knownToken, now: 2_000_000_100, room: "kitchen", requiring: \.join, grantName: "join")
        }
        #expect(error == .expired)
    }
}

@Suite struct TokenMalformedTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let token: String
        let detail: String
    }

    static let parts = Fixture.knownToken.split(separator: ".").map(String.init)
    static func claimsWith(_ claims: String) -> String { Fixture.signRaw(claims: claims) }
    static func minted(identity: String = "a", name: String? = nil, room: String? = nil) -> String {
        Fixture.signer.mint(TokenClaims(identity: identity, name: name, room: room, expiresAt: 2_000_000_000))
    }

    static let cases: [Case] = [
        Case(testDescription: "empty string", token: "", detail: "token does not have three dot-separated parts"),
        Case(testDescription: "two parts", token: parts[0] + "." + parts[1],
             detail: "token does not have three dot-separated parts"),
        Case(testDescription: "four parts", token: Fixture.knownToken + ".AAAA",
             detail: "token does not have three dot-separated parts"),
        Case(testDescription: "bad base64 in header", token: "*" + parts[0].dropFirst() + "." + parts[1] + "." + parts[2],
             detail: "header is not base64url"),
        Case(testDescription: "bad base64 in claims", token: parts[0] + "." + parts[1] + "=." + parts[2],
             detail: "claims are not base64url"),
        Case(testDescription: "bad base64 in signature", token: parts[0] + "." + parts[1] + "." + parts[2] + "=",
             detail: "signature is not base64url"),
        Case(testDescription: "header not JSON", token: Fixture.signRaw(header: "HS256 devkey"),
             detail: "the header part is not valid JSON"),
        Case(testDescription: "header a JSON array", token: Fixture.signRaw(header: #"["HS256"]"#),
             detail: "the header part is not a JSON object"),
        Case(testDescription: "header without alg", token: Fixture.signRaw(header: #"{"kid":"devkey"}"#),
             detail: "header alg is missing"),
        Case(testDescription: "header alg a number", token: Fixture.signRaw(header: #"{"alg":256,"kid":"devkey"}"#),
             detail: "alg has the wrong type"),
        Case(testDescription: "header without kid", token: Fixture.signRaw(header: #"{"alg":"HS256"}"#),
             detail: "header kid is missing"),
        Case(testDescription: "claims not JSON", token: claimsWith(#"{"sub":"a","exp":"#),
             detail: "the claims part is not valid JSON"),
        Case(testDescription: "exp wrong type", token: claimsWith(#"{"exp":"soon","sub":"a"}"#),
             detail: "exp has the wrong type"),
        Case(testDescription: "exp fractional", token: claimsWith(#"{"exp":2000000000.5,"sub":"a"}"#),
             detail: "exp has the wrong type"),
        Case(testDescription: "exp out of range", token: claimsWith(#"{"exp":1e30,"sub":"a"}"#),
             detail: "exp has the wrong type"),
        Case(testDescription: "exp null", token: claimsWith(#"{"exp":null,"sub":"a"}"#), detail: "exp is missing"),
        Case(testDescription: "nbf wrong type", token: claimsWith(#"{"exp":2000000000,"nbf":true,"sub":"a"}"#),
             detail: "nbf has the wrong type"),
        Case(testDescription: "grant wrong type", token: claimsWith(#"{"exp":2000000000,"grants":{"join":"yes"},"sub":"a"}"#),
             detail: "grants.join has the wrong type"),
        Case(testDescription: "missing sub", token: claimsWith(#"{"exp":2000000000}"#), detail: "sub is missing"),
        Case(testDescription: "missing exp", token: claimsWith(#"{"sub":"a"}"#), detail: "exp is missing"),
        Case(testDescription: "sub wrong type", token: claimsWith(#"{"exp":2000000000,"sub":7}"#),
             detail: "sub has the wrong type"),
        Case(testDescription: "oversize token", token: minted(name: String(repeating: "n", count: 4000)),
             detail: "token is longer than 4096 bytes"),
        Case(testDescription: "identity with control character", token: minted(identity: "ali\u{7}ce"),
             detail: "sub contains a control character"),
        Case(testDescription: "identity with DEL", token: minted(identity: "alice\u{7F}"),
             detail: "sub contains a control character"),
        Case(testDescription: "identity with newline", token: minted(identity: "alice\n"),
             detail: "sub contains a control character"),
        Case(testDescription: "empty identity", token: minted(identity: ""), detail: "sub is empty"),
        Case(testDescription: "identity of 129 bytes", token: minted(identity: String(repeating: "x", count: 129)),
             detail: "sub is longer than 128 bytes"),
        Case(testDescription: "room with control character", token: minted(room: "lob\u{0}by"),
             detail: "room contains a control character"),
        Case(testDescription: "empty room", token: minted(room: ""), detail: "room is empty"),
    ]

    @Test(arguments: cases)
    func refusedAsMalformed(_ example: Case) {
        #expect(tokenError { () throws(TokenError) in try Fixture.verifier.verify(example.token, now: Fixture.now) }
                == .malformed(example.detail))
    }

    @Test func oversizeTokenIsJustOverTheLimit() {
        // The boundary itself: the longest token of at most 4096 bytes passes, the next longer one does not.
        // (Base64 grows in steps, so exactly 4096 may not be reachable.)
        var nameLength = (4096 - Self.minted(name: "").utf8.count) * 3 / 4 - 8
        while Self.minted(name: String(repeating: "n", count: nameLength + 1)).utf8.count <= 4096 { nameLength += 1 }
        let fitting = Self.minted(name: String(repeating: "n", count: nameLength))
        let over = Self.minted(name: String(repeating: "n", count: nameLength + 1))
        #expect(fitting.utf8.count > 4090 && fitting.utf8.count <= 4096 && over.utf8.count > 4096)
        #expect(tokenError { () throws(TokenError) in try Fixture.verifier.verify(fitting, now: Fixture.now) } == nil)
        #expect(tokenError { () throws(TokenError) in try Fixture.verifier.verify(over, now: Fixture.now) }
                == .malformed("token is longer than 4096 bytes"))
    }
}

@Suite struct TokenErrorTextTests {
    static let everyKind: [TokenError] = [
        .malformed("sub is missing"), .unsupportedAlgorithm("none"), .unknownKey("other"), .badSignature, .expired,
        .notYetValid, .wrongRoom(expected: "kitchen", got: "lobby"), .missingGrant("join"),
    ]

    @Test func reasonsAreNonEmptyAndDistinct() {
        let reasons = Self.everyKind.map(\.reason)
        #expect(reasons.allSatisfy { !$0.isEmpty })
        #expect(Set(reasons).count == reasons.count)
    }

    @Test func codesAreStableAndDistinct() {
        #expect(Self.everyKind.map(\.code) == [
            "token_malformed", "token_unsupported_algorithm", "token_unknown_key", "token_bad_signature",
            "token_expired", "token_not_yet_valid", "token_wrong_room", "token_missing_grant",
        ])
    }

    @Test func malformedReasonNamesTheField() {
        #expect(TokenError.malformed("exp has the wrong type").reason.contains("exp"))
    }
}
