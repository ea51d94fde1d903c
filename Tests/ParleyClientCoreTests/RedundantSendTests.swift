// RFC 2198 RED from the send pipeline to a receive stream (the client's and the relay mix's decoder): what it
// costs in bytes, when it is sent, and that a lost packet's copy plays in its place.
import Foundation
import ParleyClientCore
import ParleyMedia
import ParleyWire
import Testing

@Suite("Redundant audio (RED) from sender to decoder")
struct RedundantSendTests {
    /// `count` packets of a 440 Hz tone from a pipeline with `redundancy` frames allowed and a lossy-looking path.
    static func packets(count: Int, redundancy: Int, lossy: Bool = true) throws -> [[UInt8]] {
        var random = SeededRandomNumberGenerator(seed: 3)
        let pipeline = try SendPipeline(ssrc: 0xB0B, dtx: false, random: &random)
        pipeline.redundancyLimit = redundancy
        pipeline.pathLooksLossy = lossy
        var out: [[UInt8]] = []
        for n in 0..<count {
            let frame: [Int16] = (0..<960).map { i in
                let phase = Double(n * 960 + i) * 2 * Double.pi * 440 / 48_000
                return Int16(8_000 * sin(phase))
            }
            if let p = frame.withUnsafeBufferPointer({ pipeline.packetize($0, level: 20, voice: true).map(Array.init) })
            {
                out.append(p)
            }
        }
        return out
    }

    /// The packet's payload type, or nil when it does not parse.
    static func payloadType(_ bytes: [UInt8]) -> UInt8? {
        bytes.withUnsafeBytes { (try? RTPPacketView(parsing: $0))?.payloadType }
    }

    @Test func packetsCarryTheFramesBeforeThem() throws {
        let plain = try Self.packets(count: 50, redundancy: 0)
        let red = try Self.packets(count: 50, redundancy: 2)
        #expect(Self.payloadType(red[0]) == 111)  // nothing before it
        for (i, bytes) in red.enumerated().dropFirst(2) {
            try bytes.withUnsafeBytes { b in
                let p = try RTPPacketView(parsing: b)
                #expect(p.payloadType == RedundantAudio.defaultPayloadType)
                let r = try RedundantAudio(parsing: p.payload)
                #expect(r.redundantCount == 2)
                #expect(r.redundant(0).timestampOffset == 1920 && r.redundant(1).timestampOffset == 960)
                // The copies are the earlier packets' own frames, byte for byte.
                let previous = try red[i - 1].withUnsafeBytes { pb in
                    let pp = try RTPPacketView(parsing: pb)
                    let pr = try RedundantAudio(parsing: pp.payload)
                    return Array(pp.payload[pr.primary.range])
                }
                #expect(Array(p.payload[r.redundant(1).range]) == previous)
            }
        }
        // The bytes it costs: about three frames' worth per packet.
        let plainBytes = plain.dropFirst(2).map(\.count).reduce(0, +),
            redBytes = red.dropFirst(2).map(\.count).reduce(0, +)
        #expect(Double(redBytes) / Double(plainBytes) > 2 && Double(redBytes) / Double(plainBytes) < 3.2)
    }

    @Test func noRedundancyWithoutLossOrAgreement() throws {
        for bytes in try Self.packets(count: 10, redundancy: 2, lossy: false) + Self.packets(count: 10, redundancy: 0) {
            #expect(Self.payloadType(bytes) == 111)
        }
    }

    @Test(arguments: [1, 2])
    func aLostPacketPlaysFromTheNextOnesCopy(distance: Int) throws {
        let packets = try Self.packets(count: 200, redundancy: distance)
        // Lose bursts of `distance` packets every 20 from the 40th on.
        var lost: Set<Int> = []
        for i in stride(from: 40, to: 180, by: 20) { for k in 0..<distance { lost.insert(i + k) } }
        var config = JitterBufferConfig()
        config.minimumDelay = .milliseconds(60)  // the copies come 20–40 ms after their frame: in time
        let stream = try AudioReceiveStream(jitterConfig: config)
        var pcm = [Int16](repeating: 0, count: 960)
        let start: Int64 = 1_000_000_000
        for (i, bytes) in packets.enumerated() {
            let now = Instant(nanoseconds: start + Int64(i) * 20_000_000)
            if !lost.contains(i) {
                try bytes.withUnsafeBytes { stream.insert(try RTPPacketView(parsing: $0), arrival: now) }
            }
            _ = pcm.withUnsafeMutableBufferPointer { stream.pull(now: now, into: $0.baseAddress!) }
        }
        let s = stream.jitter.stats
        #expect(s.redundantRecovered == lost.count)
        #expect(s.concealedFrames == 0 && s.fecRecovered == 0)
    }
}
