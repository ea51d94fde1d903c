import Testing
import ParleyWire

/// Byte tables of well-formed RTP packets (RFC 3550 §5.1) and what the view must read from them.
@Suite("RTP packet view")
struct RTPPacketViewTests {
    static let minimal: [UInt8] = [
        0x80, 0x6F,             // V=2 P=0 X=0 CC=0 | M=0 PT=111
        0x12, 0x34,             // sequence 0x1234
        0x00, 0x00, 0x03, 0xC0, // timestamp 960
        0xDE, 0xAD, 0xBE, 0xEF, // SSRC
        0x01, 0x02, 0x03,       // payload
    ]

    @Test func minimalPacket() throws {
        try withRTP(Self.minimal) { p in
            #expect(p.version == 2)
            #expect(!p.padding && !p.hasExtension && !p.marker)
            #expect(p.payloadType == 111)
            #expect(p.sequenceNumber == 0x1234)
            #expect(p.timestamp == 960)
            #expect(p.ssrc == 0xDEAD_BEEF)
            #expect(p.csrcCount == 0)
            #expect(p.payloadOffset == 12 && p.payloadCount == 3)
            #expect(Array(p.payload) == [1, 2, 3])
            #expect(p.extensionProfile == nil && p.extensionCount == 0)
            #expect(p.extensionElement(id: 1) == nil)
            #expect(p.audioLevel(id: 1) == nil)
        }
    }

    @Test func csrcsAndMarkerAtWrapValues() throws {
        let bytes: [UInt8] = [
            0x82, 0xEF,             // V=2 CC=2 | M=1 PT=111
            0xFF, 0xFF,             // sequence 65535
            0xFF, 0xFF, 0xFF, 0xFF, // timestamp 2^32−1
            0x00, 0x00, 0x00, 0x01, // SSRC 1
            0x00, 0x00, 0x00, 0x0A, // CSRC 10
            0x00, 0x00, 0x00, 0x0B, // CSRC 11
            0xAA,                   // payload
        ]
        try withRTP(bytes) { p in
            #expect(p.marker)
            #expect(p.sequenceNumber == 65535 && p.timestamp == UInt32.max)
            #expect(p.csrcCount == 2)
            #expect(p.csrc(at: 0) == 10 && p.csrc(at: 1) == 11)
            #expect(p.payloadOffset == 20 && p.payloadCount == 1)
        }
    }

    @Test func headerOnlyPacketHasEmptyPayload() throws {
        try withRTP(Array(Self.minimal[..<12])) { p in
            #expect(p.payloadOffset == 12 && p.payloadCount == 0)
        }
    }

    @Test func padding() throws {
        let bytes: [UInt8] = [
            0xA0, 0x6F, 0x00, 0x01, // V=2 P=1 | PT=111 | seq 1
            0x00, 0x00, 0x00, 0x00, // timestamp
            0x00, 0x00, 0x00, 0x01, // SSRC
            0x01, 0x02,             // payload
            0x00, 0x00, 0x03,       // 3 bytes of padding, count last
        ]
        try withRTP(bytes) { p in
            #expect(p.padding)
            #expect(p.payloadCount == 2 && p.paddingCount == 3)
            #expect(Array(p.payload) == [1, 2])
        }
        // Padding may fill everything after the header.
        try withRTP(Array(bytes[..<12]) + [0x00, 0x02]) { p in
            #expect(p.payloadCount == 0 && p.paddingCount == 2)
        }
    }

    static let oneByteExtension: [UInt8] = [
        0x92, 0x6F, 0x00, 0x01, // V=2 X=1 CC=2 | PT=111 | seq 1
        0x00, 0x00, 0x00, 0x00, // timestamp
        0x00, 0x00, 0x00, 0x02, // SSRC
        0x00, 0x00, 0x00, 0x0A, // CSRC 10
        0x00, 0x00, 0x00, 0x0B, // CSRC 11
        0xBE, 0xDE, 0x00, 0x02, // one-byte form, 2 words
        0x10, 0x9E,             // ID 1 L=0: V=1 level 30 (RFC 6464)
        0x31, 0x05, 0x7F,       // ID 3 L=1: CSRC levels 5, 127 (RFC 6465)
        0x00, 0x00, 0x00,       // padding
        0xF0, 0x0D,             // payload
    ]

