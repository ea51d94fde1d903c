import Testing
@testable import ParleyWebRTC

/// The TURN REST credential (draft-uberti-behave-turn-rest-00, coturn's `use-auth-secret`) against values computed
/// outside Swift, and the `RTCIceServer` entries a member gets.
@Suite("TURN credentials: username EXPIRY:IDENTITY, password base64(HMAC-SHA1(secret, username))")
struct TURNCredentialTests {
    static let secret = Array("parley-turn-shared-secret-0123".utf8)

    @Test("RFC 2202 §3 test case 2: HMAC-SHA1(\"Jefe\", \"what do ya want for nothing?\")")
    func hmacSHA1Vector() {
        let tag = HMACSHA1.tag(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(tag == [0xEF, 0xFC, 0xDF, 0x6A, 0xE5, 0xEB, 0x2F, 0xA2, 0xD2, 0x74,
                        0x16, 0xD5, 0xF1, 0x84, 0xDF, 0x9C, 0x25, 0x9A, 0x7C, 0x79])
    }

    @Test("known vectors, each computed with openssl", arguments: [
        // printf '%s' '1700003600:ann' \
        //     | openssl dgst -sha1 -hmac 'parley-turn-shared-secret-0123' -binary | base64
        ("ann", Int64(1_700_003_600), "1700003600:ann", "NKCeKIsXblmaEroV/93zhvOGrFc="),
        // printf '%s' '1700086400:Ann%20Lee%3A1%2F%C3%BC' \
        //     | openssl dgst -sha1 -hmac 'parley-turn-shared-secret-0123' -binary | base64
        ("Ann Lee:1/ü", Int64(1_700_086_400), "1700086400:Ann%20Lee%3A1%2F%C3%BC", "FnR1woAqt/Pr5H3dASGIMDzLzAQ="),
    ])
    func knownVectors(identity: String, expiresAt: Int64, username: String, password: String) {
        let credential = TURNCredential(secret: Self.secret, identity: identity, expiresAt: expiresAt)
        #expect(credential.username == username)
        #expect(credential.password == password)
        #expect(credential.expiresAt == expiresAt)
    }

    @Test("another secret, another password; the same inputs, the same credential")
    func dependsOnTheSecret() {
        let a = TURNCredential(secret: Self.secret, identity: "ann", expiresAt: 1_700_003_600)
        let b = TURNCredential(secret: Array("another-shared-secret-4567".utf8), identity: "ann",
                               expiresAt: 1_700_003_600)
        #expect(a.username == b.username && a.password != b.password)
        #expect(a == TURNCredential(secret: Self.secret, identity: "ann", expiresAt: 1_700_003_600))
    }

    @Test("base64 with padding, as coturn compares it", arguments: [
        ([UInt8](), ""), ([0x66], "Zg=="), ([0x66, 0x6F], "Zm8="), ([0x66, 0x6F, 0x6F], "Zm9v"), ([0xFB, 0xFF], "+/8="),
    ])
    func base64(bytes: [UInt8], text: String) {
        #expect(TURNCredential.base64(bytes) == text)
    }

    @Test("""
          the identity is percent-encoded to plain ASCII: one colon in the username, no quote, backslash or control \
          character
          """,
          arguments: ["a\"b", "a\\b", "line\r\nbreak", "x:y:z", "Zoë", "名前", "ok-name_1.2~@host"])
    func usernameIsPlainASCII(identity: String) {
        let username = TURNCredential(secret: Self.secret, identity: identity, expiresAt: 42).username
        #expect(username.hasPrefix("42:"))
        #expect(username.filter { $0 == ":" }.count == 1, "\(username)")
        #expect(username.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 0x21 && $0 != "\"" && $0 != "\\" },
                "\(username)")
        if identity == "ok-name_1.2~@host" { #expect(username == "42:ok-name_1.2~@host") }
    }

    @Test("a long identity is cut at maxIdentityBytes before a character that does not fit whole")
    func longIdentity() {
        let identity = String(repeating: "\u{E9}", count: 300)  // é: 600 bytes of UTF-8, 1800 encoded
        let username = TURNCredential(secret: Self.secret, identity: identity, expiresAt: 42).username
        let encoded = username.dropFirst("42:".count)
        #expect(encoded.utf8.count == 396)  // 66 × "%C3%A9": a 67th would make 402
        #expect(encoded.hasSuffix("%C3%A9"))
    }

    // MARK: The list a member gets

    static let urls = ["stun:stun.example.net", "turn:198.51.100.10:3478?transport=udp",
                       "turns:turn.example.net:5349?transport=tcp"]
        .map { try! ICEServerURL(parsing: $0) }

    @Test("""
          STUN URLs in one entry without credentials, TURN URLs in one with a credential for the identity expiring at \
          now + lifetime
          """)
    func servers() {
        let servers = ICEServers(urls: Self.urls, secret: "parley-turn-shared-secret-0123", lifetime: 600)
        let list = servers.servers(for: "ann", now: 1_700_003_000)
        #expect(list == [
            ICEServer(urls: ["stun:stun.example.net"], username: nil, credential: nil),
            ICEServer(urls: ["turn:198.51.100.10:3478?transport=udp", "turns:turn.example.net:5349?transport=tcp"],
                      username: "1700003600:ann", credential: "NKCeKIsXblmaEroV/93zhvOGrFc="),
        ])
    }

    @Test("nothing configured: an empty list; STUN alone: no credential")
    func emptyAndSTUNOnly() throws {
        #expect(ICEServers().servers(for: "ann", now: 0).isEmpty)
        #expect(ICEServers().isEmpty && !ICEServers().hasSecret && ICEServers().lifetime == 3600)
        let stun = ICEServers(urls: [try ICEServerURL(parsing: "stun:198.51.100.10")], secret: nil)
        #expect(stun.servers(for: "ann", now: 0)
                == [ICEServer(urls: ["stun:198.51.100.10"], username: nil, credential: nil)])
    }

    @Test("the secret shows nowhere: description, debugDescription, dump")
    func secretNotShown() {
        let servers = ICEServers(urls: Self.urls, secret: "parley-turn-shared-secret-0123", lifetime: 600)
        var dumped = ""
        dump(servers, to: &dumped)
        let texts = [servers.description, servers.debugDescription, String(describing: servers),
                     String(reflecting: servers), dumped]
        for text in texts {
            #expect(!text.contains("parley-turn-shared-secret"), "\(text)")
            // "parley" as bytes, as String(describing:) of a [UInt8] prints them.
            #expect(!text.contains("112, 97, 114, 108, 101, 121"), "the secret's bytes in \(text)")
        }
        #expect(servers.description.contains("not shown"))
        #expect(servers.description.contains("turn:198.51.100.10:3478?transport=udp"))
    }
}

