/// Packets that stand for audio that never came — a loss, or a speaker's DTX pause — so a recorded track's granule
/// positions count every sample and its speakers line up: RFC 7845 §4.1 ("Repairing Gaps in Real-time Streams").
/// Each is a TOC byte with the previous packet's configuration (so the decoder conceals with the mode, bandwidth and
/// frame size it was in) and frames of zero bytes, which every decoder plays as packet-loss concealment — a fade into
/// silence. Gaps are multiples of 2.5 ms (120 samples at 48 kHz), as every Opus duration is.
public enum OpusGapPackets {
    /// CELT fullband 20 ms: the configuration a gap before any packet (a track's lead-in) uses.
    public static let defaultConfig = 31

    /// The packets that cover `samples` (rounded down to 120) after a packet whose TOC was `previousTOC` (nil: none
    /// yet). Frames of the previous configuration's size first, up to 120 ms per packet (code 3, CBR, zero-length
    /// frames: two bytes); the remainder in CELT fullband 10, 5 and 2.5 ms frames (configurations 30, 29, 28).
    public static func covering(samples: Int, after previousTOC: UInt8?) -> [[UInt8]] {
        var left = samples - samples % 120
        var packets: [[UInt8]] = []
        let config = previousTOC.map { Int($0 >> 3) } ?? defaultConfig
        let stereo: UInt8 = (previousTOC ?? 0) & 0x04
        func append(config: Int, frameSamples f: Int) {
            while left >= f {
                let n = min(left / f, 5_760 / f, 48)
                let toc = UInt8(config << 3) | stereo
                packets.append(n == 1 ? [toc] : [toc | 0x03, UInt8(n)])
                left -= n * f
            }
        }
        append(config: config, frameSamples: OpusPacketDuration.frameSamples(config: config))
        for (c, f) in [(30, 480), (29, 240), (28, 120)] { append(config: c, frameSamples: f) }
        return packets
    }
}
