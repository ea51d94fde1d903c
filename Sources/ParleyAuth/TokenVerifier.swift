/// Verifies tokens against the configured API keys, with constant-time signature comparison.
///
/// Order of checks: size, three parts, base64url of header and claims, header JSON, `alg` (so "none" is refused
/// as an algorithm whatever its signature), `kid`, signature (constant time; a wrong length is a bad signature),
/// and only then the claims JSON, name rules, `exp`, `nbf` and `relay_key`.
public struct TokenVerifier: Sendable {
    /// Longest token accepted, in bytes.
    public static let maximumTokenBytes = 4096

    private let secrets: [String: [UInt8]]
    /// Seconds of clock skew tolerated on `exp` and `nbf`.
    public let leewaySeconds: Int64
    /// This relay's public key (base64url): a token whose `relay_key` names another is refused (`wrongRelay`).
    /// Nil checks no `relay_key` (tools that verify tokens away from a relay).
    public let relayKey: String?

    /// A verifier for `keys` (apiKey -> apiSecret), tolerating `leewaySeconds` of clock skew, on the relay whose
    /// public key is `relayKey` (base64url).
    public init(keys: [String: String], leewaySeconds: Int64 = 5, relayKey: String? = nil) {
        precondition(leewaySeconds >= 0, "leeway must not be negative")
        self.secrets = keys.mapValues { Array($0.utf8) }
        self.leewaySeconds = leewaySeconds
        self.relayKey = relayKey
    }

    /// Checks structure, alg, kid, signature (constant time, before parsing claims JSON further than needed), exp, nbf.
    public func verify(_ token: String, now: Int64) throws(TokenError) -> TokenClaims {
        guard token.utf8.count <= Self.maximumTokenBytes else {
            throw .malformed("token is longer than \(Self.maximumTokenBytes) bytes")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("token does not have three dot-separated parts") }
        guard let headerBytes = Base64URL.decode(parts[0]), !headerBytes.isEmpty else {
            throw .malformed("header is not base64url")
        }
        guard let claimsBytes = Base64URL.decode(parts[1]), !claimsBytes.isEmpty else {
            throw .malformed("claims are not base64url")
        }

        let header: TokenHeader
        if let fast = TokenFastJSON.header(headerBytes) { header = fast } else {
            header = try TokenJSON.decode(TokenHeader.self, from: headerBytes, part: "header")
        }
        guard let alg = header.alg else { throw .malformed("header alg is missing") }
        guard alg == "HS256" else { throw .unsupportedAlgorithm(alg) }
        guard let kid = header.kid else { throw .malformed("header kid is missing") }
        guard let secret = secrets[kid] else { throw .unknownKey(kid) }
        guard let signature = Base64URL.decode(parts[2]) else { throw .malformed("signature is not base64url") }

        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let expected = Crypto.hmacSHA256(key: secret, message: signingInput)
        guard Crypto.constantTimeEqual(expected, signature) else { throw .badSignature }

        let claims: TokenClaims
        if let fast = TokenFastJSON.claims(claimsBytes) { claims = fast } else {
            claims = try TokenJSON.decode(TokenClaims.self, from: claimsBytes, part: "claims")
        }
        if let problem = TokenNameRules.problem(with: claims.identity, field: "sub") { throw .malformed(problem) }
        if let room = claims.room, let problem = TokenNameRules.problem(with: room, field: "room") {
            throw .malformed(problem)
        }
        // Saturating arithmetic: an exp near Int64.max must not wrap around into the past.
        guard now < Self.adding(claims.expiresAt, leewaySeconds) else { throw .expired }
        if let notBefore = claims.notBefore, now < Self.adding(notBefore, -leewaySeconds) { throw .notYetValid }
        if let named = claims.relayKey, let relayKey, named != relayKey { throw .wrongRelay }
        return claims
    }

    /// verify + room match + required grant. A token admits to the room its `room` claim names, or to the rooms a
    /// pattern there names (`team-*`: every room starting with `team-`); one without the claim admits to no room
    /// unless it is an admin's.
    public func verify(_ token: String, now: Int64, room: String, requiring grant: KeyPath<Grants, Bool>,
                       grantName: String) throws(TokenError) -> TokenClaims {
        let claims = try verify(token, now: now)
        try Self.check(claims, admitsTo: room, requiring: grant, grantName: grantName)
        return claims
    }

    /// The room-and-grant half of `verify(_:now:room:requiring:grantName:)`, on claims already verified: throws
    /// `noRoom`, `wrongRoom` or `missingGrant` as that does. For callers that verified the token first and check it
    /// against a room named later (the HTTP API's member routes).
    public static func check(_ claims: TokenClaims, admitsTo room: String, requiring grant: KeyPath<Grants, Bool>,
                             grantName: String) throws(TokenError) {
        switch claims.room {
        case nil: if !claims.grants.admin { throw .noRoom }
        case let pattern?: if !roomClaim(pattern, admits: room) { throw .wrongRoom(expected: room, got: pattern) }
        }
        guard claims.grants[keyPath: grant] else { throw .missingGrant(grantName) }
    }

    /// Whether a `room` claim admits to `room`: the same name, or a prefix followed by `*` (a lone `*` admits to none).
    public static func roomClaim(_ claim: String, admits room: String) -> Bool {
        guard claim.hasSuffix("*") else { return claim == room }
        let prefix = claim.dropLast()
        return !prefix.isEmpty && room.hasPrefix(prefix)
    }

    /// The configured API key ids, sorted.
    public var keyIDs: [String] { secrets.keys.sorted() }

    /// A signer for one of the configured keys (the relay mints call-room tokens with it); nil for an unknown key.
    public func signer(forKey kid: String) -> TokenSigner? {
        guard let secret = secrets[kid] else { return nil }
        // The secret came from a String's UTF-8, so decoding it gives that String back.
        return TokenSigner(apiKey: kid, apiSecret: String(decoding: secret, as: UTF8.self))
    }

    private static func adding(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : sum
    }
}
