import Testing
import ParleyMedia

/// Misuse and malformed input: every case throws an `OpusError` with libopus's code, none crashes.
@Suite struct OpusMisuseTests {
    private func expectError(_ code: Int32, _ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("expected OpusError \(code), got success", sourceLocation: sourceLocation)
        } catch let error as OpusError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected OpusError \(code), got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: [44_100, 0, -48_000, 96_000] as [Int32])
    func unsupportedSampleRateIsRejected(rate: Int32) {
        expectError(OpusError.badArgumentCode) { _ = try OpusEncoder(sampleRate: rate) }
        expectError(OpusError.badArgumentCode) { _ = try OpusDecoder(sampleRate: rate) }
    }

    @Test(arguments: [0, 3, -1, 255])
    func unsupportedChannelCountIsRejected(channels: Int) {
        expectError(OpusError.badArgumentCode) { _ = try OpusEncoder(channels: channels) }
        expectError(OpusError.badArgumentCode) { _ = try OpusDecoder(channels: channels) }
    }

    @Test func outOfRangeSettingsAreRejected() throws {
        let encoder = try OpusEncoder()
        expectError(OpusError.badArgumentCode) { try encoder.setComplexity(11) }
        expectError(OpusError.badArgumentCode) { try encoder.setComplexity(-1) }
        expectError(OpusError.badArgumentCode) { try encoder.setExpectedPacketLoss(percent: 101) }
        expectError(OpusError.badArgumentCode) { try encoder.setBitrate(0) }  // rejected by libopus itself
        try encoder.setComplexity(10)
        try encoder.setBitrate(-1_000)  // OPUS_AUTO
    }

    @Test func messageNamesTheLibopusErrorAndTheContext() throws {
        do {
            _ = try OpusEncoder(sampleRate: 44_100)
            Issue.record("44.1 kHz accepted")
        } catch {
            #expect(error.message.hasPrefix("invalid argument: "), "\(error.message)")
            #expect(error.message.contains("44100"), "\(error.message)")
        }
    }

    /// 500 samples is no Opus frame; neither is 0 nor 120 ms (the wrapper takes 2.5…60 ms).
    @Test(arguments: [500, 0, -960, 959, 5_760])
    func wrongEncodeFrameSizeIsRejected(frameSize: Int) throws {
        let encoder = try OpusEncoder()
        let pcm = [Int16](repeating: 0, count: 6_000)
        var packet = [UInt8](repeating: 0, count: 1_500)
        expectError(OpusError.badArgumentCode) {
            _ = try pcm.withUnsafeBufferPointer { p in
                try packet.withUnsafeMutableBytes { o in try encoder.encode(p, frameSize: frameSize, into: o) }
            }
        }
    }

    @Test func encodeBuffersTooSmallAreRejected() throws {
        let stereo = try OpusEncoder(channels: 2)
        let pcm = [Int16](repeating: 0, count: 960)  // one channel's worth for a stereo encoder
        var packet = [UInt8](repeating: 0, count: 1_500)
        expectError(OpusError.badArgumentCode) {
            _ = try pcm.withUnsafeBufferPointer { p in
                try packet.withUnsafeMutableBytes { o in try stereo.encode(p, frameSize: 960, into: o) }
            }
        }
        let mono = try OpusEncoder()
        expectError(OpusError.badArgumentCode) {  // empty output
            _ = try pcm.withUnsafeBufferPointer { p in try mono.encode(p, frameSize: 960, into: UnsafeMutableRawBufferPointer(start: nil, count: 0)) }
        }
        let speech = OpusTestSignal.speech(seconds: 0.02)
        // A 1-byte output buffer is not an error to libopus: it writes a TOC-only packet (read by decoders as a lost frame).
        var tiny = [UInt8](repeating: 0, count: 1)
        let n = try speech.withUnsafeBufferPointer { p in try tiny.withUnsafeMutableBytes { o in try mono.encode(p, frameSize: 960, into: o) } }
        #expect(n == 1)
    }

    @Test func emptyPacketIsRejected() throws {
        let decoder = try OpusDecoder()
        var pcm = [Int16](repeating: 0, count: 5_760)
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        expectError(OpusError.badArgumentCode) { _ = try pcm.withUnsafeMutableBufferPointer { o in try decoder.decode(empty, into: o) } }
        expectError(OpusError.badArgumentCode) {
            _ = try pcm.withUnsafeMutableBufferPointer { o in try decoder.decodeFEC(from: empty, frameSize: 960, into: o) }
        }
        #expect(decoder.samples(in: empty) == nil)
    }

    /// Malformed TOC sequences (RFC 6716 §3.2) that libopus must reject, with the sample count their header alone
    /// claims (`samples(in:)` reads only the TOC and frame-count byte: nil where those are unreadable, zero or > 120 ms).
    @Test(arguments: [
        ([0x03, 0x00], nil),              // code 3 (arbitrary frame count), M = 0 frames
        ([0x03], nil),                    // code 3 without its frame-count byte
        ([0x01, 0xAA, 0xBB, 0xCC], 960),  // code 1 (two equal 10 ms SILK frames) with an odd payload length (3 bytes)
        ([0x02, 0xFC], 960),              // code 2 (two 10 ms frames) whose first frame's length (252) runs past the packet
        ([0xFB, 0x03, 0x00], 2_880),      // code 3, CELT 20 ms, M = 3 CBR frames sharing 1 byte (not a multiple of 3)
        ([0xFB, 0x3D], nil),              // code 3, 61 frames × 20 ms = 1.22 s > 120 ms
    ] as [([UInt8], Int?)])
    func malformedPacketIsRejected(bytes: [UInt8], headerSamples: Int?) throws {
        let decoder = try OpusDecoder()
        var pcm = [Int16](repeating: 0, count: 5_760)
        expectError(OpusError.invalidPacketCode) {
            _ = try bytes.withUnsafeBytes { b in
                try pcm.withUnsafeMutableBufferPointer { o in try decoder.decode(b, into: o) }
            }
        }
        #expect(bytes.withUnsafeBytes { decoder.samples(in: $0) } == headerSamples)
    }

    /// Random bytes either decode (any TOC is some configuration) or throw; nothing crashes and the count is sane.
    @Test func randomPacketsNeverCrash() throws {
        let decoder = try OpusDecoder()
        var pcm = [Int16](repeating: 0, count: 5_760)
        var rng: UInt64 = 0xBADC0FFEE
        var decodedCount = 0, rejected = 0
        for _ in 0..<2_000 {
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            let length = 1 + Int(rng >> 56) % 200
            var bytes = [UInt8](repeating: 0, count: length)
            for i in bytes.indices {
                rng = rng &* 6364136223846793005 &+ 1442695040888963407
                bytes[i] = UInt8(truncatingIfNeeded: rng >> 33)
            }
            do {
                let n = try bytes.withUnsafeBytes { b in
                    try pcm.withUnsafeMutableBufferPointer { o in try decoder.decode(b, into: o) }
                }
                #expect(n > 0 && n <= 5_760)
                #expect(bytes.withUnsafeBytes { decoder.samples(in: $0) } == n)
                decodedCount += 1
            } catch let error as OpusError {
                #expect(error.code == OpusError.invalidPacketCode || error.code == OpusError.bufferTooSmallCode, "\(error)")
                rejected += 1
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(decodedCount + rejected == 2_000)
        #expect(decodedCount > 0 && rejected > 0)
    }

    @Test func decodeBufferTooSmallForThePacketIsReported() throws {
        let encoder = try OpusEncoder()
        let pcm = OpusTestSignal.speech(seconds: 0.04)
        var packet = [UInt8](repeating: 0, count: 1_500)
        let n = try pcm.withUnsafeBufferPointer { p in try packet.withUnsafeMutableBytes { try encoder.encode(p, frameSize: 1_920, into: $0) } }
        let decoder = try OpusDecoder()
        var small = [Int16](repeating: 0, count: 960)  // 20 ms for a 40 ms packet
        expectError(OpusError.bufferTooSmallCode) {
            _ = try packet.withUnsafeBytes { b in
                try small.withUnsafeMutableBufferPointer { o in try decoder.decode(UnsafeRawBufferPointer(rebasing: b[..<n]), into: o) }
            }
        }
        var none = [Int16]()
        expectError(OpusError.badArgumentCode) {
            _ = try packet.withUnsafeBytes { b in
                try none.withUnsafeMutableBufferPointer { o in try decoder.decode(UnsafeRawBufferPointer(rebasing: b[..<n]), into: o) }
            }
        }
    }

    @Test func concealAndFECRejectBadFrameSizesAndShortBuffers() throws {
        let decoder = try OpusDecoder()
        var pcm = [Int16](repeating: 0, count: 960)
        let next: [UInt8] = [0xFC, 0xFF, 0xFE]  // any non-empty packet; the size checks come first
        for frameSize in [0, 500, 959, 6_000] {
            expectError(OpusError.badArgumentCode) { _ = try pcm.withUnsafeMutableBufferPointer { o in try decoder.conceal(frameSize: frameSize, into: o) } }
            expectError(OpusError.badArgumentCode) {
                _ = try next.withUnsafeBytes { b in
                    try pcm.withUnsafeMutableBufferPointer { o in try decoder.decodeFEC(from: b, frameSize: frameSize, into: o) }
                }
            }
        }
        // A 40 ms concealment into a 20 ms buffer.
        expectError(OpusError.badArgumentCode) { _ = try pcm.withUnsafeMutableBufferPointer { o in try decoder.conceal(frameSize: 1_920, into: o) } }
        let stereo = try OpusDecoder(channels: 2)
        expectError(OpusError.badArgumentCode) { _ = try pcm.withUnsafeMutableBufferPointer { o in try stereo.conceal(frameSize: 960, into: o) } }
    }

    /// A reset returns each coder to its fresh state: the same input then gives the same output as a new coder.
    @Test func resetRestoresTheFreshState() throws {
        let pcm = OpusTestSignal.speech(seconds: 0.2)
        func encodeAll(_ encoder: OpusEncoder) throws -> [[UInt8]] {
            var packets: [[UInt8]] = []
            for start in stride(from: 0, to: pcm.count - 959, by: 960) {
                var packet = [UInt8](repeating: 0, count: 1_500)
                let n = try pcm.withUnsafeBufferPointer { p in
                    try packet.withUnsafeMutableBytes { try encoder.encode(UnsafeBufferPointer(rebasing: p[start..<start + 960]), frameSize: 960, into: $0) }
                }
                packets.append(Array(packet[..<n]))
            }
            return packets
        }
        func decodeAll(_ decoder: OpusDecoder, _ packets: [[UInt8]]) throws -> [Int16] {
            var out: [Int16] = []
            var frame = [Int16](repeating: 0, count: 960)
            for p in packets {
                let n = try p.withUnsafeBytes { b in try frame.withUnsafeMutableBufferPointer { try decoder.decode(b, into: $0) } }
                out += frame[..<n]
            }
            return out
        }
        let fresh = try encodeAll(OpusEncoder())
        let encoder = try OpusEncoder()
        let first = try encodeAll(encoder)
        #expect(try encodeAll(encoder) != fresh, "an encoder that kept its state codes the same speech differently")
        try encoder.reset()
        #expect(try encodeAll(encoder) == fresh)
        #expect(first == fresh)

        let reference = try decodeAll(OpusDecoder(), fresh)
        let decoder = try OpusDecoder()
        _ = try decodeAll(decoder, fresh.reversed())
        try decoder.reset()
        #expect(try decodeAll(decoder, fresh) == reference)
    }
}
