import ParleyMedia

/// Opus at 8 kHz for the bridge's tests: what a room member's packets carry, and what the room hears of a phone.
final class OpusPacketSource {
    let encoder: OpusEncoder
    let decoder: OpusDecoder
    init() throws {
        encoder = try OpusEncoder(sampleRate: 8_000, channels: 1)
        decoder = try OpusDecoder(sampleRate: 8_000, channels: 1)
    }

    func encode(_ pcm: [Int16], into out: inout [UInt8]) -> Int {
        let count = out.count
        return pcm.withUnsafeBufferPointer { p in
            out.withUnsafeMutableBytes { o in
                let packet = UnsafeMutableRawBufferPointer(rebasing: o[0..<count])
                return (try? encoder.encode(p, frameSize: pcm.count, into: packet)) ?? 0
            }
        }
    }

    func decode(_ packet: UnsafeRawBufferPointer) throws -> [Int16] {
        var pcm = [Int16](repeating: 0, count: 960)
        let n = try pcm.withUnsafeMutableBufferPointer { try decoder.decode(packet, into: $0) }
        return Array(pcm[0..<n])
    }
}
