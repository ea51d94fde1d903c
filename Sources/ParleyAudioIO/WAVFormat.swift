/// The sample format of a WAV file's `fmt ` chunk.
public struct WAVFormat: Equatable, Sendable {
    /// Frames per second.
    public var sampleRate: Int
    /// Interleaved channels per frame.
    public var channels: Int
    /// Bits per sample: 8, 16, 24 or 32 (integer) or 32 (float).
    public var bitsPerSample: Int
    /// Whether samples are IEEE float (format tag 3) rather than integer PCM (tag 1).
    public var isFloat: Bool

    /// Creates a format.
    public init(sampleRate: Int, channels: Int, bitsPerSample: Int, isFloat: Bool) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = bitsPerSample
        self.isFloat = isFloat
    }

    /// Bytes per interleaved frame (the `block align`).
    var bytesPerFrame: Int { channels * bitsPerSample / 8 }
}

/// Byte layout of the canonical 44-byte header written by `WAVWriter`.
///
/// ```
///  0 "RIFF"  4 riffSize(u32 = 36 + dataSize)  8 "WAVE"
/// 12 "fmt "  16 16(u32)  20 1(u16 PCM)  22 channels(u16)  24 rate(u32)  28 byteRate(u32)  32 blockAlign(u16)  34 bits(u16)
/// 36 "data"  40 dataSize(u32)  44 samples…
/// ```
enum WAVHeader {
    static let size = 44
    static let riffSizeOffset = 4
    static let dataSizeOffset = 40

    /// The 44 header bytes for 16-bit PCM with `dataBytes` of samples.
    static func canonical(sampleRate: Int, channels: Int, dataBytes: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        bytes += Array("RIFF".utf8)
        appendUInt32(&bytes, riffSize(dataBytes: dataBytes))
        bytes += Array("WAVE".utf8)
        bytes += Array("fmt ".utf8)
        appendUInt32(&bytes, 16)
        appendUInt16(&bytes, 1)
        appendUInt16(&bytes, UInt16(channels))
        appendUInt32(&bytes, UInt32(sampleRate))
        appendUInt32(&bytes, UInt32(sampleRate * channels * 2))
        appendUInt16(&bytes, UInt16(channels * 2))
        appendUInt16(&bytes, 16)
        bytes += Array("data".utf8)
        appendUInt32(&bytes, clampedSize(dataBytes))
        return bytes
    }

    /// The RIFF chunk size for `dataBytes` of samples, clamped to UInt32 (a file over 4 GiB keeps 0xFFFFFFFF,
    /// which `WAVReader` reads as "up to the end of the file").
    static func riffSize(dataBytes: Int) -> UInt32 { clampedSize(36 + dataBytes) }

    static func clampedSize(_ value: Int) -> UInt32 { UInt32(min(value, Int(UInt32.max))) }

    static func appendUInt16(_ bytes: inout [UInt8], _ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    static func appendUInt32(_ bytes: inout [UInt8], _ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }
}
