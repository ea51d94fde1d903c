/// Mints HS256 JWTs: header {"alg":"HS256","typ":"JWT","kid":apiKey}, claims as sorted-key JSON.
public struct TokenSigner: Sendable {
    /// The API key id written into every header's `kid`.
    public let apiKey: String
    private let secret: [UInt8]
    private let encodedHeader: String

    /// A signer for one API key and its secret (used as the HMAC key, UTF-8 encoded).
    public init(apiKey: String, apiSecret: String) {
        self.apiKey = apiKey
        self.secret = Array(apiSecret.utf8)
        self.encodedHeader = Base64URL.encode(TokenJSON.encode(TokenHeader(alg: "HS256", kid: apiKey, typ: "JWT")))
    }

    /// The compact JWS `header.claims.signature`; deterministic for equal claims.
    public func mint(_ claims: TokenClaims) -> String {
        let signingInput = encodedHeader + "." + Base64URL.encode(TokenJSON.encode(claims))
        let signature = Crypto.hmacSHA256(key: secret, message: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// A key for another use of the same secret (`purpose` names it; each purpose gets an unrelated key): HMAC-SHA256
    /// of the purpose under the API secret. The SIP gateway's digest credentials are keyed by one.
    public func derivedKey(purpose: String) -> [UInt8] {
        Crypto.hmacSHA256(key: secret, message: Array(("parley derived key: " + purpose).utf8))
    }
}
