import Testing
import ParleyAuth

@Suite struct Base64URLTests {
    /// RFC 4648 §10 vectors (unpadded), plus bytes that need the URL-safe characters '-' and '_'.
    static let vectors: [(String, String)] = [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ]

    @Test(arguments: vectors)
    func rfc4648Vectors(_ plain: String, _ encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(Substring(encoded)) == Array(plain.utf8))
    }

    @Test func urlSafeAlphabet() {
        // 0xfb 0xff 0xbf is "+/+/" in standard base64.
        #expect(Base64URL.encode([0xfb, 0xff, 0xbf]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xfb, 0xff, 0xbf])
    }

    @Test func roundTripsEveryLength() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("="))
            #expect(Base64URL.decode(Substring(text)) == bytes, "length \(length)")
        }
        let random = Crypto.randomBytes(257)
        #expect(Base64URL.decode(Substring(Base64URL.encode(random))) == random)
    }

    @Test(arguments: [
        "Zg==",       // padding
        "Zm8=",       // padding
        "Zm9v ",      // trailing whitespace
        " Zm9v",      // leading whitespace
        "Zm\n9v",     // newline
        "Zm9+",       // standard-alphabet '+'
        "Zm9/",       // standard-alphabet '/'
        "Zm9*",       // not base64 at all
        "Zm9vY",      // 4n+1 characters cannot occur
        "Zh",         // non-zero unused bits (canonical form is "Zg")
        "Zm9",        // non-zero unused bits (canonical form is "Zm8")
        "Zm9vé",      // non-ASCII
    ])
    func rejects(_ text: String) {
        #expect(Base64URL.decode(Substring(text)) == nil)
    }

    @Test func decodesASubstringOfALargerString() {
        let token = "aaa.Zm9vYmFy.bbb"
        let middle = token.split(separator: ".")[1]
        #expect(Base64URL.decode(middle) == Array("foobar".utf8))
    }
}
