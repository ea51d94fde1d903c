import BenchmarkSupport
import Glibc
import ParleyMedia
import ParleyWire

/// A speech-like voice: 16 harmonics of a pitch gliding through 100–250 Hz with two formants, a syllable-rate
/// envelope (about 4 per second) and −45 dB of seeded noise. `voice` varies pitch, rate and seed so the speakers
/// of a room do not sound alike (a mix of identical voices would be easier to encode than real speech).
enum SyntheticVoice {
    static let sampleRate = 48_000.0

    /// `seconds` of 48 kHz mono S16 for voice number `voice`; with `.pauses`, the voice is near-silent (−80 dBov
    /// of noise, which DTX turns into 1–2 byte packets) for 4 s of every 10 s, staggered by `voice` of `voices`.
    static func make(voice: Int, of voices: Int, seconds: Double, pattern: TalkPattern) -> [Int16] {
        let count = Int(seconds * sampleRate)
        var out = [Int16](repeating: 0, count: count)
        var rng: UInt64 = 0x5EED &+ UInt64(voice) &* 0x9E37_79B9_7F4A_7C15
        var phase = 0.0
        let v = Double(voice)
        let glideRate = 0.21 + 0.05 * v, syllableRate = 3.6 + 0.45 * v
        let formant1 = 600 + 90 * v.truncatingRemainder(dividingBy: 4), formant2 = 1_400 + 230 * v.truncatingRemainder(dividingBy: 3)
        let cycle = 10.0, talk = 6.0
        let offset = cycle * v / Double(max(voices, 1))
        for i in 0..<count {
            let t = Double(i) / sampleRate
            let pitch = 175 + 75 * sin(2 * .pi * glideRate * t + 2.1 * v)
            phase += 2 * .pi * pitch / sampleRate
            if phase > 2 * .pi { phase -= 2 * .pi }
            var voiced = 0.0
            for k in 1...16 {
                let f = Double(k) * pitch
                let g1 = exp(-((f - formant1) * (f - formant1)) / (2 * 200 * 200))
                let g2 = exp(-((f - formant2) * (f - formant2)) / (2 * 300 * 300))
                voiced += (0.3 + 2.5 * g1 + 1.2 * g2) / Double(k) * sin(Double(k) * phase)
            }
            let syllable = sin(.pi * syllableRate * t + v)
            let envelope = 0.2 + 0.8 * syllable * syllable
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            let noise = Double(Int64(bitPattern: rng) >> 11) / Double(1 << 52)
            var sample = 3_000 * envelope * voiced + 150 * noise
            if pattern == .pauses, (t + offset).truncatingRemainder(dividingBy: cycle) >= talk { sample = 3 * noise }
            out[i] = Int16(max(-32_767, min(32_767, sample.rounded())))
        }
        return out
    }

    /// The RFC 6464 level of one frame: −dBov of its RMS (0 loudest … 127 silence).
    static func level(_ frame: UnsafeBufferPointer<Int16>) -> UInt8 {
        var energy = 0.0
        for s in frame { energy += Double(s) * Double(s) }
        let rms = (energy / Double(max(frame.count, 1))).squareRoot()
        guard rms > 0 else { return 127 }
        let dBov = 20 * log10(rms / 32_768)
        return UInt8(max(0, min(127, (-dBov).rounded())))
    }
}

/// One voice encoded once, before anything is timed: `frames` Opus packets (48 kHz mono, 20 ms, 56 kbit/s,
/// complexity 5, FEC on at 10 % expected loss, DTX on — what a Parley client sends) with their RFC 6464 levels.
/// Speakers replay it in a loop; each room starts at its own offset.
final class SpeakerRing {
    static let frameSamples = 960
    /// Packets in the ring.
    let frames: Int
    private var bytes: [UInt8] = []
    private var offsets: [Int] = [0]
    /// RFC 6464 level of each frame.
    private(set) var levels: [UInt8] = []
    /// The voice's PCM, kept for the floor (which mixes the same audio).
    let pcm: [Int16]

    /// Synthesizes and encodes `seconds` of voice number `voice`.
    init(voice: Int, of voices: Int, seconds: Int, pattern: TalkPattern) throws(OpusError) {
        frames = seconds * 50
        pcm = SyntheticVoice.make(voice: voice, of: voices, seconds: Double(seconds), pattern: pattern)
        let encoder = try OpusEncoder(sampleRate: 48_000, channels: 1, application: .voip)
        try encoder.setComplexity(5)
        try encoder.setBitrate(56_000)
        try encoder.setInbandFEC(true)
        try encoder.setExpectedPacketLoss(percent: 10)
        try encoder.setDTX(true)
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 4_000, alignment: 16)
        defer { out.deallocate() }
        for f in 0..<frames {
            let n = try pcm.withUnsafeBufferPointer { all throws(OpusError) -> Int in
                let frame = UnsafeBufferPointer(rebasing: all[(f * Self.frameSamples)..<((f + 1) * Self.frameSamples)])
                levels.append(SyntheticVoice.level(frame))
                return try encoder.encode(frame, frameSize: Self.frameSamples, into: out)
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: out[0..<n]))
            offsets.append(bytes.count)
            if n <= 2 { levels[f] = 127 }  // DTX: nothing said
        }
    }

    /// Packet `f` (modulo the ring)'s Opus payload.
    func withPayload<R>(_ f: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let i = f % frames
        return bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[offsets[i]..<offsets[i + 1]])) }
    }

    /// Packet `f`'s level.
    func level(_ f: Int) -> UInt8 { levels[f % frames] }

    /// Share of frames that are DTX (1–2 bytes).
    var dtxShare: Double {
        var dtx = 0
        for i in 0..<frames where offsets[i + 1] - offsets[i] <= 2 { dtx += 1 }
        return Double(dtx) / Double(frames)
    }

    /// Mean payload bytes per packet.
    var meanPayloadBytes: Double { Double(bytes.count) / Double(frames) }
}

/// One speaker's RTP stream as its client sends it: the ring's packets in order, PT 111, 20 ms apart, with the
/// RFC 6464 level in a one-byte header extension (id 1), written into the stream's own send buffer.
struct SpeakerStream {
    static let payloadType: UInt8 = 111
    static let audioLevelExtensionID: UInt8 = 1

    /// Where the speaker sends from (its latched address).
    let address: PeerAddress
    /// The SSRC the relay assigned in its welcome.
    let ssrc: UInt32
    /// Index of the speaker's room.
    let roomIndex: Int
    /// The voice it replays.
    let ring: SpeakerRing
    /// Where in the ring the next packet comes from.
    var frame: Int
    var sequenceNumber = UInt16.random(in: .min ... .max)
    var timestamp = UInt32.random(in: .min ... .max)

    /// Writes the next packet at the start of `buffer`, advances, and returns the packet's size.
    mutating func writeNextPacket(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let level = ring.level(frame)
        let header = RTPHeader(marker: false, payloadType: Self.payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp,
                               ssrc: ssrc, extensions: [.audioLevel(id: Self.audioLevelExtensionID, AudioLevel(voice: level < 127, level: level))])
        let headerSize = try! header.serialize(into: buffer)
        let payloadSize = ring.withPayload(frame) { payload in
            UnsafeMutableRawBufferPointer(rebasing: buffer[headerSize...]).copyMemory(from: payload)
            return payload.count
        }
        frame += 1
        sequenceNumber &+= 1
        timestamp &+= UInt32(SpeakerRing.frameSamples)
        return headerSize + payloadSize
    }
}
