import ParleySIP
import ParleyWire
import Testing

@Suite("SIP: INVITEs per source, a token bucket each")
struct SIPRateLimitTests {
    let a = PeerAddress(ipv4: 192, 0, 2, 1, port: 5060), b = PeerAddress(ipv4: 192, 0, 2, 2, port: 5060)

    @Test func aBurstThenTheRate() {
        var limit = SIPRateLimit(perSecond: 5, burst: 10)
        let allowed = (0..<15).filter { _ in limit.allow(a, now: 0) }.count
        #expect(allowed == 10)
        let ok1 = limit.allow(b, now: 0)  // another source has its own budget
        #expect(ok1)
        let ok2 = limit.allow(a.withPort(1), now: 0)  // the same host from another port shares it
        #expect(!ok2)
        let ok3 = limit.allow(a, now: 200_000_000)  // 0.2 s: one more
        #expect(ok3)
        let ok4 = limit.allow(a, now: 200_000_000)
        #expect(!ok4)
        // One second later: five.
        let later = (0..<10).filter { _ in limit.allow(a, now: 1_200_000_000) }.count
        #expect(later == 5)
    }

    @Test func theTableIsBounded() {
        var limit = SIPRateLimit(perSecond: 1, burst: 2, maxSources: 100)
        let first = (0..<100).filter { limit.allow(PeerAddress(ipv4: UInt32(0x0A00_0000 + $0), port: 1), now: 0) }
        #expect(first.count == 100)
        #expect(limit.sources == 100)
        // Full and none refilled: a new source is refused, a known one still counted.
        let ok5 = limit.allow(PeerAddress(ipv4: 0x0B00_0000, port: 1), now: 1_000_000)
        #expect(!ok5)
        let ok6 = limit.allow(PeerAddress(ipv4: 0x0A00_0000, port: 1), now: 1_000_000)
        #expect(ok6)
        // Two seconds on, every bucket has refilled: they are forgotten and the new source gets in.
        let ok7 = limit.allow(PeerAddress(ipv4: 0x0B00_0000, port: 1), now: 3_000_000_000)
        #expect(ok7)
        #expect(limit.sources == 1)
    }
}
