import ParleyRelay
import ParleyWire
import Testing

/// The TCP bridge's rules apart from its sockets: connection limits, the loopback source, where frames may go, and the
/// ICE-TCP routes by ufrag.
@Suite("TCP bridge rules: limits per address and in all, loopback sources, worker ports only, ICE-TCP routes that expire")
struct TCPBridgeRulesTests {
    static func a(_ text: String) -> PeerAddress { PeerAddress(parsing: text)! }

    @Test("per address (IPv4, or IPv6 /64) and in all; a released place is taken again")
    func limits() {
        var rules = TCPBridgeRules()
        rules.connectionsPerAddress = 2
        rules.maxConnections = 3
        var count = TCPConnectionCount()
        func take(_ count: inout TCPConnectionCount, _ address: String) -> Bool { count.take(Self.a(address), rules: rules) }
        let first = take(&count, "198.51.100.20:1"), second = take(&count, "198.51.100.20:2")
        let third = take(&count, "198.51.100.20:3")
        #expect(first && second && !third, "a third from one address")
        let other = take(&count, "[2001:db8::1]:1"), pastTotal = take(&count, "203.0.113.9:1")
        #expect(other && !pastTotal, "past the total")
        count.release(Self.a("198.51.100.20:1"))
        let again = take(&count, "203.0.113.9:1")
        #expect(again && count.total == 3)
        // One /64 is one source.
        var v6 = TCPConnectionCount()
        let a1 = take(&v6, "[2001:db8::1]:1"), a2 = take(&v6, "[2001:db8::ffff]:1"), a3 = take(&v6, "[2001:db8::2:3]:1")
        #expect(a1 && a2 && !a3)
    }

    @Test("the loopback source: in 127/8, never 127.0.0.1, the same for one address, different for others")
    func loopbackSource() {
        let one = TCPBridgeRules.loopbackSource(for: Self.a("198.51.100.20:1"))
        #expect(one == TCPBridgeRules.loopbackSource(for: Self.a("198.51.100.20:9")))
        #expect(one.isLoopback && one != PeerAddress(ipv4: 127, 0, 0, 1, port: 0))
        let sources = Set((0..<200).map { TCPBridgeRules.loopbackSource(for: PeerAddress(ipv4: 10, 0, UInt8($0 / 256), UInt8($0 % 256), port: 1)) })
        #expect(sources.count >= 199, "200 addresses got \(sources.count) loopback sources")
        #expect(sources.allSatisfy { $0.isLoopback && $0.ipv4Value != 0x7F00_0001 && $0.ipv4Value != 0x7F00_0000 })
    }

    @Test("a tunnel frame goes only to a worker port: nothing else on the host is reachable through the bridge",
          arguments: [(7400, true), (7401, true), (22, false), (6379, false), (7480, false), (7402, false)] as [(UInt16, Bool)])
    func tunnelTarget(port: UInt16, allowed: Bool) {
        #expect((TCPBridgeRules.tunnelTarget(port: port, workerPorts: [7400, 7401]) != nil) == allowed)
    }

    @Test("ICE-TCP routes: by the relay's ufrag (the USERNAME's first part), until they expire; the oldest go at capacity")
    func routes() {
        let routes = ICETCPRoutes(lifetimeMilliseconds: 1_000, capacity: 2)
        routes.note(ufrag: "abcd1234", port: 7401, now: 0)
        #expect(routes.port(forUsername: "abcd1234:browser", now: 500) == 7401)
        #expect(routes.port(forUsername: "abcd1234", now: 500) == nil, "no colon: not an ICE USERNAME")
        #expect(routes.port(forUsername: "other:browser", now: 500) == nil)
        #expect(routes.port(forUsername: "abcd1234:browser", now: 1_000) == nil, "expired")
        routes.note(ufrag: "u1", port: 1, now: 2_000)
        routes.note(ufrag: "u2", port: 2, now: 2_001)
        routes.note(ufrag: "u3", port: 3, now: 2_002)
        #expect(routes.port(forUsername: "u1:x", now: 2_100) == nil && routes.port(forUsername: "u3:x", now: 2_100) == 3)
    }
}
