import ParleySIP
import ParleyWire
import Testing

@Suite("SIP: the addresses the gateway calls, and the trunk each goes out through")
struct SIPTargetTests {
    @Test func parses() throws {
        let t = try #require(SIPTarget(parsing: "sip:+4930123456@203.0.113.5"))
        #expect(t.user == "+4930123456" && t.host == PeerAddress(ipv4: 203, 0, 113, 5, port: 5060))
        #expect(t.description == "sip:+4930123456@203.0.113.5:5060")
        #expect(SIPTarget(parsing: "sip:bob@127.0.0.1:5081")?.host == PeerAddress(ipv4: 127, 0, 0, 1, port: 5081))
        #expect(SIPTarget(parsing: "sip:bob@[2001:db8::5]")?.host.port == 5060)
        #expect(SIPTarget(parsing: "sip:bob@[2001:db8::5]:5070")?.host.port == 5070)
        for bad in ["bob@1.2.3.4", "sip:@1.2.3.4", "sip:bob@example.com", "sip:bob@1.2.3.4;transport=tcp",
                    "sip:b ob@1.2.3.4", "sip:bob@0.0.0.0", "sip:bob@1.2.3.4:0", "sips:bob@1.2.3.4", "sip:bob@"] {
            #expect(SIPTarget(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test func theTrunkThatLetsACallOut() throws {
        let office = try SIPTrunk.parse("office=192.0.2.0/24").get()
        let carrier = try SIPTrunk.parse("carrier=203.0.113.0/28,outbound=203.0.113.1:5060").get()
        let trunks = SIPTrunks([office, carrier])
        // In a trunk's blocks: straight there, or through its proxy.
        let desk = try #require(SIPTarget(parsing: "sip:desk@192.0.2.40"))
        #expect(trunks.outbound(for: desk)?.trunk.name == "office")
        #expect(trunks.outbound(for: desk)?.nextHop == desk.host)
        let inCarrier = try #require(SIPTarget(parsing: "sip:x@203.0.113.9"))
        #expect(trunks.outbound(for: inCarrier)?.nextHop == PeerAddress(ipv4: 203, 0, 113, 1, port: 5060))
        // Anywhere else: the first trunk with a proxy (the default), which routes on.
        let number = try #require(SIPTarget(parsing: "sip:+4930123456@198.51.100.77"))
        #expect(trunks.outbound(for: number)?.trunk.name == "carrier")
        // No trunk with a proxy, and not in any block: no way out (no open relay).
        #expect(SIPTrunks([office]).outbound(for: number) == nil)
    }
}
