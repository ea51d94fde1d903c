import COpus
import ParleyMedia

/// 20 ms at 48 kHz mono.
let frameSize = 960
/// The output buffer every encode writes into (libopus's recommended maximum).
let maxPacket = 4_000
/// Frames per timed block. Wrapper and direct blocks alternate (A B B A …), so load from other processes on this
/// shared machine, which drifts over seconds, falls on both paths alike.
let blockFrames = 50

/// The packets of one encode run, back to back in one buffer, so decode runs read them without allocating.
struct PacketTrain {
    var bytes: [UInt8]
    var offsets: [Int]  // packet i is bytes[offsets[i] ..< offsets[i + 1]]

    init(frames: Int) {
        bytes = [UInt8](repeating: 0, count: frames * maxPacket)
        offsets = [Int](repeating: 0, count: frames + 1)
    }

    /// FNV-1a over the packets, to check both paths produce the same bitstream.
    var checksum: UInt64 {
        var h: UInt64 = 0xcbf29ce484222325
        for b in bytes[0..<offsets[offsets.count - 1]] { h = (h ^ UInt64(b)) &* 0x100000001b3 }
        return h
    }
}

/// Encoder settings of the benchmark: VOIP, 32 kbit/s, FEC on at 10 % expected loss, the chosen complexity.
func makeWrappedEncoder(complexity: Int32) throws(OpusError) -> OpusEncoder {
    let encoder = try OpusEncoder(sampleRate: 48_000, channels: 1, application: .voip)
    try encoder.setComplexity(complexity)
    try encoder.setBitrate(32_000)
    try encoder.setInbandFEC(true)
    try encoder.setExpectedPacketLoss(percent: 10)
    return encoder
}

/// The same settings on a raw `OpusEncoder *`.
func makeDirectEncoder(complexity: Int32) -> OpaquePointer {
    var error: Int32 = 0
    guard let encoder = opus_encoder_create(48_000, 1, OPUS_APPLICATION_VOIP, &error), error == OPUS_OK else { fatalError("opus_encoder_create: \(error)") }
    precondition(parley_opus_set_complexity(encoder, complexity) == OPUS_OK)
    precondition(parley_opus_set_bitrate(encoder, 32_000) == OPUS_OK)
    precondition(parley_opus_set_inband_fec(encoder, 1) == OPUS_OK)
    precondition(parley_opus_set_packet_loss_perc(encoder, 10) == OPUS_OK)
    return encoder
}

/// Thread CPU nanoseconds spent by each path in one round.
struct RoundTimes {
    var wrapper: Int64 = 0
    var direct: Int64 = 0
}

/// One round of encoding `frames` frames of `signal` (repeating it) through a fresh wrapper encoder into `wrapped` and a
/// fresh raw encoder into `direct`, block by block, alternating which path goes first.
func encodeRound(_ signal: [Int16], frames: Int, complexity: Int32, wrapped: inout PacketTrain, direct: inout PacketTrain) throws -> RoundTimes {
    let encoder = try makeWrappedEncoder(complexity: complexity)
    let raw = makeDirectEncoder(complexity: complexity)
    defer { opus_encoder_destroy(raw) }
    let signalFrames = signal.count / frameSize
    var times = RoundTimes()
    try signal.withUnsafeBufferPointer { pcm in
        try wrapped.bytes.withUnsafeMutableBytes { wrappedOut in
            try direct.bytes.withUnsafeMutableBytes { directOut in
                var wrappedAt = 0, directAt = 0
                for (block, first) in stride(from: 0, to: frames, by: blockFrames).enumerated() {
                    let range = first..<min(frames, first + blockFrames)
                    for wrapperTurn in block % 2 == 0 ? [true, false] : [false, true] {
                        let start = threadCPUNanoseconds()
                        if wrapperTurn {
                            for f in range {
                                let s = (f % signalFrames) * frameSize
                                let input = UnsafeBufferPointer(rebasing: pcm[s..<(s + frameSize)])
                                wrappedAt += try encoder.encode(input, frameSize: frameSize, into: UnsafeMutableRawBufferPointer(rebasing: wrappedOut[wrappedAt..<(wrappedAt + maxPacket)]))
                                wrapped.offsets[f + 1] = wrappedAt
                            }
                            times.wrapper += threadCPUNanoseconds() - start
                        } else {
                            let base = directOut.baseAddress!.assumingMemoryBound(to: UInt8.self)
                            for f in range {
                                let n = opus_encode(raw, pcm.baseAddress! + (f % signalFrames) * frameSize, Int32(frameSize), base + directAt, Int32(maxPacket))
                                precondition(n > 0, "opus_encode: \(n)")
                                directAt += Int(n)
                                direct.offsets[f + 1] = directAt
                            }
                            times.direct += threadCPUNanoseconds() - start
                        }
                    }
                }
            }
        }
    }
    return times
}

/// One round of decoding every packet of `train` through a fresh wrapper decoder and a fresh raw decoder,
/// block by block, alternating which path goes first.
func decodeRound(_ train: PacketTrain, into pcm: inout [Int16]) throws -> RoundTimes {
    let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
    var error: Int32 = 0
    guard let raw = opus_decoder_create(48_000, 1, &error), error == OPUS_OK else { fatalError("opus_decoder_create: \(error)") }
    defer { opus_decoder_destroy(raw) }
    let frames = train.offsets.count - 1
    var times = RoundTimes()
    try train.bytes.withUnsafeBytes { bytes in
        try pcm.withUnsafeMutableBufferPointer { out in
            let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            for (block, first) in stride(from: 0, to: frames, by: blockFrames).enumerated() {
                let range = first..<min(frames, first + blockFrames)
                for wrapperTurn in block % 2 == 0 ? [true, false] : [false, true] {
                    let start = threadCPUNanoseconds()
                    if wrapperTurn {
                        for f in range {
                            let n = try decoder.decode(UnsafeRawBufferPointer(rebasing: bytes[train.offsets[f]..<train.offsets[f + 1]]), into: out)
                            precondition(n == frameSize)
                        }
                        times.wrapper += threadCPUNanoseconds() - start
                    } else {
                        for f in range {
                            let at = train.offsets[f]
                            let n = opus_decode(raw, base + at, Int32(train.offsets[f + 1] - at), out.baseAddress!, Int32(out.count), 0)
                            precondition(n == Int32(frameSize), "opus_decode: \(n)")
                        }
                        times.direct += threadCPUNanoseconds() - start
                    }
                }
            }
        }
    }
    return times
}
