import ParleyCrypto
import ParleyMedia
import ParleyWire

/// The send path after capture and voice processing: Opus (FEC on, DTX when silent) → RTP with the RFC 6464 audio
/// level, the marker bit on the first packet of each talkspurt. Buffers allocated once.
public final class SendPipeline {
    /// Samples per 20 ms frame at 48 kHz.
    public static let frameSamples = 960
    /// RTP header with the one-byte extension block carrying the level (one element, one byte).
    static let headerSize = RTPFixedHeader.size + RTPExtensionWriter.oneByteBlockSize(elements: 1, dataBytes: 1)
    private let encoder: OpusEncoder
    private let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 16)
    /// The Opus frame before end-to-end sealing (used only with `endToEnd`).
    private let opusFrame = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 16)
    /// End-to-end encryption of each Opus payload before it goes into RTP (a call's `FrameCipher`), or nil. Sealing
    /// happens here, at the payload level, so a hop-by-hop layer under RTP (SRTP) is unaffected.
    public var endToEnd: FrameCipher?
    private var sequence: UInt16
    private var timestamp: UInt32
    private var talking = false
    /// The SSRC packets carry (the relay assigns it).
    public var ssrc: UInt32
    /// The RTP payload type.
    public let payloadType: UInt8
    /// The RTP header extension id of the audio level.
    public let levelExtensionID: UInt8
    /// The id clients use for the RFC 6464 level unless told otherwise (the relay's default too).
    public static let defaultLevelExtensionID: UInt8 = 1
    /// The loss the encoder currently protects against with in-band FEC, in percent.
    public private(set) var expectedLossPercent: Int32 = 0

    /// Adapts in-band FEC to what the relay reports about this stream (RTCP receiver report block: fraction lost
    /// /256, interarrival jitter in 48 kHz units); see `LossAdaptiveFEC` for the policy.
    public func reportedLoss(fraction: UInt8, jitter: UInt32 = 0) {
        lossReported = true
        guard fec.report(fractionLost: fraction, jitter: jitter) else { return }
        if (try? encoder.setExpectedPacketLoss(percent: fec.expectedLossPercent)) != nil { expectedLossPercent = fec.expectedLossPercent }
    }
    private var fec = LossAdaptiveFEC()

    /// How many earlier frames a packet may carry as RFC 2198 redundancy (`RedundantAudio`): 0 unless the relay's
    /// welcome said it carries RED (`MemberFlags.redundancy`), then `RedundancyPolicy.distance`.
    public var redundancyLimit = 0
    /// The path looked lossy at join (its pings' spread, `JitterPrior`): redundancy from the first frame, until the
    /// relay's first report about our stream says otherwise.
    public var pathLooksLossy = false
    private var lossReported = false
    /// Redundant frames each packet carries now: `redundancyLimit` while the path shows loss or jitter (the reports
    /// that size in-band FEC, `LossAdaptiveFEC`; before any, `pathLooksLossy`), else none. Never with `endToEnd`
    /// (a call's frames are sealed one by one, and its listeners open one frame per packet).
    public var redundantFrames: Int {
        guard redundancyLimit > 0, endToEnd == nil else { return 0 }
        return (lossReported ? fec.expectedLossPercent > 0 : pathLooksLossy) ? redundancyLimit : 0
    }
    /// The last frames sent (newest last), kept for redundancy.
    private var recent: RecentFrames
    /// The RTP payload type of RED packets (Chrome's `red/48000/2` uses 63 as well).
    public let redPayloadType = RedundantAudio.defaultPayloadType

    /// RTP packets and payload octets sent so far (a sender report's counts, RFC 3550 §6.4.1).
    public private(set) var packetsSent: UInt32 = 0, octetsSent: UInt32 = 0
    /// The RTP timestamp of the next frame `packetize` takes.
    public var nextTimestamp: UInt32 { timestamp }

    /// Frames encoded, and those that were DTX (not sent).
    public private(set) var framesEncoded = 0, framesSuppressed = 0

    /// An Opus VOIP encoder at `bitrate`, `complexity`, FEC for `expectedLossPercent`, DTX when `dtx`; the first
    /// sequence number and timestamp are random (RFC 3550 §5.1) from the system's generator.
    public convenience init(ssrc: UInt32, bitrate: Int32 = 56_000, complexity: Int32 = 10, expectedLossPercent: Int32 = 0, dtx: Bool = true,
                            payloadType: UInt8 = 111, levelExtensionID: UInt8 = SendPipeline.defaultLevelExtensionID) throws(OpusError) {
        var random = SystemRandomNumberGenerator()
        try self.init(ssrc: ssrc, bitrate: bitrate, complexity: complexity, expectedLossPercent: expectedLossPercent, dtx: dtx,
                      payloadType: payloadType, levelExtensionID: levelExtensionID, random: &random)
    }

    /// A pipeline as above whose first sequence number and timestamp come from `random`.
    public init(ssrc: UInt32, bitrate: Int32 = 56_000, complexity: Int32 = 10, expectedLossPercent: Int32 = 0, dtx: Bool = true,
                payloadType: UInt8 = 111, levelExtensionID: UInt8 = SendPipeline.defaultLevelExtensionID,
                random: inout some RandomNumberGenerator) throws(OpusError) {
        sequence = .random(in: 0...UInt16.max, using: &random)
        timestamp = .random(in: 0...UInt32.max, using: &random)
        encoder = try OpusEncoder(sampleRate: 48_000, channels: 1, application: .voip)
        try encoder.setBitrate(bitrate)
        try encoder.setComplexity(complexity)
        try encoder.setInbandFEC(true)
        try encoder.setExpectedPacketLoss(percent: expectedLossPercent)
        self.expectedLossPercent = expectedLossPercent
        try encoder.setDTX(dtx)
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.levelExtensionID = levelExtensionID
        recent = RecentFrames(count: RedundancyPolicy.maximumDistance)
    }

    deinit {
        packet.deallocate()
        opusFrame.deallocate()
        recent.deallocate()
    }

    /// Encodes one 20 ms frame; returns the RTP packet to send (valid until the next call), or nil during DTX.
    /// `muted` frames advance the timestamp but send nothing.
    public func packetize(_ frame: UnsafeBufferPointer<Int16>, level: UInt8, voice: Bool, muted: Bool = false) -> UnsafeRawBufferPointer? {
        defer { timestamp &+= UInt32(Self.frameSamples) }
        guard !muted else {
            talking = false
            return nil
        }
        let body = UnsafeMutableRawBufferPointer(rebasing: packet[Self.headerSize...])
        let redundancy = redundantFrames
        // With end-to-end encryption Opus writes beside the packet and the sealed frame lands in the payload; with
        // redundancy too, and the RED payload is built from it and the frames before.
        let target = endToEnd == nil && redundancy == 0 ? body
            : UnsafeMutableRawBufferPointer(rebasing: opusFrame[0..<(body.count - FrameCipher.overhead)])
        guard let n = try? encoder.encode(frame, frameSize: Self.frameSamples, into: target) else { return nil }
        framesEncoded += 1
        if n <= 2 {
            // DTX. The first DTX frame after audio is sent (it tells the receiver's jitter buffer that silence, not
            // loss, follows); the rest are not. The next real frame starts a talkspurt (marker bit).
            guard talking else {
                framesSuppressed += 1
                return nil
            }
            talking = false
            guard let (payload, type) = assemble(opusBytes: n, from: target, into: body,
                redundancy: redundancy) else { return nil }
            return header(payloadBytes: payload, payloadType: type, marker: false, level: 127, voice: false)
        }
        let marker = !talking
        talking = true
        guard let (payload, type) = assemble(opusBytes: n, from: target, into: body,
            redundancy: redundancy) else { return nil }
        return header(payloadBytes: payload, payloadType: type, marker: marker, level: level, voice: voice)
    }

    /// The payload's length and type: sealed (`seal`), as RED with up to `redundancy` earlier frames (those sent just
    /// before, with no gap: `RecentFrames`), or the Opus frame as encoded. The frame is kept for the next packets.
    private func assemble(opusBytes n: Int, from target: UnsafeMutableRawBufferPointer,
        into body: UnsafeMutableRawBufferPointer,
                          redundancy: Int) -> (Int, UInt8)? {
        let frame = UnsafeRawBufferPointer(rebasing: target[0..<n])
        defer { recent.append(frame, sequence: sequence, timestamp: timestamp) }
        guard redundancy > 0 else { return seal(opusBytes: n, from: target, into: body).map { ($0, payloadType) } }
        let copies = recent.usable(before: sequence, timestamp: timestamp, frameSamples: Self.frameSamples,
            limit: redundancy,
                                   budget: RedundancyPolicy.redundantBytesBudget)
        guard copies > 0 else {
            body.copyMemory(from: frame)  // nothing to repeat (a talkspurt's first frame): plain Opus
            return (n, payloadType)
        }
        do {
            var writer = try RedundantAudioWriter(into: body, redundantBlocks: copies)
            for k in stride(from: copies, through: 1, by: -1) {  // oldest first
                try writer.appendRedundant(payloadType: payloadType, timestampOffset: UInt32(k * Self.frameSamples),
                                           data: recent.frame(back: k))
            }
            let length = try writer.finish(primaryPayloadType: payloadType, data: frame)
            redundantPackets += 1
            return (length, redPayloadType)
        } catch {
            body.copyMemory(from: frame)
            return (n, payloadType)
        }
    }
    /// Packets sent as RED (with at least one redundant frame).
    public private(set) var redundantPackets = 0

    /// The payload's length: the Opus frame as encoded, or sealed from `target` into `body` with `endToEnd`; nil when
    /// the cipher refuses (its counter is exhausted: nothing goes out in the clear instead).
    private func seal(opusBytes n: Int, from target: UnsafeMutableRawBufferPointer, into body: UnsafeMutableRawBufferPointer) -> Int? {
        guard let endToEnd else { return n }
        return try? endToEnd.seal(UnsafeRawBufferPointer(rebasing: target[0..<n]), into: body)
    }

    /// Writes the RTP header (V=2, X=1, one-byte extension block with the level) before `payloadBytes` of payload.
    private func header(payloadBytes: Int, payloadType: UInt8, marker: Bool, level: UInt8,
        voice: Bool) -> UnsafeRawBufferPointer {
        RTPFixedHeader(marker: marker, payloadType: payloadType, sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc,
                       hasExtension: true).write(into: packet)
        var block = RTPExtensionWriter(into: packet, at: RTPFixedHeader.extensionOffset(csrcCount: 0))
        block.appendElement(id: levelExtensionID, byte: AudioLevel(voice: voice, level: level).byte)
        let end = block.finish()
        assert(end == Self.headerSize)
        sequence &+= 1
        packetsSent &+= 1
        octetsSent &+= UInt32(truncatingIfNeeded: payloadBytes)
        return UnsafeRawBufferPointer(start: packet.baseAddress!, count: end + payloadBytes)
    }
}
