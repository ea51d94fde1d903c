import Testing
@testable import ParleyWire

@Suite("Peer addresses")
struct PeerAddressTests {
    @Test("HOST:PORT parses for IPv4, localhost and bracketed IPv6", arguments: [
        ("127.0.0.1:7400", "127.0.0.1:7400"), ("localhost:1", "127.0.0.1:1"), ("[::1]:7400", "[0:0:0:0:0:0:0:1]:7400"),
        ("[2001:db8::5]:9", "[2001:db8:0:0:0:0:0:5]:9"), ("0.0.0.0:0", "0.0.0.0:0"),
    ])
    func parses(text: String, expected: String) throws {
        #expect(try #require(PeerAddress(parsing: text)).description == expected)
    }

    @Test("bad addresses are refused", arguments: ["", "127.0.0.1", "127.0.0.1:", "127.0.0.1:70000", "1.2.3:4", "256.1.1.1:5",
                                                   "[::1:5", "[::1]", "[1::2::3]:4", "host:-1"])
    func refuses(text: String) {
        #expect(PeerAddress(parsing: text) == nil)
    }
}
