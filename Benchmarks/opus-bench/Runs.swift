import COpus
import ParleyMedia

/// 20 ms at 48 kHz mono.
let frameSize = 960
/// The output buffer every encode writes into (libopus's recommended maximum).
let maxPacket = 4_000

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

/// Encodes `frames` frames of `signal` (repeating it) through the wrapper into `train`; returns thread CPU ns.
func encodeWrapped(_ signal: [Int16], frames: Int, complexity: Int32, into train: inout PacketTrain) throws(OpusError) -> Int64 {
    let encoder = try makeWrappedEncoder(complexity: complexity)
    let signalFrames = signal.count / frameSize
    var result: Result<Int64, OpusError> = .success(0)
    signal.withUnsafeBufferPointer { pcm in
        train.bytes.withUnsafeMutableBytes { out in
            train.offsets.withUnsafeMutableBufferPointer { offsets in
                let start = threadCPUNanoseconds()
                var at = 0
                do throws(OpusError) {
                    for f in 0..<frames {
                        let input = UnsafeBufferPointer(rebasing: pcm[((f % signalFrames) * frameSize)..<((f % signalFrames + 1) * frameSize)])
                        at += try encoder.encode(input, frameSize: frameSize, into: UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + maxPacket)]))
                        offsets[f + 1] = at
                    }
                    result = .success(threadCPUNanoseconds() - start)
                } catch { result = .failure(error) }
            }
        }
    }
    return try result.get()
}

/// The same encode with `opus_encode` on a raw handle.
func encodeDirect(_ signal: [Int16], frames: Int, complexity: Int32, into train: inout PacketTrain) -> Int64 {
    let encoder = makeDirectEncoder(complexity: complexity)
    defer { opus_encoder_destroy(encoder) }
    let signalFrames = signal.count / frameSize
    return signal.withUnsafeBufferPointer { pcm in
        train.bytes.withUnsafeMutableBytes { out in
            train.offsets.withUnsafeMutableBufferPointer { offsets in
                let base = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
                let start = threadCPUNanoseconds()
                var at = 0
                for f in 0..<frames {
                    let n = opus_encode(encoder, pcm.baseAddress! + (f % signalFrames) * frameSize, Int32(frameSize), base + at, Int32(maxPacket))
                    precondition(n > 0, "opus_encode: \(n)")
                    at += Int(n)
                    offsets[f + 1] = at
                }
                return threadCPUNanoseconds() - start
            }
        }
    }
}

/// Decodes every packet of `train` through the wrapper into `pcm`; returns thread CPU ns.
func decodeWrapped(_ train: PacketTrain, into pcm: inout [Int16]) throws(OpusError) -> Int64 {
    let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
    var result: Result<Int64, OpusError> = .success(0)
    train.bytes.withUnsafeBytes { bytes in
        pcm.withUnsafeMutableBufferPointer { out in
            let start = threadCPUNanoseconds()
            do throws(OpusError) {
                for f in 0..<(train.offsets.count - 1) {
                    let n = try decoder.decode(UnsafeRawBufferPointer(rebasing: bytes[train.offsets[f]..<train.offsets[f + 1]]), into: out)
                    precondition(n == frameSize)
                }
                result = .success(threadCPUNanoseconds() - start)
            } catch { result = .failure(error) }
        }
    }
    return try result.get()
}

/// The same decode with `opus_decode` on a raw handle.
func decodeDirect(_ train: PacketTrain, into pcm: inout [Int16]) -> Int64 {
    var error: Int32 = 0
    guard let decoder = opus_decoder_create(48_000, 1, &error), error == OPUS_OK else { fatalError("opus_decoder_create: \(error)") }
    defer { opus_decoder_destroy(decoder) }
    return train.bytes.withUnsafeBytes { bytes in
        pcm.withUnsafeMutableBufferPointer { out in
            let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let start = threadCPUNanoseconds()
            for f in 0..<(train.offsets.count - 1) {
                let at = train.offsets[f]
                let n = opus_decode(decoder, base + at, Int32(train.offsets[f + 1] - at), out.baseAddress!, Int32(out.count), 0)
                precondition(n == Int32(frameSize), "opus_decode: \(n)")
            }
            return threadCPUNanoseconds() - start
        }
    }
}
