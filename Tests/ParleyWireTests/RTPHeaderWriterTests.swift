import Testing
import ParleyWire

/// The caller-owned-buffer writer every sender uses: `RTPFixedHeader` (fixed 12 bytes, CSRCs one by one, sequence
/// patch) and `RTPExtensionWriter` (RFC 8285 block: begin, append, finish with padding and length).
@Suite("RTP header writer")
struct RTPHeaderWriterTests {
    /// Runs `write` against a buffer filled with 0xEE (so bytes the writer should zero are seen) and returns the bytes
    /// it reports writing.
    func written(_ write: (UnsafeMutableRawBufferPointer) -> Int) -> [UInt8] {
        var buffer = [UInt8](repeating: 0xEE, count: 256)
        let count = buffer.withUnsafeMutableBytes { write($0) }
        return Array(buffer[..<count])
    }

    @Test func fixedHeaderTable() {
        let header = RTPFixedHeader(marker: true, payloadType: 111, sequenceNumber: 0x1234, timestamp: 960, ssrc: 0xDEAD_BEEF)
        #expect(written { header.write(into: $0) } == [
            0x80, 0xEF, 0x12, 0x34, // V=2 P=0 X=0 CC=0 | M=1 PT=111 | seq
            0x00, 0x00, 0x03, 0xC0, // timestamp 960
            0xDE, 0xAD, 0xBE, 0xEF, // SSRC
        ])
        #expect(RTPFixedHeader.size == 12)
    }

    @Test func fixedHeaderExtremes() {
        let header = RTPFixedHeader(payloadType: 127, sequenceNumber: 0xFFFF, timestamp: .max, ssrc: 0,
                                    csrcCount: 15, hasExtension: true)
        #expect(written { header.write(into: $0) } == [
            0x9F, 0x7F, 0xFF, 0xFF, // V=2 X=1 CC=15 | M=0 PT=127 | seq 65535
            0xFF, 0xFF, 0xFF, 0xFF, // timestamp 2^32-1
            0x00, 0x00, 0x00, 0x00, // SSRC 0
        ])
    }

    @Test func csrcsWrittenOneByOne() {
        let bytes = written { buffer in
            RTPFixedHeader(payloadType: 111, sequenceNumber: 1, timestamp: 2, ssrc: 3, csrcCount: 2).write(into: buffer)
            RTPFixedHeader.writeCSRC(0x0A0B_0C0D, at: 0, into: buffer)
            RTPFixedHeader.writeCSRC(0xFFFF_FFFE, at: 1, into: buffer)
            return RTPFixedHeader.extensionOffset(csrcCount: 2)
        }
        #expect(bytes == [
            0x82, 0x6F, 0x00, 0x01, // V=2 CC=2 | PT=111 | seq 1
            0x00, 0x00, 0x00, 0x02, // timestamp
            0x00, 0x00, 0x00, 0x03, // SSRC
            0x0A, 0x0B, 0x0C, 0x0D, // CSRC 0
            0xFF, 0xFF, 0xFF, 0xFE, // CSRC 1
        ])
    }

    @Test func oneByteExtensionWithPadding() {
        // A one-byte level element (2 bytes) plus an 8-byte element (9 bytes) = 11 bytes, padded to 12: 3 words.
        let bytes = written { buffer in
            RTPFixedHeader(payloadType: 111, sequenceNumber: 7, timestamp: 0, ssrc: 1, hasExtension: true).write(into: buffer)
            var block = RTPExtensionWriter(into: buffer, at: RTPFixedHeader.extensionOffset(csrcCount: 0))
            block.appendElement(id: 1, byte: AudioLevel(voice: true, level: 30).byte)
            block.beginElement(id: 2, dataCount: 8)
            block.append(bigEndian: 0x0102_0304_0506_0708)
            return block.finish()
        }
        #expect(bytes == [
            0x90, 0x6F, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
            0xBE, 0xDE, 0x00, 0x03, // one-byte form, 3 words
            0x10, 0x9E,             // ID 1 L=0 | V=1 level 30
            0x27, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // ID 2 L=7 | 8 bytes
            0x00,                   // padding to the word
        ])
        #expect(RTPExtensionWriter.oneByteBlockSize(elements: 2, dataBytes: 9) == 16)
    }

    @Test func csrcLevelsAsTheMixerWritesThem() {
        // The relay's mix: CC=3, one RFC 6465 element with a level per CSRC written alongside each CSRC.
        let csrcs: [UInt32] = [10, 11, 12], levels: [UInt8] = [5, 127, 0]
        let bytes = written { buffer in
            RTPFixedHeader(payloadType: 111, sequenceNumber: 0, timestamp: 960, ssrc: 9, csrcCount: 3, hasExtension: true)
                .write(into: buffer)
            var block = RTPExtensionWriter(into: buffer, at: RTPFixedHeader.extensionOffset(csrcCount: 3))
            block.beginElement(id: 3, dataCount: 3)
            for i in 0..<3 {
                RTPFixedHeader.writeCSRC(csrcs[i], at: i, into: buffer)
                block.append(levels[i])
            }
            return block.finish()
        }
        #expect(bytes == [
            0x93, 0x6F, 0x00, 0x00, 0x00, 0x00, 0x03, 0xC0, 0x00, 0x00, 0x00, 0x09,
            0x00, 0x00, 0x00, 0x0A, 0x00, 0x00, 0x00, 0x0B, 0x00, 0x00, 0x00, 0x0C, // CSRCs
            0xBE, 0xDE, 0x00, 0x01, // one-byte form, 1 word
            0x32, 0x05, 0x7F, 0x00, // ID 3 L=2 (3 bytes) | levels 5, 127, 0
        ])
    }

    @Test func exactWordNeedsNoPadding() {
        let bytes = written { buffer in
            var block = RTPExtensionWriter(into: buffer, at: 0)
            block.beginElement(id: 4, dataCount: 3)
            for b: UInt8 in [0xA1, 0xA2, 0xA3] { block.append(b) }
            return block.finish()
        }
        #expect(bytes == [0xBE, 0xDE, 0x00, 0x01, 0x42, 0xA1, 0xA2, 0xA3])
    }

    @Test func emptyBlockIsJustTheHeader() {
        let bytes = written { buffer in
            var block = RTPExtensionWriter(into: buffer, at: 0)
            return block.finish()
        }
        #expect(bytes == [0xBE, 0xDE, 0x00, 0x00])
    }

    static let sequencePatches: [(UInt16, [UInt8])] = [(0, [0x00, 0x00]), (0x00FF, [0x00, 0xFF]), (0xFFFF, [0xFF, 0xFF]), (0x8001, [0x80, 0x01])]

    @Test(arguments: sequencePatches)
    func sequencePatchTouchesOnlyTheSequence(sequence: UInt16, expected: [UInt8]) {
        let header = RTPFixedHeader(marker: true, payloadType: 111, sequenceNumber: 0x1234, timestamp: 960, ssrc: 0xDEAD_BEEF)
        let original = written { header.write(into: $0) }
        let patched = written { buffer in
            header.write(into: buffer)
            RTPFixedHeader.patchSequenceNumber(sequence, in: buffer)
            return RTPFixedHeader.size
        }
        #expect(Array(patched[2..<4]) == expected)
        #expect(Array(patched[..<2]) == Array(original[..<2]))
        #expect(Array(patched[4...]) == Array(original[4...]))
    }

    @Test func writtenHeaderParsesBack() throws {
        var buffer = [UInt8](repeating: 0, count: 64)
        let end = buffer.withUnsafeMutableBytes { b in
            RTPFixedHeader(payloadType: 111, sequenceNumber: 65535, timestamp: 1, ssrc: 2, csrcCount: 1, hasExtension: true).write(into: b)
            RTPFixedHeader.writeCSRC(77, at: 0, into: b)
            var block = RTPExtensionWriter(into: b, at: RTPFixedHeader.extensionOffset(csrcCount: 1))
            block.appendElement(id: 1, byte: AudioLevel(voice: false, level: 42).byte)
            return block.finish()
        }
        buffer[end] = 0xFC  // one payload byte
        try buffer[...end].withUnsafeBytes { raw in
            let view = try RTPPacketView(parsing: raw)
            #expect(view.sequenceNumber == 65535 && view.ssrc == 2 && view.payloadCount == 1)
            #expect(view.audioLevel(id: 1) == AudioLevel(voice: false, level: 42))
        }
    }
}

