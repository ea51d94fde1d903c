import ParleySIP
import Testing

@Suite("SIP: what a request must carry before the gateway acts on it (400, 483, a malformed ACK dropped)")
struct SIPRequestCheckTests {
    static let whole = SIPRequestCheck.Fields(method: "INVITE", cseqMethod: "INVITE", hasViaBranch: true,
                                              hasFrom: true, hasTo: true, hasCallID: true, maxForwards: "70")

    @Test("a whole request passes, whatever its method's case in CSeq")
    func whole() {
        #expect(SIPRequestCheck.judge(Self.whole) == .pass)
        var lower = Self.whole
        lower.cseqMethod = "invite"
        #expect(SIPRequestCheck.judge(lower) == .pass)
    }

    @Test("each missing header is 400 and named")
    func missing() {
        let cases: [(WritableKeyPath<SIPRequestCheck.Fields, Bool>, String)] = [
            (\.hasViaBranch, "no Via branch"), (\.hasFrom, "no From"), (\.hasTo, "no To"), (\.hasCallID, "no Call-ID"),
        ]
        for (field, why) in cases {
            var fields = Self.whole
            fields[keyPath: field] = false
            #expect(SIPRequestCheck.judge(fields) == .answer(400, "Bad Request", why: why))
        }
        var noCSeq = Self.whole
        noCSeq.cseqMethod = ""
        #expect(SIPRequestCheck.judge(noCSeq) == .answer(400, "Bad Request", why: "no CSeq"))
        var noHops = Self.whole
        noHops.maxForwards = nil
        noHops.hasCallID = false
        #expect(SIPRequestCheck.judge(noHops) == .answer(400, "Bad Request", why: "no Call-ID, Max-Forwards"))
    }

    @Test("a CSeq of another method, or Max-Forwards not a number of 0-255, is 400")
    func inconsistent() {
        var other = Self.whole
        other.cseqMethod = "BYE"
        #expect(SIPRequestCheck.judge(other) == .answer(400, "Bad Request", why: "CSeq method BYE in a INVITE"))
        for bad in ["x", "256", "-1", "7 0"] {
            var fields = Self.whole
            fields.maxForwards = bad
            #expect(SIPRequestCheck.judge(fields)
                    == .answer(400, "Bad Request", why: "Max-Forwards not a number of 0-255"), "\(bad)")
        }
    }

    @Test("Content-Length beyond the body sent, or not a number, is 400; shorter, or missing, is whole")
    func contentLength() {
        var fields = Self.whole
        fields.bodyBytes = 120
        for (length, whole) in [("120", true), ("0", true), ("121", false), ("-1", false), ("x", false), (nil, true)] {
            fields.contentLength = length
            let verdict = SIPRequestCheck.judge(fields)
            #expect(whole ? verdict == .pass
                    : verdict == .answer(400, "Bad Request",
                                         why: "Content-Length \(length ?? "") beyond the 120 bytes of body"),
                    "\(length ?? "none"): \(verdict)")
        }
    }

    @Test("Max-Forwards 0 is 483 but for OPTIONS; a malformed ACK is dropped, never answered")
    func hopsAndACK() {
        var spent = Self.whole
        spent.maxForwards = "0"
        #expect(SIPRequestCheck.judge(spent) == .answer(483, "Too Many Hops", why: "Max-Forwards 0"))
        spent.method = "OPTIONS"
        spent.cseqMethod = "OPTIONS"
        #expect(SIPRequestCheck.judge(spent) == .pass)
        var ack = Self.whole
        ack.method = "ACK"
        ack.cseqMethod = "ACK"
        ack.hasCallID = false
        #expect(SIPRequestCheck.judge(ack) == .drop(why: "no Call-ID"))
        ack.hasCallID = true
        ack.maxForwards = "0"
        #expect(SIPRequestCheck.judge(ack) == .pass)
    }
}
