import ParleyAuth
import ParleyRelay
import ParleyWire
import Testing

/// `AttachmentID`: what the store hands out for an upload, and the one rule for what a text may carry.
@Suite("Attachments: ids — 16 random bytes as 22 base64url characters, parsed strictly; texts carry only such ids")
struct AttachmentIDTests {
    /// Ids as the store writes them (the last character carries 2 bits, so it is one of A, Q, g, w).
    static let valid = [
        "fUNQLHuQBWMBiIYr16lWVg", "AAAAAAAAAAAAAAAAAAAAAA", "-_-_abcdefghij0123456w", "zyxwvutsrqponmlkjihgfw",
    ]

    @Test("attachment ids: 22 base64url characters of 16 random bytes, parsed strictly")
    func ids() throws {
        var seen = Set<String>()
        for _ in 0..<100 {
            let id = AttachmentID.random()
            #expect(id.text.utf8.count == 22 && AttachmentID(id.text) == id)
            #expect(Base64URL.decode(Substring(id.text))?.count == 16)
            seen.insert(id.text)
        }
        #expect(seen.count == 100)
        for bad in ["", "..", "AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAA.", "AAAAAAAAAAAAAAAAAAAAA/", "AAAAAAAAAAAAAAAAAAAAA%",
                    "AAAAAAAAAAAAAAAAAAAAAé", "AAAAAAAAAAAAAAAAAAAAAB", "AAAAAAAAAAAAAAAAAAAAA "] {
            #expect(AttachmentID(bad) == nil, "\(bad)")
        }
        #expect(AttachmentID("AAAAAAAAAAAAAAAAAAAAAA") != nil && AttachmentID("-_-_-_-_-_-_-_-_-_-_-w") != nil)
    }

    @Test("what a text may carry is what the attachment store hands out: the wire's check and AttachmentID agree")
    func sameRuleAsTheStore() {
        for _ in 0..<200 {
            let id = AttachmentID.random().text
            #expect(TextAttachments.isID(id), "\(id)")
        }
        let candidates = Self.valid + [
            "", "A", String(repeating: "A", count: 21), String(repeating: "A", count: 23), "AAAAAAAAAAAAAAAAAAAAAB",
            "AAAAAAAAAAAAAAAAAAAAAw", "+AAAAAAAAAAAAAAAAAAAAA", "/AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAA==",
            "AAAAAAAAAAAAAAAAAAAA.A", "éAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAA%A",
        ]
        for s in candidates { #expect(TextAttachments.isID(s) == (AttachmentID(s) != nil), "\(s)") }
    }
}
