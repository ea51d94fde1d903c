/// Reads a whole WAV file into memory: PCM 8/16/24/32-bit integer and 32-bit float, any rate and channel count.
///
/// Accepts `WAVE_FORMAT_PCM` (1), `WAVE_FORMAT_IEEE_FLOAT` (3) and `WAVE_FORMAT_EXTENSIBLE` (0xFFFE) with a PCM or
/// float sub-format; skips unknown chunks. A `data` size of 0 or 0xFFFFFFFF with samples after it (a file whose writer
/// was interrupted, or a stream) is read up to the end of the file.
public final class WAVReader {
    /// The file's sample format.
    public let format: WAVFormat
    /// The path the file was read from (for error messages).
    private let path: String
    /// The raw little-endian sample bytes of the `data` chunk, whole frames only.
    private let samples: [UInt8]

    /// Frames in the file.
    public var frameCount: Int { samples.count / format.bytesPerFrame }

    /// Reads and parses `path`.
    ///
    /// - Throws: `cannot open X: No such file or directory` (and other errno texts), `X is not a WAV file (no RIFF/WAVE header)`,
    ///   `X has an unsupported format: …` naming the format tag or bit depth, `X is truncated: …`.
    public init(path: String) throws(AudioIOError) {
        let file = try POSIXFile.openForReading(path)
        let bytes = try file.readToEnd()
        try file.close()
        self.path = path
        (format, samples) = try WAVReader.parse(bytes, path: path)
    }

