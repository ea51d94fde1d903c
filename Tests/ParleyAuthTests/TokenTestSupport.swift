import ParleyAuth

/// Fixed key material and helpers shared by the token tests.
enum Fixture {
    static let apiKey = "devkey"
    static let apiSecret = "devsecret-0123456789"
    static let signer = TokenSigner(apiKey: apiKey, apiSecret: apiSecret)
    static let verifier = TokenVerifier(keys: [apiKey: apiSecret])

    /// The claims behind `knownToken`.
    static let knownClaims = TokenClaims(identity: "alice", name: "Alice", room: "lobby", expiresAt: 2_000_000_000,
                                         issuedAt: 1_700_000_000)

    /// `knownClaims` minted with `apiKey`/`apiSecret`, computed independently of this module with:
    ///
    ///     python3 -c 'import hmac,hashlib,base64,json
    ///     b=lambda x: base64.urlsafe_b64encode(x).rstrip(b"=").decode()
    ///     j=lambda o: json.dumps(o,sort_keys=True,separators=(",",":")).encode()
    ///     h=j({"alg":"HS256","kid":"devkey","typ":"JWT"})
    ///     c=j({"sub":"alice","name":"Alice","room":"lobby","exp":2000000000,"iat":1700000000,
    ///          "grants":{"join":True,"publish":True,"subscribe":True,"admin":False,"create":True}})
    ///     si=b(h)+"."+b(c)
    ///     print(si+"."+b(hmac.new(b"devsecret-0123456789",si.encode(),hashlib.sha256).digest()))'
    ///
    /// i.e. header {"alg":"HS256","kid":"devkey","typ":"JWT"} and claims
    /// {"exp":2000000000,"grants":{"admin":false,"create":true,"join":true,"publish":true,"subscribe":true},
    ///  "iat":1700000000,"name":"Alice","room":"lobby","sub":"alice"}.
    static let knownToken =
        "eyJhbGciOiJIUzI1NiIsImtpZCI6ImRldmtleSIsInR5cCI6IkpXVCJ9"
        + ".eyJleHAiOjIwMDAwMDAwMDAsImdyYW50cyI6eyJhZG1pbiI6ZmFsc2UsImNyZWF0ZSI6dHJ1ZSwiam9pbiI6dHJ1ZSwicHVibGlzaCI6dHJ1ZSwic3Vic2NyaWJlIjp0cnVlfSwiaWF0IjoxNzAwMDAwMDAwLCJuYW1lIjoiQWxpY2UiLCJyb29tIjoibG9iYnkiLCJzdWIiOiJhbGljZSJ9"
        + "._z1ExzwZV2oq4cFmqQNDo4QUH0t5QkVzogjnuXmcO9I"

    /// A moment at which `knownToken` is valid.
    static let now: Int64 = 1_800_000_000

    static let standardHeader = #"{"alg":"HS256","kid":"devkey","typ":"JWT"}"#
    static let standardClaims = #"{"exp":2000000000,"grants":{"join":true},"sub":"alice"}"#

    /// A token made from raw JSON text, correctly signed with `secret`: for refusals beyond the signature.
    static func signRaw(header: String = standardHeader, claims: String = standardClaims,
                        secret: String = apiSecret) -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(Crypto.hmacSHA256(key: Array(secret.utf8), message: Array(input.utf8)))
    }

    /// `token` with the character at `offset` replaced by `replacement` (or by "B" if it already is `replacement`).
    static func flip(_ token: String, at offset: Int, to replacement: Character = "A") -> String {
        var characters = Array(token)
        characters[offset] = characters[offset] == replacement ? "B" : replacement
        return String(characters)
    }

    /// Offsets where each of the three parts starts and ends (exclusive).
    static func partRanges(_ token: String) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        for (offset, character) in token.enumerated() where character == "." {
            ranges.append(start..<offset)
            start = offset + 1
        }
        ranges.append(start..<token.count)
        return ranges
    }
}

/// Runs `body` and returns the `TokenError` it threw, or nil when it succeeded.
func tokenError(_ body: () throws(TokenError) -> TokenClaims) -> TokenError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}
