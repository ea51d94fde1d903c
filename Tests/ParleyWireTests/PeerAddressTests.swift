import Testing
@testable import ParleyWire

@Suite("Peer addresses")
struct PeerAddressTests {
    @Test("HOST:PORT parses for IPv4, localhost and bracketed IPv6", arguments: [
        ("127.0.0.1:7400", "127.0.0.1:7400"), ("localhost:1", "127.0.0.1:1"), ("[::1]:7400", "[::1]:7400"),
        ("[2001:db8::5]:9", "[2001:db8::5]:9"), ("0.0.0.0:0", "0.0.0.0:0"), ("[::]:1", "[::]:1"),
        // RFC 5952: the longest zero run is "::" (the first of equal ones), a single zero group stays, no leading zeros.
        ("[2001:0db8:0:0:1:0:0:1]:2", "[2001:db8::1:0:0:1]:2"), ("[2001:db8:0:1:1:1:1:1]:3", "[2001:db8:0:1:1:1:1:1]:3"),
        ("[fe80:0:0:0:1:0:0:0]:4", "[fe80::1:0:0:0]:4"), ("[1:0:0:2:0:0:0:3]:5", "[1:0:0:2::3]:5"),
    ])
    func parses(text: String, expected: String) throws {
        #expect(try #require(PeerAddress(parsing: text)).description == expected)
    }

    @Test("wildcards, loopback, link-local; host and bare host as URLs and SDP write them")
    func kinds() throws {
        let v4 = try #require(PeerAddress(parsing: "0.0.0.0:7400")), v6 = try #require(PeerAddress(parsing: "[::]:7400"))
        #expect(v4.isWildcard && v6.isWildcard && !PeerAddress(ipv4: 10, 0, 0, 1, port: 1).isWildcard)
        #expect(try #require(PeerAddress(parsing: "[::1]:1")).isLoopback && !v6.isLoopback)
        #expect(PeerAddress(ipv4: 169, 254, 3, 4, port: 1).isLinkLocal && !PeerAddress(ipv4: 169, 253, 3, 4, port: 1).isLinkLocal)
        #expect(try #require(PeerAddress(parsing: "[fe80::1]:1")).isLinkLocal)
        #expect(try !#require(PeerAddress(parsing: "[2001:db8::1]:1")).isLinkLocal)
        let a = try #require(PeerAddress(parsing: "[2001:db8::5]:9"))
        #expect(a.host == "[2001:db8::5]" && a.bareHost == "2001:db8::5" && a.withPort(7).description == "[2001:db8::5]:7")
        #expect(PeerAddress(ipv4: 192, 0, 2, 1, port: 5).host == "192.0.2.1")
    }

    @Test("bad addresses are refused", arguments: ["", "127.0.0.1", "127.0.0.1:", "127.0.0.1:70000", "1.2.3:4", "256.1.1.1:5",
                                                   "[::1:5", "[::1]", "[1::2::3]:4", "host:-1"])
    func refuses(text: String) {
        #expect(PeerAddress(parsing: text) == nil)
    }
}
