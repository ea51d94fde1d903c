import Testing
import ParleyWire

@Suite("RTP header serialization")
struct RTPHeaderTests {
    @Test func oneByteAudioLevelTable() throws {
        let header = RTPHeader(
            marker: true, payloadType: 111, sequenceNumber: 0x1234, timestamp: 960, ssrc: 0xDEAD_BEEF,
            extensions: [.audioLevel(id: 1, AudioLevel(voice: true, level: 30))])
        let expected: [UInt8] = [
            0x90, 0xEF, 0x12, 0x34, // V=2 X=1 | M=1 PT=111 | seq
            0x00, 0x00, 0x03, 0xC0, // timestamp 960
            0xDE, 0xAD, 0xBE, 0xEF, // SSRC
            0xBE, 0xDE, 0x00, 0x01, // one-byte form, 1 word
            0x10, 0x9E, 0x00, 0x00, // ID 1 L=0 V=1 level 30, padding
        ]
        #expect(header.serializedSize == expected.count)
        #expect(try serialized { try header.serialize(into: $0) } == expected)
    }

    @Test func csrcLevelsAndCSRCsTable() throws {
        let header = RTPHeader(
            payloadType: 111, sequenceNumber: 1, timestamp: 0, ssrc: 2, csrcs: [10, 11],
            extensions: [.audioLevel(id: 1, AudioLevel(voice: true, level: 30)), .csrcAudioLevels(id: 3, [5, 200])])
        // Same bytes as the one-byte extension table the view test reads, minus the payload; 200 clamps to 127.
        let expected = Array(RTPPacketViewTests.oneByteExtension.dropLast(2))
        #expect(try serialized { try header.serialize(into: $0) } == expected)
    }

    @Test func twoByteFormTable() throws {
        let header = RTPHeader(
            payloadType: 111, sequenceNumber: 2, timestamp: 0, ssrc: 3,
            extensions: [
                .audioLevel(id: 1, AudioLevel(voice: true, level: 10)),
                RTPExtensionElement(id: 32, data: []),
                RTPExtensionElement(id: 15, data: [0xAA, 0xBB, 0xCC]),
            ])
        let expected: [UInt8] = [
            0x90, 0x6F, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03,
            0x10, 0x00, 0x00, 0x03, // two-byte form, 3 words
            0x01, 0x01, 0x8A,       // ID 1 L=1
            0x20, 0x00,             // ID 32 L=0
            0x0F, 0x03, 0xAA, 0xBB, 0xCC, // ID 15 L=3
            0x00, 0x00,             // padding to the word
        ]
        #expect(try serialized { try header.serialize(into: $0) } == expected)
    }

    static let roundTrips: [RTPHeader] = [
        RTPHeader(payloadType: 0, sequenceNumber: 0, timestamp: 0, ssrc: 0),
        RTPHeader(marker: true, payloadType: 127, sequenceNumber: 65535, timestamp: .max, ssrc: .max),
        RTPHeader(payloadType: 111, sequenceNumber: 7, timestamp: 7, ssrc: 7, csrcs: Array(1...15)),
        RTPHeader(payloadType: 111, sequenceNumber: 1, timestamp: 2, ssrc: 3, csrcs: [9],
                  extensions: [.audioLevel(id: 14, AudioLevel(voice: false, level: 127)),
                               .csrcAudioLevels(id: 2, [0])]),
        // 16 data bytes still fit the one-byte form.
        RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3,
                  extensions: [RTPExtensionElement(id: 5, data: Array(0..<16))]),
        // 17 data bytes force the two-byte form.
        RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3,
                  extensions: [RTPExtensionElement(id: 5, data: Array(0..<17)), .audioLevel(id: 1, .init(voice: true, level: 0))]),
        // ID 255 and a 255-byte element.
        RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3,
                  extensions: [RTPExtensionElement(id: 255, data: [UInt8](repeating: 0xEE, count: 255))]),
    ]

    @Test(arguments: roundTrips)
    func roundTrip(header: RTPHeader) throws {
        let payload: [UInt8] = [0xCA, 0xFE, 0x00]
        let bytes = try serialized { try header.serialize(into: $0) }
        #expect(bytes.count == header.serializedSize)
        #expect(bytes.count % 4 == 0)
        try withRTP(bytes + payload) { p in
            #expect(p.marker == header.marker)
            #expect(p.payloadType == header.payloadType)
            #expect(p.sequenceNumber == header.sequenceNumber)
            #expect(p.timestamp == header.timestamp)
            #expect(p.ssrc == header.ssrc)
            #expect((0..<p.csrcCount).map { p.csrc(at: $0) } == header.csrcs)
            #expect(p.hasExtension == !header.extensions.isEmpty)
            for element in header.extensions {
                let range = try #require(p.extensionElement(id: element.id))
                #expect(Array(p.bytes[range]) == element.data)
            }
            #expect(p.payloadOffset == bytes.count && Array(p.payload) == payload)
        }
    }

    @Test func bufferTooSmallAtEveryShortLength() throws {
        let header = RTPHeader(payloadType: 111, sequenceNumber: 1, timestamp: 2, ssrc: 3, csrcs: [4],
                               extensions: [.audioLevel(id: 1, AudioLevel(voice: true, level: 3))])
        for capacity in 0..<header.serializedSize {
            #expect(throws: WireError.bufferTooSmall) {
                _ = try serialized(capacity: capacity) { try header.serialize(into: $0) }
            }
        }
        #expect(try serialized(capacity: header.serializedSize) { try header.serialize(into: $0) }.count == 24)
    }

    static let unserializable: [(RTPHeader, WireError)] = [
        (RTPHeader(payloadType: 128, sequenceNumber: 0, timestamp: 0, ssrc: 0), .badField),
        (RTPHeader(payloadType: 0, sequenceNumber: 0, timestamp: 0, ssrc: 0, csrcs: Array(0...15)), .badCSRCCount),
        (RTPHeader(payloadType: 0, sequenceNumber: 0, timestamp: 0, ssrc: 0,
                   extensions: [RTPExtensionElement(id: 0, data: [1])]), .badExtension),
        (RTPHeader(payloadType: 0, sequenceNumber: 0, timestamp: 0, ssrc: 0,
                   extensions: [RTPExtensionElement(id: 1, data: [UInt8](repeating: 0, count: 256))]), .badExtension),
    ]

    @Test(arguments: unserializable)
    func invalidHeaders(header: RTPHeader, error: WireError) {
        #expect(throws: error) { _ = try serialized { try header.serialize(into: $0) } }
    }

    @Test func audioLevelClampsAndRFC6465MasksVoiceBit() {
        #expect(AudioLevel(voice: false, level: 200).level == 127)
        #expect(RTPExtensionElement.audioLevel(id: 1, AudioLevel(voice: true, level: 0)).data == [0x80])
        #expect(RTPExtensionElement.audioLevel(id: 1, AudioLevel(voice: false, level: 127)).data == [0x7F])
        #expect(RTPExtensionElement.csrcAudioLevels(id: 2, [0, 64, 127, 255]).data == [0, 64, 127, 127])
    }
}
