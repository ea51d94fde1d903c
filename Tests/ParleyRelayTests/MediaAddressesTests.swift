import ParleyRelay
import ParleyWire
import Testing

/// Which of its addresses the relay tells a client: announced, bound, or the host's interfaces on a wildcard.
@Suite("Media addresses: announced, bound, or the interfaces of a wildcard; the client's family first")
struct MediaAddressesTests {
    static func a(_ text: String) -> PeerAddress { PeerAddress(parsing: text)! }
    static let interfaces = [a("127.0.0.1:0"), a("10.77.0.2:0"), a("169.254.1.1:0"), a("[::1]:0"), a("[fe80::1]:0"),
                             a("[2001:db8::2]:0"), a("192.0.2.9:0")]
    static let publicClient = a("198.51.100.20:5000"), v6Client = a("[2001:db8::99]:5000")

    @Test("announced addresses are told as given, whatever the bind, the client's family first")
    func announced() throws {
        let list = try #require(MediaAddresses.parseAnnounced("198.51.100.10, 2001:db8::10"))
        let media = MediaAddresses(announced: list, bound: Self.a("0.0.0.0:7400"), interfaces: Self.interfaces)
        #expect(media.hosts(for: Self.publicClient) == [Self.a("198.51.100.10:0"), Self.a("[2001:db8::10]:0")])
        #expect(media.hosts(for: Self.v6Client) == [Self.a("[2001:db8::10]:0"), Self.a("198.51.100.10:0")])
        #expect(media.hosts(for: nil) == [Self.a("198.51.100.10:0"), Self.a("[2001:db8::10]:0")])
    }

    @Test("announce: bad lists are refused; brackets are optional; empty is none",
          arguments: ["1.2.3", "0.0.0.0", "::", "host.example", "10.0.0.1:80", "[::1"])
    func parsing(bad: String) {
        #expect(MediaAddresses.parseAnnounced(bad) == nil)
        #expect(MediaAddresses.parseAnnounced("") == [])
        #expect(MediaAddresses.parseAnnounced("[2001:db8::1],::1") == [Self.a("[2001:db8::1]:0"), Self.a("[::1]:0")])
    }

    @Test("bound to one address: that address, for everyone")
    func bound() {
        let media = MediaAddresses(bound: Self.a("10.77.0.2:7400"), interfaces: Self.interfaces)
        #expect(media.hosts(for: Self.publicClient) == [Self.a("10.77.0.2:0")])
        #expect(media.hosts(for: Self.a("127.0.0.1:9")) == [Self.a("10.77.0.2:0")])
    }

    @Test("an IPv4 wildcard: the IPv4 interfaces without loopback and link-local; loopback first for a loopback client")
    func wildcardIPv4() {
        let media = MediaAddresses(bound: Self.a("0.0.0.0:7400"), interfaces: Self.interfaces)
        #expect(media.hosts(for: Self.publicClient) == [Self.a("10.77.0.2:0"), Self.a("192.0.2.9:0")])
        #expect(media.hosts(for: Self.a("127.0.0.1:9")) == [Self.a("127.0.0.1:0"), Self.a("10.77.0.2:0"), Self.a("192.0.2.9:0")])
        #expect(!media.hosts(for: nil).contains { $0.isWildcard || $0.isLoopback })
    }

    @Test("the IPv6 wildcard is dual stack: both families, the client's first, ::1 for an IPv6 loopback client")
    func wildcardIPv6() {
        let media = MediaAddresses(bound: Self.a("[::]:7400"), interfaces: Self.interfaces)
        #expect(media.hosts(for: Self.v6Client) == [Self.a("[2001:db8::2]:0"), Self.a("10.77.0.2:0"), Self.a("192.0.2.9:0")])
        #expect(media.hosts(for: Self.publicClient) == [Self.a("10.77.0.2:0"), Self.a("192.0.2.9:0"), Self.a("[2001:db8::2]:0")])
        #expect(media.hosts(for: Self.a("[::1]:9")).first == Self.a("[::1]:0"))
    }

    @Test("a host with nothing but loopback still answers loopback, never a wildcard")
    func onlyLoopback() {
        let media = MediaAddresses(bound: Self.a("0.0.0.0:7400"), interfaces: [Self.a("127.0.0.1:0")])
        #expect(media.hosts(for: Self.publicClient) == [Self.a("127.0.0.1:0")])
    }
}
