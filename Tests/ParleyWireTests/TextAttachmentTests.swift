import Testing
@testable import ParleyWire

@Suite("Texts with image attachments: field 55 on the first fragment, at most 4 ids of 22 base64url characters")
struct TextAttachmentTests {
    static let a = "fUNQLHuQBWMBiIYr16lWVg", b = "AAAAAAAAAAAAAAAAAAAAAA", c = "-_-_abcdefghij0123456w", d = "zyxwvutsrqponmlkjihgfw"

    @Test("send text: one id after the chunk, as field 55 (22 ASCII bytes)")
    func sendTextBytes() throws {
        let fragment = TextFragment(messageID: 7, index: 0, count: 1, chunk: Array("hi".utf8), attachments: [Self.a])
        let bytes = try SignalDatagram(connectionID: 1, sequence: 2, ack: 0, message: .sendText(to: "", fragment: fragment)).serialized()
        #expect(bytes == [
            0x50, 0x01, 0x05, 0x00,               // magic 'P', version 1, type 0x05 send text, flags
            0x00, 0x00, 0x00, 0x01,               // connection id
            0x00, 0x00, 0x00, 0x02,               // sequence
            0x00, 0x00, 0x00, 0x00,               // ack
            0x1A, 0x00, 0x04, 0x00, 0x00, 0x00, 0x07,   // field 26 (message id) 7
            0x1B, 0x00, 0x01, 0x00,               // field 27 (fragment index) 0
            0x1C, 0x00, 0x01, 0x01,               // field 28 (fragment count) 1
            0x1D, 0x00, 0x02, 0x68, 0x69,         // field 29 (chunk) "hi"
            0x37, 0x00, 0x16,                     // field 55 (attachment), length 22
        ] + Array(Self.a.utf8))
        #expect(try SignalDatagram(parsing: bytes).message == .sendText(to: "", fragment: fragment))
    }

    @Test("text from the relay: an image-only text is an empty chunk with its ids, in the order sent")
    func imageOnlyTextBytes() throws {
        let fragment = TextFragment(messageID: 3, index: 0, count: 1, chunk: [], attachments: [Self.b, Self.c])
        let message = SignalMessage.text(fromMemberID: 9, fromIdentity: "al", direct: true, fragment: fragment)
        let bytes = try SignalDatagram(connectionID: 5, sequence: 1, ack: 4, message: message).serialized()
        #expect(bytes == [
            0x50, 0x01, 0x87, 0x00,               // magic, version 1, type 0x87 text, flags
            0x00, 0x00, 0x00, 0x05,               // connection id
            0x00, 0x00, 0x00, 0x01,               // sequence
            0x00, 0x00, 0x00, 0x04,               // ack
            0x07, 0x00, 0x04, 0x00, 0x00, 0x00, 0x09,   // field 7 (member id) 9
            0x0C, 0x00, 0x02, 0x61, 0x6C,         // field 12 (identity) "al"
            0x1E, 0x00, 0x01, 0x01,               // field 30 (direct) 1
            0x1A, 0x00, 0x04, 0x00, 0x00, 0x00, 0x03,   // field 26 (message id) 3
            0x1B, 0x00, 0x01, 0x00,               // field 27 (fragment index) 0
            0x1C, 0x00, 0x01, 0x01,               // field 28 (fragment count) 1
            0x1D, 0x00, 0x00,                     // field 29 (chunk), empty
            0x37, 0x00, 0x16,                     // field 55, the first id
        ] + Array(Self.b.utf8) + [
            0x37, 0x00, 0x16,                     // field 55, the second id
        ] + Array(Self.c.utf8))
        #expect(try SignalDatagram(parsing: bytes).message == message)
    }

    static let roundTrips: [SignalMessage] = [
        .sendText(to: "bob", fragment: TextFragment(messageID: 1, index: 0, count: 2, chunk: Array("look".utf8), attachments: [a, b, c, d])),
        .sendText(to: "", fragment: TextFragment(messageID: 2, index: 0, count: 1, chunk: [], attachments: [d])),
        .text(fromMemberID: 7, fromIdentity: "alice", direct: false,
              fragment: TextFragment(messageID: 3, index: 0, count: 1, chunk: Array("é".utf8), attachments: [a, a])),
        .text(fromMemberID: 7, fromIdentity: "alice", direct: true, fragment: TextFragment(messageID: 4, index: 1, count: 2, chunk: [0x41])),
    ]

    @Test("texts with ids survive a round trip", arguments: roundTrips)
    func roundTrip(message: SignalMessage) throws {
        let datagram = SignalDatagram(connectionID: 0x0102_0304, sequence: 42, ack: 17, message: message)
        #expect(try SignalDatagram(parsing: try datagram.serialized()) == datagram)
    }

    /// (why, the fragment as a sender that broke the rules would write it, the error).
    static let malformed: [(String, TextFragment, WireError)] = [
        ("five ids", TextFragment(messageID: 1, index: 0, count: 1, chunk: [0x61], attachments: [a, b, c, d, a]), .badField),
        ("an id on the second fragment", TextFragment(messageID: 1, index: 1, count: 2, chunk: [0x61], attachments: [a]), .badField),
        ("21 characters", TextFragment(messageID: 1, index: 0, count: 1, chunk: [0x61], attachments: [String(a.dropLast())]), .badLength),
        ("23 characters", TextFragment(messageID: 1, index: 0, count: 1, chunk: [0x61], attachments: [a + "A"]), .badLength),
        ("an empty id", TextFragment(messageID: 1, index: 0, count: 1, chunk: [0x61], attachments: [""]), .badLength),
        ("base64 '+' and '/' are not base64url", TextFragment(messageID: 1, index: 0, count: 1, chunk: [], attachments: ["+/" + b.dropFirst(2)]), .badField),
        ("padding '='", TextFragment(messageID: 1, index: 0, count: 1, chunk: [], attachments: ["=" + b.dropFirst()]), .badField),
        ("padding bits set: 'B' last", TextFragment(messageID: 1, index: 0, count: 1, chunk: [], attachments: [b.dropLast() + "B"]), .badField),
        ("22 bytes, not ASCII", TextFragment(messageID: 1, index: 0, count: 1, chunk: [], attachments: ["é" + String(b.dropFirst(3)) + "A"]), .badField),
    ]

    @Test("ids that break the rules make the datagram malformed", arguments: 0..<9)
    func malformedIDs(index: Int) throws {
        let (why, fragment, error) = Self.malformed[index]
        for message in [SignalMessage.sendText(to: "", fragment: fragment),
                        .text(fromMemberID: 1, fromIdentity: "a", direct: false, fragment: fragment)] {
            let bytes = try SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: message).serialized()
            #expect(throws: error, "\(why)") { try SignalDatagram(parsing: bytes) }
        }
    }

    @Test("an id with a bad byte anywhere is refused; every alphabet character and every zero-padding last one is taken")
    func idAlphabet() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for ch in alphabet {
            #expect(TextAttachments.isID(String(decoding: [UInt8](repeating: ch, count: 21) + [UInt8(ascii: "A")], as: UTF8.self)))
            let last = String(decoding: [UInt8](repeating: 0x41, count: 21) + [ch], as: UTF8.self)
            #expect(TextAttachments.isID(last) == [UInt8(ascii: "A"), UInt8(ascii: "Q"), UInt8(ascii: "g"), UInt8(ascii: "w")].contains(ch))
        }
        for bad in [UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="), UInt8(ascii: "."), 0x20, 0x00, 0x7F, 0xFF] {
            for position in [0, 10, 20] {
                var bytes = Array(Self.b.utf8)
                bytes[position] = bad
                #expect(!TextAttachments.isID(utf8: bytes))
            }
        }
        #expect(TextAttachments.areValid([]) && TextAttachments.areValid([Self.a, Self.b, Self.c, Self.d]))
        #expect(!TextAttachments.areValid([Self.a, Self.b, Self.c, Self.d, Self.a]) && !TextAttachments.areValid(["nope"]))
    }

    @Test("split: ids on the first fragment, whose chunk gives up their room; image-only is one empty fragment")
    func split() throws {
        let only = try #require(TextFragment.split("", messageID: 5, attachments: [Self.a]))
        #expect(only == [TextFragment(messageID: 5, index: 0, count: 1, chunk: [], attachments: [Self.a])])
        let ids = [Self.a, Self.b, Self.c, Self.d]
        let text = String(repeating: "x", count: 1000)
        let parts = try #require(TextFragment.split(text, messageID: 6, attachments: ids))
        #expect(parts.map(\.chunk.count) == [900 - 4 * 25, 200])
        #expect(parts[0].attachments == ids && parts[1].attachments.isEmpty)
        #expect(TextFragment.split(text, messageID: 6)?.map(\.chunk.count) == [900, 100], "without ids: as before")
        #expect(TextFragment.split("", messageID: 1) == nil, "empty without an image")
        #expect(TextFragment.split("hi", messageID: 1, attachments: ids + [Self.a]) == nil, "five ids")
        #expect(TextFragment.split("hi", messageID: 1, attachments: ["not an id"]) == nil)
        #expect(TextFragment.split(String(repeating: "x", count: 4097), messageID: 1, attachments: [Self.a]) == nil)
    }

    @Test("the longest text with four ids still fits: at most 5 fragments, every datagram within a sealed one's room")
    func longestTextFits() throws {
        let ids = [Self.a, Self.b, Self.c, Self.d]
        let identity = String(repeating: "i", count: Signalling.maxNameBytes)
        for text in [String(repeating: "x", count: 4096), String(repeating: "€", count: 1365)] {
            let parts = try #require(TextFragment.split(text, messageID: 1, attachments: ids))
            #expect(parts.count <= 5)
            for f in parts {
                let relayed = SignalDatagram(connectionID: 1, sequence: 1, ack: 1,
                                             message: .text(fromMemberID: 1, fromIdentity: identity, direct: true, fragment: f))
                let sent = SignalDatagram(connectionID: 1, sequence: 1, ack: 1, message: .sendText(to: identity, fragment: f))
                #expect(try relayed.serialized().count <= SignallingEnvelope.maxSealedPlaintext)
                #expect(try sent.serialized().count <= SignallingEnvelope.maxSealedPlaintext)
            }
            var r = TextReassembler()
            #expect(parts.flatMap { r.take($0) } == [.text(messageID: 1, text, attachments: ids)])
        }
    }

    /// (fragments as (index, count, chunk bytes, ids), what the reassembler finishes after the last).
    static let reassembly: [(String, [(UInt8, UInt8, Int, [String])], [TextAssembly])] = [
        ("image only", [(0, 1, 0, [a])], [.text(messageID: 1, "", attachments: [a])]),
        ("text and images over two fragments", [(0, 2, 2, [a, b]), (1, 2, 1, [])], [.text(messageID: 1, "aaa", attachments: [a, b])]),
        ("empty, no image: refused as before", [(0, 1, 0, [])], [.refused(messageID: 1, .empty)]),
        ("empty fragments, one image", [(0, 2, 0, [c]), (1, 2, 0, [])], [.text(messageID: 1, "", attachments: [c])]),
        ("text only: no ids", [(0, 1, 2, [])], [.text(messageID: 1, "aa")]),
    ]

    @Test("reassembly hands over the first fragment's ids with the text", arguments: 0..<5)
    func reassembly(index: Int) {
        let (label, fragments, expected) = Self.reassembly[index]
        var r = TextReassembler()
        var got: [TextAssembly] = []
        for f in fragments {
            got = r.take(TextFragment(messageID: 1, index: f.0, count: f.1, chunk: [UInt8](repeating: 0x61, count: f.2), attachments: f.3))
        }
        #expect(got == expected, "\(label)")
    }

    @Test("a text cut short forgets its ids: the next text does not inherit them")
    func cutShortForgetsIDs() {
        var r = TextReassembler()
        #expect(r.take(TextFragment(messageID: 1, index: 0, count: 2, chunk: [0x61], attachments: [Self.a])).isEmpty)
        #expect(r.take(TextFragment(messageID: 2, index: 1, count: 2, chunk: [0x61])) ==
                [.refused(messageID: 1, .outOfOrder), .refused(messageID: 2, .outOfOrder)])
        #expect(r.take(TextFragment(messageID: 3, index: 0, count: 1, chunk: [0x62])) == [.text(messageID: 3, "b")])
    }
}
