import ParleyRecording
import Testing

/// RFC 6716 §3.1: the TOC byte's configuration (5 bits), stereo flag, and frame-count code.
struct OpusPacketDurationTests {
    @Test(arguments: [
        ([0x08, 0xAA] as [UInt8], 960),          // config 1: SILK NB 20 ms, code 0
        ([0x00, 0xAA], 480),                     // config 0: SILK NB 10 ms
        ([0x18, 0xAA], 2_880),                   // config 3: SILK NB 60 ms
        ([0x78, 0xAA], 960),                     // config 15: hybrid FB 20 ms
        ([0x70, 0xAA], 480),                     // config 14: hybrid FB 10 ms
        ([0xF8, 0xFF, 0xFE], 960),               // config 31: CELT FB 20 ms (the well-known silence frame)
        ([0xE0], 120),                           // config 28: CELT FB 2.5 ms, an empty frame
        ([0xF9, 0x01, 0x02], 1_920),             // code 1: two 20 ms frames
        ([0xFA, 0x01, 0x02], 1_920),             // code 2: two frames of different sizes
        ([0xFB, 0x06], 5_760),                   // code 3: six 20 ms frames = 120 ms
        ([0x1B, 0x02], 5_760),                   // code 3: two SILK 60 ms frames
    ])
    func durations(packet: [UInt8], samples: Int) {
        #expect(OpusPacketDuration.samples(packet) == samples)
    }

    @Test(arguments: [
        [] as [UInt8],        // empty
        [0xFB],               // code 3 without its count byte
        [0xFB, 0x00],         // code 3 with no frames
        [0xFB, 0x07],         // seven 20 ms frames: 140 ms, over Opus's 120 ms
        [0x1B, 0x03],         // three 60 ms frames
    ])
    func malformed(packet: [UInt8]) {
        #expect(OpusPacketDuration.samples(packet) == nil)
    }
}

/// RFC 7845 §4.1: gaps are covered by packets of the previous configuration with zero-length frames.
struct OpusGapPacketsTests {
    @Test func aGapAfterTwentyMillisecondSILKUsesItsConfiguration() {
        // SILK WB 20 ms (config 9), mono: 100 ms gap → one code-3 packet of five empty frames.
        #expect(OpusGapPackets.covering(samples: 4_800, after: 0x48) == [[0x4B, 5]])
        // One frame: the TOC alone (an empty code-0 frame).
        #expect(OpusGapPackets.covering(samples: 960, after: 0x48) == [[0x48]])
    }

    @Test func longGapsSplitAtOneHundredTwentyMilliseconds() {
        let packets = OpusGapPackets.covering(samples: 48_000, after: 0xF8)  // 1 s of CELT FB 20 ms
        #expect(packets.count == 9)  // 8 × 120 ms + 40 ms
        #expect(packets.allSatisfy { $0[0] == 0xFB })
        #expect(packets.map { OpusPacketDuration.samples($0)! }.reduce(0, +) == 48_000)
    }

    @Test func remaindersUseShorterCELTFrames() {
        // 20 ms frames, 37.5 ms gap: one 20 ms, then 10 + 5 + 2.5 ms CELT FB frames.
        let packets = OpusGapPackets.covering(samples: 1_800, after: 0xF8)
        #expect(packets == [[0xF8], [0xF0], [0xE8], [0xE0]])
        #expect(packets.map { OpusPacketDuration.samples($0)! }.reduce(0, +) == 1_800)
    }

    @Test func stereoStaysStereoAndNoTOCMeansCELT() {
        #expect(OpusGapPackets.covering(samples: 960, after: 0xFC) == [[0xFC]])
        #expect(OpusGapPackets.covering(samples: 1_920, after: nil) == [[0xFB, 2]])
        #expect(OpusGapPackets.covering(samples: 100, after: nil).isEmpty)  // under 2.5 ms: nothing
    }
}
