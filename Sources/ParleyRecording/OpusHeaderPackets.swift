/// The two header packets every Ogg Opus stream starts with (RFC 7845 §5): the identification header `OpusHead`
/// and the comment header `OpusTags`.
public enum OpusHeaderPackets {
    /// Samples the decoder drops at the start (RFC 7845 §4.2): libopus's encoder delay at 48 kHz, what its own
    /// encoders (ours and the clients') put before the first real sample.
    public static let preSkip: UInt16 = 312

    /// `OpusHead` (RFC 7845 §5.1), 19 bytes: mono or stereo, channel mapping family 0.
    ///
    ///     0               1               2               3
    ///     'O' 'p' 'u' 's' 'H' 'e' 'a' 'd'                         magic
    ///     version = 1 | channels | pre-skip (LE u16)             |
    ///     input sample rate (LE u32)                              |
    ///     output gain (LE i16, Q7.8 dB) | mapping family = 0      |
    public static func head(channels: UInt8 = 1, preSkip: UInt16 = preSkip, inputSampleRate: UInt32 = 48_000) -> [UInt8] {
        var b: [UInt8] = Array("OpusHead".utf8)
        b.append(1)
        b.append(channels)
        b.append(UInt8(preSkip & 0xFF)); b.append(UInt8(preSkip >> 8))
        for shift in stride(from: 0, to: 32, by: 8) { b.append(UInt8((inputSampleRate >> UInt32(shift)) & 0xFF)) }
        b.append(0); b.append(0)  // output gain 0 dB
        b.append(0)               // mapping family 0: mono or stereo, no table
        return b
    }

    /// `OpusTags` (RFC 7845 §5.2): the vendor string and `comments` ("KEY=value"), each a little-endian length then UTF-8.
    public static func tags(vendor: String, comments: [String]) -> [UInt8] {
        var b: [UInt8] = Array("OpusTags".utf8)
        func appendString(_ s: String) {
            let bytes = Array(s.utf8)
            for shift in stride(from: 0, to: 32, by: 8) { b.append(UInt8((UInt32(bytes.count) >> UInt32(shift)) & 0xFF)) }
            b.append(contentsOf: bytes)
        }
        appendString(vendor)
        for shift in stride(from: 0, to: 32, by: 8) { b.append(UInt8((UInt32(comments.count) >> UInt32(shift)) & 0xFF)) }
        for c in comments { appendString(c) }
        return b
    }
}
