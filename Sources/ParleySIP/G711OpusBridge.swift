import CSpanDSP
import Glibc
import ParleyMedia

/// One call's audio between a phone's G.711 and a room's Opus, as it comes (nothing waits but what does not fill a
/// 20 ms Opus frame yet, so the room's jitter buffers and the phone's see the other side's timing). G.711 through
/// spandsp; Opus runs at 8 kHz on both sides (libopus resamples internally, so no resampler stage sits in between).
/// The phone's narrowband audio goes into the room as Opus at 48 kb/s with in-band FEC, complexity 5; the room's Opus
/// is decoded at 8 kHz. PESQ-NB of espeak-ng speech from one phone to another through the relay (G.711 → Opus →
/// G.711): 3.58 at 32 kb/s, 3.68 at 48, 3.70 at 64 (`SIPIdentityCallProcessTests`); one phone into a room through
/// G.711 and the Opus leg: 3.87 at 32 kb/s, 3.68 at 24, where FEC takes a larger share.
public final class G711OpusBridge {
    /// The phone's G.711.
    public let law: G711Law
    /// Samples of one 20 ms packet at 8 kHz; also the G.711 payload's bytes.
    public static let frameSamples = 160
    /// The Opus leg's bitrate (bits a second).
    public static let bitrate: Int32 = 48_000
    /// The Opus encoder's complexity (0-10; libopus defaults to 10).
    public static let complexity: Int32 = 5
    /// The longest packet a phone may send (60 ms); longer ones are dropped.
    public static let maximumSamples = 480
    private let encoder: OpusEncoder
    private let decoder: OpusDecoder
    private let toLinear: OpaquePointer
    private let toG711: OpaquePointer
    private let pcm = UnsafeMutableBufferPointer<Int16>.allocate(capacity: maximumSamples * 6)
    /// The phone's audio not yet encoded (under 20 ms between packets).
    private let pending = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 2 * maximumSamples)
    private var pendingCount = 0
    /// The level of the last packet from the phone, as RFC 6464 writes it: −dBov, 0 (loudest) … 127 (silence).
    public private(set) var lastLevel: UInt8 = 127

    /// A bridge for a call whose phone speaks `law`.
    public init(law: G711Law) throws(OpusError) {
        self.law = law
        encoder = try OpusEncoder(sampleRate: 8_000, channels: 1, application: .voip)
        try encoder.setBitrate(Self.bitrate)
        try encoder.setInbandFEC(true)
        try encoder.setExpectedPacketLoss(percent: 5)
        try encoder.setComplexity(Self.complexity)
        decoder = try OpusDecoder(sampleRate: 8_000, channels: 1)
        let mode = law == .mu ? Int32(G711_ULAW) : Int32(G711_ALAW)
        toLinear = g711_init(nil, mode)
        toG711 = g711_init(nil, mode)
    }

    deinit {
        g711_free(toLinear)
        g711_free(toG711)
        pcm.deallocate()
        pending.deallocate()
    }

    /// Takes the phone's G.711 payload, any whole number of samples up to 60 ms (phones send 10, 20, 30 ms…); false
    /// when it is empty or longer. Its audio waits for `popOpus`, which takes it 20 ms at a time.
    public func push(g711 payload: UnsafeRawBufferPointer) -> Bool {
        let n = payload.count
        guard n > 0, n <= Self.maximumSamples, let base = payload.baseAddress else { return false }
        if pendingCount + n > pending.count { pendingCount = 0 }  // not when each push is followed by popOpus
        let start = pending.baseAddress! + pendingCount
        _ = g711_decode(toLinear, start, base.assumingMemoryBound(to: UInt8.self), Int32(n))
        lastLevel = Self.level(UnsafeBufferPointer(start: start, count: n))
        pendingCount += n
        return true
    }

    /// The level of a phone's own Opus packet (a call with Opus straight through), decoded at 8 kHz only for this:
    /// RFC 6464's −dBov, 127 when it does not decode.
    public func level(ofOpus payload: UnsafeRawBufferPointer) -> UInt8 {
        guard let samples = try? decoder.decode(payload, into: pcm), samples > 0 else { return 127 }
        return Self.level(UnsafeBufferPointer(rebasing: pcm[0..<samples]))
    }

    /// RFC 6464's level of `samples`: −dBov of their RMS, 0 (loudest) … 127 (silence).
    static func level(_ samples: UnsafeBufferPointer<Int16>) -> UInt8 {
        var energy = 0.0
        for s in samples { energy += Double(s) * Double(s) }
        let rms = (energy / Double(max(1, samples.count))).squareRoot() / 32_768
        return rms <= 0 ? 127 : UInt8(max(0, min(127, (-20 * log10(rms)).rounded())))
    }

    /// The next 20 ms of the phone's audio as one Opus packet in `out`: its length, or 0 while less than 20 ms waits
    /// (or the encoder failed).
    public func popOpus(into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = Self.frameSamples
        guard pendingCount >= n else { return 0 }
        let length = (try? encoder.encode(UnsafeBufferPointer(rebasing: pending[0..<n]), frameSize: n, into: out)) ?? 0
        pendingCount -= n
        if pendingCount > 0 { pending.baseAddress!.update(from: pending.baseAddress! + n, count: pendingCount) }
        return length
    }

    /// Forgets the phone's audio still waiting (its stream jumped: a loss, or a new stream).
    public func dropPending() { pendingCount = 0 }

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
