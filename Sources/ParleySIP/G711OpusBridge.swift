import CSpanDSP
import Glibc
import ParleyMedia

/// One call's audio between a phone's G.711 and a room's Opus, packet by packet (20 ms each way; nothing is buffered,
/// so the room's jitter buffers and the phone's see the other side's timing unchanged). G.711 through spandsp; Opus
/// runs at 8 kHz on both sides (libopus resamples internally, so no resampler stage sits in between): the phone's
/// narrowband audio goes into the room as Opus at 32 kb/s with in-band FEC (PESQ-NB of espeak-ng speech through
/// G.711 and the Opus leg: 3.87 at 32 kb/s, 3.68 at 24 kb/s, where FEC takes a larger share), the room's Opus is
/// decoded at 8 kHz.
public final class G711OpusBridge {
    /// The phone's G.711.
    public let law: G711Law
    /// Samples of one 20 ms packet at 8 kHz; also the G.711 payload's bytes.
    public static let frameSamples = 160
    /// The longest packet a phone may send (60 ms); longer ones are dropped.
    public static let maximumSamples = 480
    private let encoder: OpusEncoder
    private let decoder: OpusDecoder
    private let toLinear: OpaquePointer
    private let toG711: OpaquePointer
    private let pcm = UnsafeMutableBufferPointer<Int16>.allocate(capacity: maximumSamples * 6)
    /// The level of the last packet from the phone, as RFC 6464 writes it: −dBov, 0 (loudest) … 127 (silence).
    public private(set) var lastLevel: UInt8 = 127

    /// A bridge for a call whose phone speaks `law`.
    public init(law: G711Law) throws(OpusError) {
        self.law = law
        encoder = try OpusEncoder(sampleRate: 8_000, channels: 1, application: .voip)
        try encoder.setBitrate(32_000)
        try encoder.setInbandFEC(true)
        try encoder.setExpectedPacketLoss(percent: 5)
        decoder = try OpusDecoder(sampleRate: 8_000, channels: 1)
        let mode = law == .mu ? Int32(G711_ULAW) : Int32(G711_ALAW)
        toLinear = g711_init(nil, mode)
        toG711 = g711_init(nil, mode)
    }

    deinit {
        g711_free(toLinear)
        g711_free(toG711)
        pcm.deallocate()
    }

    /// The phone's G.711 payload as one Opus packet in `out`; its length, or 0 when the payload cannot be one Opus
    /// frame (not 10, 20, 40 or 60 ms).
    public func opus(fromG711 payload: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = payload.count
        guard [80, 160, 320, 480].contains(n), let base = payload.baseAddress else { return 0 }
        _ = g711_decode(toLinear, pcm.baseAddress, base.assumingMemoryBound(to: UInt8.self), Int32(n))
        var energy = 0.0
        for i in 0..<n { energy += Double(pcm[i]) * Double(pcm[i]) }
        let rms = (energy / Double(n)).squareRoot() / 32_768
        lastLevel = rms <= 0 ? 127 : UInt8(max(0, min(127, (-20 * log10(rms)).rounded())))
        let input = UnsafeBufferPointer(start: pcm.baseAddress, count: n)
        return (try? encoder.encode(input, frameSize: n, into: out)) ?? 0
    }

    /// A room's Opus packet as G.711 in `out` (at least 480 bytes × 6: up to 120 ms decoded); its length, 0 when it
    /// does not decode.
    public func g711(fromOpus payload: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        guard let samples = try? decoder.decode(payload, into: pcm), samples > 0, samples <= out.count,
              let base = out.baseAddress else { return 0 }
        return Int(g711_encode(toG711, base.assumingMemoryBound(to: UInt8.self), pcm.baseAddress, Int32(samples)))
    }

    /// 20 ms of concealment at 8 kHz as G.711 (a room packet that did not come): the decoder's PLC.
    public func concealedG711(into out: UnsafeMutableRawBufferPointer) -> Int {
        guard let samples = try? decoder.conceal(frameSize: Self.frameSamples, into: pcm), samples > 0,
              let base = out.baseAddress else { return 0 }
        return Int(g711_encode(toG711, base.assumingMemoryBound(to: UInt8.self), pcm.baseAddress, Int32(samples)))
    }
}