    @Test func oneByteExtensionElements() throws {
        try withRTP(Self.oneByteExtension) { p in
            #expect(p.hasExtension)
            #expect(p.extensionProfile == 0xBEDE)
            #expect(p.extensionOffset == 24 && p.extensionCount == 8)
            #expect(p.extensionElement(id: 1) == 25..<26)
            #expect(p.extensionElement(id: 3) == 27..<29)
            #expect(p.extensionElement(id: 2) == nil)
            #expect(p.audioLevel(id: 1) == AudioLevel(voice: true, level: 30))
            #expect(p.payloadOffset == 32 && Array(p.payload) == [0xF0, 0x0D])
            var levels: [(Int, UInt8)] = []
            let visited = p.csrcAudioLevels(id: 3) { levels.append(($0, $1)) }
            #expect(visited == 2)
            #expect(levels.map(\.0) == [0, 1] && levels.map(\.1) == [5, 127])
            #expect(p.csrcAudioLevels(id: 9) { _, _ in Issue.record("absent element visited") } == 0)
        }
    }

    static let twoByteExtension: [UInt8] = [
        0x90, 0x6F, 0x00, 0x02, // V=2 X=1 | PT=111 | seq 2
        0x00, 0x00, 0x00, 0x00, // timestamp
        0x00, 0x00, 0x00, 0x03, // SSRC
        0x10, 0x00, 0x00, 0x03, // two-byte form (appbits 0), 3 words
        0x01, 0x01, 0x8A,       // ID 1 L=1: V=1 level 10
        0x00,                   // padding
        0x20, 0x00,             // ID 32 L=0 (empty)
        0x0F, 0x03, 0xAA, 0xBB, 0xCC, // ID 15 L=3
        0x00,                   // padding
        0x55,                   // payload
    ]

