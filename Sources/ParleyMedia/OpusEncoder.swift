import COpus

/// What the encoder is tuned for (`OPUS_APPLICATION_*`).
public enum OpusApplication: Sendable {
    /// `OPUS_APPLICATION_VOIP`: speech intelligibility, the usual choice for a voice room.
    case voip
    /// `OPUS_APPLICATION_AUDIO`: faithfulness to the input, for music or mixed content.
    case audio
    /// `OPUS_APPLICATION_RESTRICTED_LOWDELAY`: CELT only, the smallest algorithmic delay.
    case restrictedLowDelay

    /// The libopus constant.
    var rawValue: Int32 {
        switch self {
        case .voip: OPUS_APPLICATION_VOIP
        case .audio: OPUS_APPLICATION_AUDIO
        case .restrictedLowDelay: OPUS_APPLICATION_RESTRICTED_LOWDELAY
        }
    }
}

/// An Opus encoder: owns one `OpusEncoder *` from `opus_encoder_create` and frees it in `deinit`.
///
/// Not `Sendable`: a libopus state is single-threaded. Create one per outgoing stream on the thread that encodes it.
/// `encode` writes into buffers the caller owns and allocates nothing.
public final class OpusEncoder {
    /// The input sample rate in Hz (8000, 12000, 16000, 24000 or 48000).
    public let sampleRate: Int32
    /// Interleaved input channels (1 or 2).
    public let channels: Int
    /// Samples per channel the decoded signal lags the input by (`OPUS_GET_LOOKAHEAD`; 312 at 48 kHz VOIP/audio).
    public let lookahead: Int
    private let handle: OpaquePointer

    /// Creates an encoder (`opus_encoder_create`); throws `OPUS_BAD_ARG` for an unsupported rate or channel count.
    public init(sampleRate: Int32 = 48_000, channels: Int = 1, application: OpusApplication = .voip) throws(OpusError) {
        try OpusLimits.checkFormat(sampleRate: sampleRate, channels: channels)
        var error: Int32 = OPUS_OK
        guard let handle = opus_encoder_create(sampleRate, Int32(channels), application.rawValue, &error), error == OPUS_OK else {
            throw OpusError(code: error == OPUS_OK ? OPUS_ALLOC_FAIL : error, context: "opus_encoder_create(\(sampleRate), \(channels))")
        }
        var lookahead: Int32 = 0
        _ = parley_opus_get_lookahead(handle, &lookahead)  // cannot fail on a valid state
        self.handle = handle
        self.sampleRate = sampleRate
        self.channels = channels
        self.lookahead = Int(lookahead)
    }

    deinit { opus_encoder_destroy(handle) }

    /// Sets the target bitrate in bit/s (`OPUS_SET_BITRATE`): 500…512000, or `OPUS_AUTO` (-1000) / `OPUS_BITRATE_MAX` (-1).
    public func setBitrate(_ bitsPerSecond: Int32) throws(OpusError) {
        try check(parley_opus_set_bitrate(handle, bitsPerSecond), "OPUS_SET_BITRATE(\(bitsPerSecond))")
    }

    /// Sets the computational complexity 0 (cheapest) … 10 (best) (`OPUS_SET_COMPLEXITY`).
    public func setComplexity(_ complexity: Int32) throws(OpusError) {
        guard (0...10).contains(complexity) else { throw .badArgument("complexity \(complexity) is not in 0...10") }
        try check(parley_opus_set_complexity(handle, complexity), "OPUS_SET_COMPLEXITY(\(complexity))")
    }

    /// Turns in-band forward error correction (SILK LBRR) on or off (`OPUS_SET_INBAND_FEC`).
    /// Takes effect only with a nonzero expected packet loss and in SILK or hybrid mode.
    public func setInbandFEC(_ on: Bool) throws(OpusError) {
        try check(parley_opus_set_inband_fec(handle, on ? 1 : 0), "OPUS_SET_INBAND_FEC(\(on))")
    }

    /// Tells the encoder the expected packet loss, 0…100 % (`OPUS_SET_PACKET_LOSS_PERC`); drives how much FEC it spends.
    public func setExpectedPacketLoss(percent: Int32) throws(OpusError) {
        guard (0...100).contains(percent) else { throw .badArgument("expected packet loss \(percent) % is not in 0...100") }
        try check(parley_opus_set_packet_loss_perc(handle, percent), "OPUS_SET_PACKET_LOSS_PERC(\(percent))")
    }

    /// Turns discontinuous transmission on or off (`OPUS_SET_DTX`): during silence `encode` returns 1–2 byte packets.
    public func setDTX(_ on: Bool) throws(OpusError) {
        try check(parley_opus_set_dtx(handle, on ? 1 : 0), "OPUS_SET_DTX(\(on))")
    }

    /// Chooses variable (the default) or constant bitrate (`OPUS_SET_VBR`).
    public func setVBR(_ on: Bool) throws(OpusError) {
        try check(parley_opus_set_vbr(handle, on ? 1 : 0), "OPUS_SET_VBR(\(on))")
    }

    /// Resets the codec state as if freshly created, keeping the settings (`OPUS_RESET_STATE`).
    public func reset() throws(OpusError) {
        try check(parley_opus_encoder_reset(handle), "OPUS_RESET_STATE")
    }

    /// The range coder's final state after the last `encode` (`OPUS_GET_FINAL_RANGE`); equals the decoder's for the same packet.
    public func finalRange() throws(OpusError) -> UInt32 {
        var range: UInt32 = 0
        try check(parley_opus_encoder_get_final_range(handle, &range), "OPUS_GET_FINAL_RANGE")
        return range
    }

    /// Encodes one frame of interleaved S16 (frameSize samples per channel: 2.5/5/10/20/40/60 ms at sampleRate); returns bytes written.
    /// A result of 1–2 bytes means DTX (nothing worth sending).
    ///
    /// Throws `OPUS_BAD_ARG` for a frame size the rate does not allow, a `pcm` shorter than `frameSize * channels`
    /// or an empty `packet`; `OPUS_BUFFER_TOO_SMALL` if the packet does not fit (4000 bytes always suffice).
    /// A buffer of 1–2 bytes is not an error to libopus: it writes a TOC-only packet, which decoders treat as a lost frame.
    public func encode(_ pcm: UnsafeBufferPointer<Int16>, frameSize: Int, into packet: UnsafeMutableRawBufferPointer) throws(OpusError) -> Int {
        try OpusLimits.checkEncodeFrameSize(frameSize, sampleRate: sampleRate)
        try OpusLimits.checkPCM(count: pcm.count, frameSize: frameSize, channels: channels, what: "pcm")
        guard let input = pcm.baseAddress, let output = packet.baseAddress, !packet.isEmpty else {
            throw .badArgument("packet buffer is empty")
        }
        let capacity = Int32(min(packet.count, OpusLimits.maxPacketBytes))
        let written = opus_encode(handle, input, Int32(frameSize), output.assumingMemoryBound(to: UInt8.self), capacity)
        guard written >= 0 else {
            throw OpusError(code: written, context: "opus_encode(frameSize: \(frameSize), packet capacity: \(packet.count))")
        }
        return Int(written)
    }

    /// Maps a negative libopus return to a thrown error.
    @inline(__always)
    private func check(_ result: Int32, _ request: @autoclosure () -> String) throws(OpusError) {
        if result < 0 { throw OpusError(code: result, context: request()) }
    }
}
