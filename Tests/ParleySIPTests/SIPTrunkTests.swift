import ParleySIP
import ParleyWire
import Testing

@Suite("SIP trunks: who may call in")
struct SIPTrunkTests {
    @Test func parsesEveryPart() throws {
        let text = "carrier=203.0.113.0/24;2001:db8::/32,outbound=203.0.113.5:5060,user=u1,password=p w"
        let trunk = try SIPTrunk.parse(text).get()
        #expect(trunk.name == "carrier")
        #expect(trunk.blocks.map(\.description) == ["203.0.113.0/24", "2001:db8::/32"])
        #expect(trunk.outbound == PeerAddress(ipv4: 203, 0, 113, 5, port: 5060))
        #expect(trunk.user == "u1" && trunk.password == "p w")
    }

    @Test func blocksMatchTheirAddressesOnly() throws {
        let trunks = SIPTrunks([try SIPTrunk.parse("a=10.1.0.0/16").get(), try SIPTrunk.parse("b=192.0.2.7").get(),
                                try SIPTrunk.parse("c=2001:db8::/32").get()])
        #expect(trunks.trunk(for: PeerAddress(ipv4: 10, 1, 200, 3, port: 5060))?.name == "a")
        #expect(trunks.trunk(for: PeerAddress(ipv4: 10, 2, 0, 1, port: 5060)) == nil)
        #expect(trunks.trunk(for: PeerAddress(ipv4: 192, 0, 2, 7, port: 1))?.name == "b")
        #expect(trunks.trunk(for: PeerAddress(ipv4: 192, 0, 2, 8, port: 1)) == nil)
        #expect(trunks.trunk(for: PeerAddress(parsing: "[2001:db8:1::5]:5060")!)?.name == "c")
        #expect(trunks.trunk(for: PeerAddress(parsing: "[2001:db9::5]:5060")!) == nil)
        // An IPv4 block never holds an IPv6 address that is not IPv4-mapped, and /0 holds every IPv4 address only.
        let any4 = try SIPTrunk.parse("any=0.0.0.0/0").get().blocks[0]
        #expect(any4.contains(PeerAddress(ipv4: 8, 8, 8, 8, port: 1)))
        #expect(!any4.contains(PeerAddress(parsing: "[2001:db8::1]:1")!))
    }

    @Test(arguments: [
        ("nobody", "a SIP trunk is NAME=CIDR[,outbound=HOST:PORT][,user=U,password=P]: nobody"),
        ("=10.0.0.0/8", "a SIP trunk's name is 1-64 letters, digits, '-' or '_': "),
        ("a b=10.0.0.0/8", "a SIP trunk's name is 1-64 letters, digits, '-' or '_': a b"),
        ("t=10.0.0.0/33", "trunk t: not an address block (a.b.c.d/n or v6/n): 10.0.0.0/33"),
        ("t=10.0.0.1/8", "trunk t: not an address block (a.b.c.d/n or v6/n): 10.0.0.1/8"),
        ("t=example.com", "trunk t: not an address block (a.b.c.d/n or v6/n): example.com"),
        ("t=10.0.0.0/8,outbound=example.com:5060",
         "trunk t: outbound is HOST:PORT with a numeric host: example.com:5060"),
        ("t=10.0.0.0/8,user=u", "trunk t: user and password go together"),
        ("t=10.0.0.0/8,secret=x", "trunk t: unknown option secret (outbound, user, password)"),
        ("t=10.0.0.0/8,password", "trunk t: expected KEY=VALUE, got password"),
    ])
    func refused(text: String, message: String) {
        guard case .failure(let error) = SIPTrunk.parse(text) else {
            Issue.record("accepted: \(text)")
            return
        }
        #expect(error.description == message)
    }
}
