// libFuzzer target for token verification (Sources/ParleyAuth), two paths per input:
//  1. the input as a whole token string, verified as-is (almost always refused: must never crash);
//  2. the input as the claims JSON, minted with the dev key's header and a correct HMAC-SHA-256, so the
//     signature passes and the claims JSON decoding, name rules and time checks behind it get fuzzed.
// The room-and-grant check (`verify(_:now:room:requiring:grantName:)`) runs only on tokens that verified: on any other
// it is the same parse again, which would halve the executions per second for no new coverage.
//
// Compiled by Tests/Fuzz/run.sh together with Sources/ParleyAuth/*.swift into one module (no `import ParleyAuth`),
// with `-I Sources/CSodium` for the CSodium module map and `-lsodium`. Invariant violations trap through `precondition`.

private let devKey = "devkey"
private let devSecret = "parley-dev-secret-do-not-use-in-production"
private let now: Int64 = 1_800_000_000
private let verifier = TokenVerifier(keys: [devKey: devSecret])
private let signer = TokenSigner(apiKey: devKey, apiSecret: devSecret)
private let encodedHeader = Base64URL.encode(Array(#"{"alg":"HS256","kid":"devkey","typ":"JWT"}"#.utf8))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))

    // Path 1: the input is the token.
    let token = String(decoding: input, as: UTF8.self)
    let raw = verifier.verifyResult(token)
    check(raw)
    checkRoomAndGrant(token, raw, requiring: \.join, grantName: "join")

    // Path 2: the input is the claims JSON, correctly signed.
    let signingInput = encodedHeader + "." + Base64URL.encode(input)
    let signature = Crypto.hmacSHA256(key: Array(devSecret.utf8), message: Array(signingInput.utf8))
    let minted = signingInput + "." + Base64URL.encode(signature)
    let result = verifier.verifyResult(minted)
    check(result)
    if case .failure(.badSignature) = result { preconditionFailure("a correctly signed token failed its signature check") }
    if case .failure(.unknownKey) = result { preconditionFailure("the dev key was not found") }
    if case .failure(.unsupportedAlgorithm) = result { preconditionFailure("HS256 was refused") }
    checkRoomAndGrant(minted, result, requiring: \.publish, grantName: "publish")

    // Claims that verified re-mint (deterministic, sorted-key JSON) into a token that verifies to the same claims.
    if case .success(let claims) = result {
        let again = signer.mint(claims)
        precondition(signer.mint(claims) == again, "minting is not deterministic")
        switch verifier.verifyResult(again) {
        case .success(let back): precondition(back == claims, "claims changed through mint → verify")
        case .failure(let error): preconditionFailure("re-minted claims were refused: \(error)")
        }
    }
    return 0
}

private func check(_ result: Result<TokenClaims, TokenError>) {
    switch result {
    case .success(let claims):
        precondition(TokenNameRules.problem(with: claims.identity, field: "sub") == nil, "accepted a bad identity")
        if let room = claims.room { precondition(TokenNameRules.problem(with: room, field: "room") == nil, "accepted a bad room") }
        precondition(claims.expiresAt > now - verifier.leewaySeconds, "accepted an expired token")
        if let notBefore = claims.notBefore { precondition(notBefore <= now + verifier.leewaySeconds, "accepted a token before nbf") }
    case .failure(let error):
        precondition(!error.reason.isEmpty && error.code.hasPrefix("token_"), "error without a description")
    }
}

/// For a token that verified as `claims`: the room-and-grant variant accepts it exactly when its room claim admits to
/// "lobby" (the name, or a `prefix*` pattern; no claim only on an admin's token) and it has the grant, and refuses it
/// with the matching error otherwise.
private func checkRoomAndGrant(_ token: String, _ plain: Result<TokenClaims, TokenError>, requiring grant: KeyPath<Grants, Bool>,
                               grantName: String) {
    guard case .success(let claims) = plain else { return }
    let roomMatches = claims.room.map { TokenVerifier.roomClaim($0, admits: "lobby") } ?? claims.grants.admin
    switch Result(catching: { () throws(TokenError) in try verifier.verify(token, now: now, room: "lobby", requiring: grant, grantName: grantName) }) {
    case .success(let again): precondition(again == claims && roomMatches && claims.grants[keyPath: grant], "room or grant check let a token through")
    case .failure(.noRoom): precondition(claims.room == nil && !claims.grants.admin, "a token naming a room, or an admin's, refused as naming none")
    case .failure(.wrongRoom(let expected, let got)): precondition(!roomMatches && expected == "lobby" && got == claims.room, "wrong room refused wrongly")
    case .failure(.missingGrant(let name)): precondition(roomMatches && !claims.grants[keyPath: grant] && name == grantName, "grant refused wrongly")
    case .failure(let error): preconditionFailure("the room-and-grant check changed the verdict: \(error)")
    }
}

extension TokenVerifier {
    /// `verify(_:now:)` at the fixed `now`, as a `Result`.
    fileprivate func verifyResult(_ token: String) -> Result<TokenClaims, TokenError> {
        Result { () throws(TokenError) in try verify(token, now: now) }
    }
}