@Suite("ICE server URLs: stun:, turn:, turns: (RFC 7064, RFC 7065)")
struct ICEServerURLTests {
    @Test("good URLs parse into their parts and print back as given", arguments: [
        ("stun:stun.example.net", ICEServerURL.Scheme.stun, "stun.example.net", nil as UInt16?,
         nil as ICEServerURL.Transport?),
        ("stun:198.51.100.10:3478", .stun, "198.51.100.10", 3478, nil),
        ("turn:198.51.100.10:3478?transport=udp", .turn, "198.51.100.10", 3478, .udp),
        ("turn:turn.example.net?transport=tcp", .turn, "turn.example.net", nil, .tcp),
        ("turns:turn.example.net:5349?transport=tcp", .turns, "turn.example.net", 5349, .tcp),
        ("turn:[2001:db8::1]:3478", .turn, "[2001:db8::1]", 3478, nil),
        ("turn:[::ffff:192.0.2.1]", .turn, "[::ffff:192.0.2.1]", nil, nil),
        ("turn:localhost", .turn, "localhost", nil, nil),
    ])
    func parses(text: String, scheme: ICEServerURL.Scheme, host: String, port: UInt16?,
                transport: ICEServerURL.Transport?) throws {
        let url = try ICEServerURL(parsing: text)
        #expect(url.scheme == scheme && url.host == host && url.port == port && url.transport == transport)
        #expect(url.text == text && url.description == text)
    }

    @Test("the scheme and the transport are lowercased")
    func lowercased() throws {
        let url = try ICEServerURL(parsing: "TURN:h.example:3478?transport=UDP")
        #expect(url.text == "turn:h.example:3478?transport=udp")
    }

    @Test("bad URLs are refused with a sentence that says why", arguments: [
        ("", "1–512 bytes"),
        ("turn.example.net:3478", "scheme"),
        ("http://turn.example.net", "scheme"),
        ("turn://turn.example.net:3478", "no //"),
        ("turn:", "no host"),
        ("turn::3478", "no host"),
        ("turn:host:0", "port"),
        ("turn:host:65536", "port"),
        ("turn:host:34x", "port"),
        ("turn:host:3478?transport=sctp", "?transport=udp"),
        ("turn:host:3478?foo=bar", "?transport=udp"),
        ("stun:host:3478?transport=udp", "stun: URL takes no query"),
        ("turn:[2001:db8::1", "closing ]"),
        ("turn:[2001:db8::1]3478", "only :PORT"),
        ("turn:[not:v6]", "not an IPv6 address"),
        ("turn:[1:2:3:4:5:6:7:8:9]", "not an IPv6 address"),
        ("turn:256.1.1.1", "not an IPv4 address"),
        ("turn:1.2.3", "not an IPv4 address"),
        ("turn:under_score.example", "not an IPv4 address"),
        ("turn:-lead.example", "not an IPv4 address"),
        ("turn:a b", "not an IPv4 address"),
        ("turn:user@host", "not an IPv4 address"),
        ("turn:host/path", "not an IPv4 address"),
    ])
    func refused(text: String, why: String) {
        let error = #expect(throws: WebRTCError.self) { try ICEServerURL(parsing: text) }
        #expect(error?.code == "bad_ice_server_url")
        #expect(error?.reason.contains(why) == true, "\(error?.reason ?? "")")
    }
}