@Suite("Audio level and loudness")
struct AudioLevelLoudnessTests {
    @Test(arguments: [(UInt8(0), Float(127)), (60, 67), (127, 0), (200, 0)])
    func loudnessOfLevel(level: UInt8, loudness: Float) {
        #expect(AudioLevel.loudness(level: level) == loudness)
    }

    @Test(arguments: [(Float(127), UInt8(0)), (0, 127), (67, 60), (66.6, 60), (66.4, 61), (-5, 127), (200, 0)])
    func levelOfLoudness(loudness: Float, level: UInt8) {
        #expect(AudioLevel.level(loudness: loudness) == level)
    }
}

@Suite("Speech rules")
struct SpeechRulesTests {
    @Test func defaults() {
        #expect(SpeechRules.standard.levelThreshold == 60 && SpeechRules.standard.hold == .milliseconds(600))
    }

    @Test(arguments: [(UInt8?.some(30), 0, UInt8(30)), (nil, 11, 40), (nil, 10, 127), (nil, 0, 127), (.some(127), 500, 127)])
    func levelOfAPacket(level: UInt8?, payloadBytes: Int, counted: UInt8) {
        #expect(SpeechRules.level(level, payloadBytes: payloadBytes) == counted)
    }

    @Test func thresholdAndHold() {
        let rules = SpeechRules.standard
        #expect(rules.isSpeech(level: 60) && !rules.isSpeech(level: 61))
        #expect(rules.isSpeaking(lastSpeech: .origin, now: .origin + .milliseconds(600))
                && !rules.isSpeaking(lastSpeech: .origin, now: .origin + .milliseconds(600) + .nanoseconds(1)))
    }
}
