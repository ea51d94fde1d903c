import Foundation
import ParleyWire
import Testing
@testable import ParleyAuth

/// The fast path for token JSON never disagrees with `JSONDecoder`: where it answers, the decoder gives the same
/// value; where it declines (nil), the decoder's result and message stand.
@Suite("Token JSON fast path agrees with JSONDecoder")
struct TokenFastJSONTests {
    static func decoded(_ json: [UInt8]) -> TokenClaims? {
        try? JSONDecoder().decode(TokenClaims.self, from: Data(json))
    }

    static let table: [String] = [
        #"{"sub":"alice","exp":1800000000}"#,
        #"{"sub":"alice","exp":1800000000,"grants":{"join":true,"publish":false}}"#,
        #"{ "sub" : "bob" , "exp" : -5 , "nbf": 0, "iat": 12, "room": "lobby", "name": "Bob", "mode": "mix", "call": true, "jti": "x", "relay_key": "k", "e2ee": false }"#,
        #"{"sub":"ålice","exp":1,"extra":42,"other":"s","flag":true}"#,
        #"{"sub":"a","exp":1.5}"#, #"{"sub":"a","exp":1e3}"#, #"{"sub":"a","exp":01}"#, #"{"sub":"a","exp":9223372036854775808}"#,
        #"{"sub":"a\u0062","exp":1}"#, #"{"sub":"a","exp":1,"sub":"b"}"#, #"{"sub":null,"exp":1}"#, #"{"sub":"a","exp":1,"grants":null}"#,
        #"{"sub":"a","exp":1,"grants":{"join":"yes"}}"#, #"{"sub":"a","exp":1,"x":[1,2]}"#, #"{"exp":1}"#, #"{"sub":1,"exp":1}"#,
        #"["sub"]"#, #"{"sub":"a","exp":1}x"#, #"{"sub":"a","exp":1,}"#, #"{"sub":"a" "exp":1}"#, "{}", "",
        #"{"sub":"a","exp":-9223372036854775808}"#, #"{"sub":"a","exp":1,"grants":{"join":true,"nested":{"a":1}}}"#,
    ]

    @Test("a table of valid, odd and broken claims: wherever the fast path answers, JSONDecoder agrees", arguments: table)
    func agreesOnTable(json: String) {
        let bytes = Array(json.utf8)
        if let fast = TokenFastJSON.claims(bytes) {
            #expect(Self.decoded(bytes) == fast, "\(json)")
        }
    }

    @Test("the common shapes take the fast path")
    func commonShapesAreFast() {
        let minted = TokenSigner(apiKey: "k", apiSecret: "a-secret-of-enough-length").mint(
            TokenClaims(identity: "alice", name: "Alice", room: "lobby", expiresAt: 1_800_000_000, issuedAt: 1_700_000_000,
                        grants: Grants(), mode: "forward", tokenID: "abc", relayKey: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"))
        let parts = minted.split(separator: ".")
        let header = Base64URL.decode(parts[0])!, claims = Base64URL.decode(parts[1])!
        #expect(TokenFastJSON.header(header) == (try? JSONDecoder().decode(TokenHeader.self, from: Data(header))))
        #expect(TokenFastJSON.claims(claims) != nil)
        #expect(TokenFastJSON.claims(claims) == Self.decoded(claims))
    }

    @Test("seeded mutations of a claims object never make the two disagree")
    func agreesOnMutations() {
        let base = Array(#"{"sub":"alice","exp":1800000000,"nbf":1700000000,"room":"lobby","grants":{"join":true,"publish":true},"mode":"mix"}"#.utf8)
        var random = SeededRandomNumberGenerator(seed: 15)
        let alphabet = Array(#"{}[]":,.-+eE0123456789 tfnul\"abcé"#.utf8)
        var answered = 0
        for _ in 0..<20_000 {
            var bytes = base
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let at = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[at] = alphabet.randomElement(using: &random)!
                case 1: bytes.insert(alphabet.randomElement(using: &random)!, at: at)
                default: if bytes.count > 1 { bytes.remove(at: at) }
                }
            }
            if let fast = TokenFastJSON.claims(bytes) {
                answered += 1
                #expect(Self.decoded(bytes) == fast, "\(String(decoding: bytes, as: UTF8.self))")
            }
        }
        #expect(answered > 100)
    }
}
