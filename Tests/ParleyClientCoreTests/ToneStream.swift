// A room member's stream for the engine tests: real Opus from a real `SendPipeline`, seeded.
import Foundation
import ParleyClientCore
import ParleyWire

/// RTP as a room member's stream would carry it: Opus frames of a tone from a real `SendPipeline`.
struct ToneStream {
    static let ssrc: UInt32 = 0xB0B
    let pipeline: SendPipeline
    private var phase = 0.0

    init(seed: UInt64 = 7) throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        pipeline = try SendPipeline(ssrc: Self.ssrc, dtx: false, random: &random)
    }

    /// 20 ms of a tone at `frequency` (amplitude 8000).
    static func tone(_ frequency: Double) -> [Int16] {
        (0..<960).map { i in Int16(8_000 * sin(Double(i) * 2 * Double.pi * frequency / 48_000)) }
    }

    /// The next 20 ms of a 440 Hz tone as one RTP packet.
    mutating func next() -> [UInt8] {
        var frame = [Int16](repeating: 0, count: 960)
        for i in frame.indices {
            frame[i] = Int16(8_000 * sin(phase))
            phase += 2 * Double.pi * 440 / 48_000
        }
        return frame.withUnsafeBufferPointer { pipeline.packetize($0, level: 20, voice: true).map(Array.init) ?? [] }
    }
}
