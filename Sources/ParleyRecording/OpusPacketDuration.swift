/// How many 48 kHz samples an Opus packet decodes to, from its TOC byte and frame count (RFC 6716 §3.1), without
/// decoding it: what a recorder needs to place packets on a timeline and write Ogg granule positions.
public enum OpusPacketDuration {
    /// Samples at 48 kHz of one frame of each configuration (the TOC's top five bits).
    /// 0–11 SILK 10/20/40/60 ms, 12–15 hybrid 10/20 ms, 16–31 CELT 2.5/5/10/20 ms.
    static func frameSamples(config: Int) -> Int {
        switch config {
        case 0...11: [480, 960, 1920, 2880][config & 3]
        case 12...15: [480, 960][config & 1]
        default: [120, 240, 480, 960][config & 3]
        }
    }

    /// The packet's duration in 48 kHz samples, or nil for a packet that is empty, malformed (a code-3 packet without
    /// its count byte, or with no frames) or longer than Opus allows (120 ms).
    public static func samples(_ packet: UnsafeRawBufferPointer) -> Int? {
        guard let toc = packet.first else { return nil }
        let frames: Int
        switch toc & 0x03 {
        case 0: frames = 1
        case 1, 2: frames = 2
        default:
            guard packet.count >= 2 else { return nil }
            frames = Int(packet[1] & 0x3F)
        }
        let total = frames * frameSamples(config: Int(toc >> 3))
        guard frames > 0, total <= 5_760 else { return nil }
        return total
    }

    /// `samples(_:)` over an array (tests, headers).
    public static func samples(_ packet: [UInt8]) -> Int? {
        packet.withUnsafeBytes { samples($0) }
    }
}
