import Foundation
import Testing
import ParleyMedia

/// Encode → decode round trips: fidelity on a speech-like signal, stereo, every frame size, bit-exactness of the range coder.
@Suite struct OpusRoundTripTests {
    @Test func speechAt32kbitsSurvivesWithLevelAndWaveform() throws {
        let pcm = OpusTestSignal.speech(seconds: 4)
        let encoder = try OpusEncoder(sampleRate: 48_000, channels: 1, application: .voip)
        try encoder.setBitrate(32_000)
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
        let (packets, decoded) = try opusRoundTrip(pcm, encoder: encoder, decoder: decoder, frameSize: 960)
        #expect(packets.count == 200)

        // The decoded signal lags by the codec delay: find it by cross-correlation over 0..<960 on 0.25 s.
        let found = OpusTestSignal.bestLag(original: pcm, decoded: decoded, window: 48_000..<60_000, lags: 0..<960)
        let middle = 48_000..<144_000  // 1 s … 3 s
        let aligned = decoded[(middle.lowerBound + found.lag)..<(middle.upperBound + found.lag)]
        let ratio = 10 * log10(OpusTestSignal.energy(aligned) / OpusTestSignal.energy(pcm[middle]))
        let correlation = OpusTestSignal.correlation(pcm[middle], aligned)
        // Measured with libopus 1.3.1 (hybrid FB, ~80 B/packet): lag 310 vs lookahead 312, 0.0 dB, correlation 0.93.
        #expect(abs(found.lag - encoder.lookahead) <= 24, "lag \(found.lag) far from lookahead \(encoder.lookahead)")
        #expect(abs(ratio) <= 1.5, "energy ratio \(ratio) dB")
        #expect(correlation >= 0.9, "correlation \(correlation)")
    }

    @Test func stereoRoundTripKeepsBothChannels() throws {
        let pcm = OpusTestSignal.speech(seconds: 2, channels: 2)
        let encoder = try OpusEncoder(sampleRate: 48_000, channels: 2, application: .audio)
        try encoder.setBitrate(64_000)
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 2)
        let (packets, decoded) = try opusRoundTrip(pcm, encoder: encoder, decoder: decoder, frameSize: 960)
        #expect(packets.count == 100)
        #expect(decoded.count == pcm.count)
        for c in 0..<2 {
            let original = OpusTestSignal.channel(c, of: pcm, channels: 2)
            let output = OpusTestSignal.channel(c, of: decoded, channels: 2)
            let found = OpusTestSignal.bestLag(original: original, decoded: output, window: 24_000..<36_000, lags: 0..<960)
            let middle = 24_000..<72_000
            let aligned = output[(middle.lowerBound + found.lag)..<(middle.upperBound + found.lag)]
            let correlation = OpusTestSignal.correlation(original[middle], aligned)
            let ratio = 10 * log10(OpusTestSignal.energy(aligned) / OpusTestSignal.energy(original[middle]))
            // Measured with libopus 1.3.1 at 64 kbit/s (CELT): lag 312, correlation 0.99 on both channels.
            #expect(correlation >= 0.9, "channel \(c) correlation \(correlation)")
            #expect(abs(ratio) <= 1.5, "channel \(c) energy ratio \(ratio) dB")
        }
        // The channels stay distinct (the right one is pitched a fifth higher).
        let left = OpusTestSignal.channel(0, of: decoded, channels: 2), right = OpusTestSignal.channel(1, of: decoded, channels: 2)
        #expect(OpusTestSignal.correlation(left[24_000..<72_000], right[24_000..<72_000]) < 0.5)
    }

    /// 10, 20, 40 and 60 ms at 48 kHz.
    @Test(arguments: [480, 960, 1_920, 2_880])
    func everyFrameSizeDecodesToItsLength(frameSize: Int) throws {
        let pcm = OpusTestSignal.speech(seconds: 0.6)  // 28 800 samples: a whole number of frames of every size
        let encoder = try OpusEncoder()
        try encoder.setBitrate(32_000)
        let decoder = try OpusDecoder()
        let (packets, decoded) = try opusRoundTrip(pcm, encoder: encoder, decoder: decoder, frameSize: frameSize)
        #expect(packets.count == pcm.count / frameSize)
        #expect(decoded.count == pcm.count)
        for packet in packets {
            #expect(packet.withUnsafeBytes { decoder.samples(in: $0) } == frameSize)
        }
        #expect(try decoder.lastPacketDuration() == frameSize)
    }

    /// 2.5 and 5 ms frames are CELT-only; they too come back at their length.
    @Test(arguments: [120, 240])
    func shortCELTFramesDecodeToTheirLength(frameSize: Int) throws {
        let pcm = OpusTestSignal.speech(seconds: 0.1)
        let encoder = try OpusEncoder(application: .restrictedLowDelay)
        let decoder = try OpusDecoder()
        let (packets, _) = try opusRoundTrip(pcm, encoder: encoder, decoder: decoder, frameSize: frameSize)
        #expect(packets.count == pcm.count / frameSize)
    }

    @Test func decoderAndEncoderAgreeOnFinalRange() throws {
        let pcm = OpusTestSignal.speech(seconds: 0.5)
        let encoder = try OpusEncoder()
        let decoder = try OpusDecoder()
        var packet = [UInt8](repeating: 0, count: 1_500)
        var out = [Int16](repeating: 0, count: 960)
        for f in 0..<25 {
            let n = try pcm.withUnsafeBufferPointer { p in
                try packet.withUnsafeMutableBytes { try encoder.encode(UnsafeBufferPointer(rebasing: p[(f * 960)...]), frameSize: 960, into: $0) }
            }
            let sent = try encoder.finalRange()
            _ = try packet.withUnsafeBytes { b in try out.withUnsafeMutableBufferPointer { try decoder.decode(UnsafeRawBufferPointer(rebasing: b[..<n]), into: $0) } }
            #expect(try decoder.finalRange() == sent, "frame \(f)")
        }
    }

    @Test func resetMakesEncodingRepeatable() throws {
        let pcm = OpusTestSignal.speech(seconds: 0.2)
        let encoder = try OpusEncoder()
        func encodeAll() throws -> [[UInt8]] {
            var packets: [[UInt8]] = []
            var packet = [UInt8](repeating: 0, count: 1_500)
            for f in 0..<10 {
                let n = try pcm.withUnsafeBufferPointer { p in
                    try packet.withUnsafeMutableBytes { try encoder.encode(UnsafeBufferPointer(rebasing: p[(f * 960)...]), frameSize: 960, into: $0) }
                }
                packets.append(Array(packet[..<n]))
            }
            return packets
        }
        let first = try encodeAll()
        try encoder.reset()
        #expect(try encodeAll() == first)
    }
}
