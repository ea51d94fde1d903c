import Foundation
import ParleyMedia
import ParleyRecording
import Testing

/// A forward room's mixed rendition: two tracks, written as the recorder writes them, mixed and encoded with
/// libopusenc; the result read back holds both tones, each where its track had it.
struct MixdownTests {
    /// An Ogg Opus track of `seconds` of a tone starting `startFrames` 20 ms frames in (gap packets before it).
    func track(tone: Double, startFrames: Int, frames: Int) throws -> [UInt8] {
        let encoder = try OpusEncoder()
        let stream = OggOpusStream(serial: Int32(tone), head: OpusHeaderPackets.head(), tags: OpusHeaderPackets.tags(vendor: "t", comments: []))
        var bytes = stream.take()
        for g in OpusGapPackets.covering(samples: startFrames * 960, after: nil) { stream.append(g, samples: OpusPacketDuration.samples(g)!) }
        var phase = 0.0
        var packet = [UInt8](repeating: 0, count: 1_500)
        for k in 0..<frames {
            var pcm = [Int16](repeating: 0, count: 960)
            for i in 0..<960 { pcm[i] = Int16(8_000 * sin(phase)); phase += 2 * Double.pi * tone / 48_000 }
            let n = try pcm.withUnsafeBufferPointer { p in try packet.withUnsafeMutableBytes { try encoder.encode(p, frameSize: 960, into: $0) } }
            stream.append(Array(packet.prefix(n)), samples: 960, end: k == frames - 1)
        }
        bytes += stream.take(flush: true)
        return bytes
    }

    /// Decodes a whole Ogg Opus file to PCM (its pre-skip dropped).
    func decode(_ bytes: [UInt8]) throws -> [Int16] {
        let (preSkip, packets) = try #require(OggOpusReader.packets(bytes))
        let decoder = try OpusDecoder()
        var out: [Int16] = []
        var pcm = [Int16](repeating: 0, count: 5_760)
        for p in packets {
            let n = try p.withUnsafeBytes { b in try pcm.withUnsafeMutableBufferPointer { try decoder.decode(b, into: $0) } }
            out += pcm.prefix(n)
        }
        return Array(out.dropFirst(preSkip))
    }

    /// The share of `samples` at `frequency` (Goertzel, normalised by energy).
    func share(_ samples: ArraySlice<Int16>, _ frequency: Double) -> Double {
        let w = 2 * Double.pi * frequency / 48_000, c = 2 * cos(w)
        var s1 = 0.0, s2 = 0.0, energy = 0.0
        for x in samples { let v = Double(x); let s0 = v + c * s1 - s2; s2 = s1; s1 = s0; energy += v * v }
        return energy > 0 ? 2 * (s1 * s1 + s2 * s2 - c * s1 * s2) / (Double(samples.count) * energy) : 0
    }

    @Test func twoTracksMixIntoOneFileEachToneWhereItsTrackHadIt() throws {
        // 440 Hz from 0 to 1 s; 1,000 Hz from 0.5 s to 1.5 s.
        let a = try track(tone: 440, startFrames: 0, frames: 50), b = try track(tone: 1_000, startFrames: 25, frames: 50)
        var file: [UInt8] = []
        let encoder = try OpusFileEncoder(tags: ["TITLE=test"]) { bytes in file += bytes; return true }
        let written = try Mixdown.mix([a, b, Array("not ogg".utf8)], into: encoder)
        #expect(written >= 72_000 - 960 && written <= 72_000 + 960 * 2, "\(written) samples")
        let pcm = try decode(file)
        #expect(abs(pcm.count - written) <= 960, "\(pcm.count) decoded of \(written)")
        // 0.1–0.4 s: only 440 Hz; 0.6–0.9 s: both; 1.1–1.4 s: only 1,000 Hz.
        let early = pcm[4_800..<19_200], both = pcm[28_800..<43_200], late = pcm[52_800..<67_200]
        #expect(share(early, 440) > 0.8 && share(early, 1_000) < 0.05)
        #expect(share(both, 440) > 0.3 && share(both, 1_000) > 0.3)
        #expect(share(late, 1_000) > 0.8 && share(late, 440) < 0.05)
        #expect(Array(file.prefix(4)) == Array("OggS".utf8))
    }

    @Test func aSinkThatCannotWriteFailsWithWhy() throws {
        let a = try track(tone: 440, startFrames: 0, frames: 100)
        let encoder = try OpusFileEncoder(tags: []) { _ in false }
        #expect(throws: OpusFileError.self) { try Mixdown.mix([a], into: encoder) }
    }
}