    /// The whole file as mono Int16 at 48 kHz: channels averaged, resampled with libspeexdsp's resampler (quality 5) when the rate differs.
    ///
    /// The result has `frameCount * 48000 / sampleRate` samples (rounded), aligned with the input (the resampler's delay is
    /// removed and its tail flushed).
    public func readAllMono48k() throws(AudioIOError) -> [Int16] {
        let mono = monoSamples()
        let outputRate = 48_000
        guard format.sampleRate != outputRate else { return mono }
        let resampler = try Resampler(from: format.sampleRate, to: outputRate, quality: 5)
        resampler.skipZeros()
        let expected = Int((Int64(mono.count) * Int64(outputRate) + Int64(format.sampleRate) / 2) / Int64(format.sampleRate))
        let padded = mono + [Int16](repeating: 0, count: resampler.inputLatency + 16)
        var output = [Int16](repeating: 0, count: expected + outputRate / 100 + resampler.inputLatency * 2 + 64)
        var consumed = 0
        var produced = 0
        padded.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                while consumed < input.count && produced < out.count {
                    let step = resampler.process(UnsafeBufferPointer(rebasing: input[consumed...]),
                                                 into: UnsafeMutableBufferPointer(rebasing: out[produced...]))
                    consumed += step.consumed
                    produced += step.produced
                    if step.consumed == 0 && step.produced == 0 { break }
                }
            }
        }
        output.removeLast(output.count - min(expected, produced))
        if output.count < expected { output += [Int16](repeating: 0, count: expected - output.count) }
        return output
    }

    // MARK: - Decoding

    /// Channels averaged, converted to Int16 (rounded, clamped).
    private func monoSamples() -> [Int16] {
        let channels = format.channels
        let bytesPerSample = format.bitsPerSample / 8
        let frames = frameCount
        var mono = [Int16](repeating: 0, count: frames)
        samples.withUnsafeBytes { raw in
            for frame in 0..<frames {
                var sum: Float = 0
                let base = frame * format.bytesPerFrame
                for channel in 0..<channels {
                    sum += sample(raw, at: base + channel * bytesPerSample)
                }
                let scaled = (sum / Float(channels) * 32768).rounded()
                mono[frame] = Int16(max(-32768, min(32767, scaled)))
            }
        }
        return mono
    }

    /// One sample as a float in [-1, 1).
    @inline(__always)
    private func sample(_ raw: UnsafeRawBufferPointer, at offset: Int) -> Float {
        switch (format.bitsPerSample, format.isFloat) {
        case (8, false):
            return (Float(raw[offset]) - 128) / 128
        case (16, false):
            return Float(Int16(bitPattern: UInt16(raw[offset]) | UInt16(raw[offset + 1]) << 8)) / 32768
        case (24, false):
            let unsigned = UInt32(raw[offset]) << 8 | UInt32(raw[offset + 1]) << 16 | UInt32(raw[offset + 2]) << 24
            return Float(Int32(bitPattern: unsigned) >> 8) / 8_388_608
        case (32, false):
            return Float(Int32(bitPattern: WAVReader.uint32(raw, offset))) / 2_147_483_648
        default: // (32, true), checked by parse
            let value = Float(bitPattern: WAVReader.uint32(raw, offset))
            return value.isFinite ? value : 0
        }
    }

    // MARK: - Parsing

    private static func parse(_ bytes: [UInt8], path: String) throws(AudioIOError) -> (WAVFormat, [UInt8]) {
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8) else {
            if bytes.count < 12 && bytes.count > 0 && "RIFF".utf8.starts(with: bytes.prefix(4)) {
                throw AudioIOError("\(path) is truncated: \(bytes.count) bytes, too short for a RIFF/WAVE header")
            }
            throw AudioIOError("\(path) is not a WAV file (no RIFF/WAVE header)")
        }
        var format: WAVFormat?
        var offset = 12
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let size = Int(uint32(bytes, offset + 4))
            let body = offset + 8
            switch id {
            case "fmt ":
                guard size >= 16, body + 16 <= bytes.count else {
                    throw AudioIOError("\(path) is truncated: the fmt chunk is incomplete")
                }
                format = try parseFormat(bytes, at: body, size: min(size, bytes.count - body), path: path)
            case "data":
                guard let format else { throw AudioIOError("\(path) is not a valid WAV file: data chunk before fmt chunk") }
                let available = bytes.count - body
                var length = size
                if size == 0 || size == Int(UInt32.max) {
                    length = available
                } else if size > available {
                    throw AudioIOError("\(path) is truncated: the data chunk declares \(size) bytes but only \(available) are present")
                }
                length -= length % format.bytesPerFrame
                return (format, Array(bytes[body..<body + length]))
            default:
                break
            }
            offset = body + size + (size & 1)
        }
        if format == nil {
            throw AudioIOError("\(path) is truncated: no fmt chunk")
        }
        throw AudioIOError("\(path) is truncated: no data chunk")
    }

    private static func parseFormat(_ raw: [UInt8], at body: Int, size: Int, path: String)
        throws(AudioIOError) -> WAVFormat {
        var tag = uint16(raw, body)
        let channels = Int(uint16(raw, body + 2))
        let sampleRate = Int(uint32(raw, body + 4))
        let blockAlign = Int(uint16(raw, body + 12))
        let bits = Int(uint16(raw, body + 14))
        if tag == 0xFFFE {
            // WAVE_FORMAT_EXTENSIBLE: cbSize(2) validBits(2) channelMask(4) subFormat GUID(16) whose first two bytes are the tag.
            guard size >= 40 else { throw AudioIOError("\(path) is truncated: the extensible fmt chunk is incomplete") }
            tag = uint16(raw, body + 24)
        }
        let isFloat: Bool
        switch tag {
        case 1:
            guard [8, 16, 24, 32].contains(bits) else {
                throw AudioIOError("\(path) has an unsupported format: \(bits)-bit integer PCM (8, 16, 24 and 32 are supported)")
            }
            isFloat = false
        case 3:
            guard bits == 32 else {
                throw AudioIOError("\(path) has an unsupported format: \(bits)-bit float (only 32-bit float is supported)")
            }
            isFloat = true
        default:
            throw AudioIOError("\(path) has an unsupported format: format tag \(formatTagName(tag)) (only PCM and IEEE float are supported)")
        }
        guard channels > 0 else { throw AudioIOError("\(path) has an unsupported format: 0 channels") }
        guard sampleRate > 0 else { throw AudioIOError("\(path) has an unsupported format: sample rate 0") }
        let format = WAVFormat(sampleRate: sampleRate, channels: channels, bitsPerSample: bits, isFloat: isFloat)
        guard blockAlign == format.bytesPerFrame else {
            throw AudioIOError("\(path) has an unsupported format: block align \(blockAlign) for \(channels) × \(bits)-bit samples")
        }
        return format
    }

    private static func formatTagName(_ tag: UInt16) -> String {
        let hex = String(tag, radix: 16, uppercase: true)
        let code = "0x" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        switch tag {
        case 2: return code + " (Microsoft ADPCM)"
        case 6: return code + " (A-law)"
        case 7: return code + " (µ-law)"
        case 0x11: return code + " (IMA ADPCM)"
        case 0x55: return code + " (MP3)"
        default: return code
        }
    }

    @inline(__always)
    private static func uint16(_ raw: [UInt8], _ offset: Int) -> UInt16 {
        UInt16(raw[offset]) | UInt16(raw[offset + 1]) << 8
    }

    @inline(__always)
    private static func uint32(_ raw: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(raw[offset]) | UInt32(raw[offset + 1]) << 8 | UInt32(raw[offset + 2]) << 16 | UInt32(raw[offset + 3]) << 24
    }

    @inline(__always)
    private static func uint32(_ raw: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(raw[offset]) | UInt32(raw[offset + 1]) << 8 | UInt32(raw[offset + 2]) << 16 | UInt32(raw[offset + 3]) << 24
    }
}