    @Test func twoByteExtensionElements() throws {
        try withRTP(Self.twoByteExtension) { p in
            #expect(p.extensionProfile == 0x1000)
            #expect(p.extensionOffset == 16 && p.extensionCount == 12)
            #expect(p.extensionElement(id: 1) == 18..<19)
            #expect(p.extensionElement(id: 32) == 22..<22)
            #expect(p.extensionElement(id: 15) == 24..<27)
            #expect(p.audioLevel(id: 1) == AudioLevel(voice: true, level: 10))
            #expect(p.audioLevel(id: 32) == nil) // empty element carries no level
            #expect(p.payloadOffset == 28 && p.payloadCount == 1)
        }
        // Two-byte profile with non-zero appbits is still the two-byte form.
        var appbits = Self.twoByteExtension
        appbits[13] = 0x0F
        try withRTP(appbits) { p in #expect(p.extensionElement(id: 15) == 24..<27) }
    }

    @Test func oneByteID15EndsTheBlock() throws {
        let bytes: [UInt8] = [
            0x90, 0x6F, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
            0xBE, 0xDE, 0x00, 0x01, // one-byte form, 1 word
            0x10, 0x55,             // ID 1: level 85
            0xF3,                   // ID 15: stop here (its length is ignored)
            0x2F,                   // would be ID 2 L=15 and overrun, but is never read
        ]
        try withRTP(bytes) { p in
            #expect(p.audioLevel(id: 1) == AudioLevel(voice: false, level: 85))
            #expect(p.extensionElement(id: 2) == nil)
        }
    }

    @Test func unknownProfileIsOpaque() throws {
        let bytes: [UInt8] = [
            0x90, 0x6F, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
            0xAB, 0xCD, 0x00, 0x01, // some other profile, 1 word
            0x1F, 0xFF, 0xFF, 0xFF, // would be malformed as one-byte form; not interpreted
        ]
        try withRTP(bytes) { p in
            #expect(p.extensionProfile == 0xABCD && p.extensionCount == 4)
            #expect(p.extensionElement(id: 1) == nil)
            #expect(p.payloadOffset == 20)
        }
    }

    // MARK: - Malformed input

    @Test(arguments: 0..<12)
    func truncatedFixedHeader(length: Int) {
        #expect(throws: WireError.truncated) { try parseRTP(Array(Self.minimal[..<length])) }
    }

    @Test(arguments: [UInt8(0x00), 0x40, 0xC0, 0x7F, 0xFF])
    func badVersion(byte0: UInt8) {
        var bytes = Self.minimal
        bytes[0] = byte0
        #expect(throws: WireError.badVersion) { try parseRTP(bytes) }
    }

    @Test(arguments: 1...15)
    func csrcCountPastEnd(count: Int) {
        // Room for one fewer CSRC than the count claims.
        let bytes = [0x80 | UInt8(count), 0x6F] + [UInt8](repeating: 0, count: 10 + 4 * (count - 1))
        #expect(throws: WireError.badCSRCCount) { try parseRTP(bytes) }
    }

    static let header: [UInt8] = [0x90, 0x6F, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]

    @Test(arguments: 0..<4)
    func extensionHeaderTruncated(length: Int) {
        let bytes = Self.header + Array([0xBE, 0xDE, 0x00, 0x00][..<length])
        #expect(throws: WireError.truncated) { try parseRTP(bytes) }
    }

    @Test func extensionLengthPastEnd() {
        let bytes = Self.header + [0xBE, 0xDE, 0x00, 0x02, 0x10, 0x01, 0x00, 0x00] // 2 words claimed, 1 present
        #expect(throws: WireError.badExtension) { try parseRTP(bytes) }
    }

    static let badElements: [[UInt8]] = [
        [0xBE, 0xDE, 0x00, 0x01, 0x13, 0x01, 0x02, 0x03],  // one-byte ID 1 L=3 needs 4 bytes, 3 left
        [0xBE, 0xDE, 0x00, 0x01, 0x00, 0x00, 0x00, 0x20],  // ID 2 L=0 at the last byte: its data is missing
        [0x10, 0x00, 0x00, 0x01, 0x01, 0x05, 0x00, 0x00],  // two-byte ID 1 L=5, 2 left
        [0x10, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01],  // two-byte ID 1 with no length byte
    ]

    @Test(arguments: badElements)
    func badElementLength(block: [UInt8]) {
        #expect(throws: WireError.badExtension) { try parseRTP(Self.header + block + [0x00]) }
    }

    @Test func paddingCountZero() {
        let bytes = [0xA0] + Self.minimal[1...] + [0x00]
        #expect(throws: WireError.badPadding) { try parseRTP(bytes) }
    }

    @Test(arguments: [UInt8(5), 0xFF])
    func paddingCountTooLarge(count: UInt8) {
        let bytes = [0xA0] + Self.minimal[1...] + [count] // 4 bytes after the header
        #expect(throws: WireError.badPadding) { try parseRTP(bytes) }
    }

    @Test func paddingWithNothingAfterHeader() {
        #expect(throws: WireError.badPadding) { try parseRTP([0xA0] + Self.minimal[1..<12]) }
    }

    @Test func paddingMayNotReachIntoExtension() {
        var bytes = Self.header + [0xBE, 0xDE, 0x00, 0x01, 0x10, 0x01, 0x00, 0x00] + [0x02]
        bytes[0] |= 0x20 // P=1, count 2 but only 1 byte follows the extension
        #expect(throws: WireError.badPadding) { try parseRTP(bytes) }
    }
}
