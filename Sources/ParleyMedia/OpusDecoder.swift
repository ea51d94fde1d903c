import COpus

/// An Opus decoder: owns one `OpusDecoder *` from `opus_decoder_create` and frees it in `deinit`.
///
/// Not `Sendable`: a libopus state is single-threaded and carries the history that concealment and FEC build on.
/// Create one per incoming stream on the thread that decodes it. Every call writes into buffers the caller owns.
public final class OpusDecoder {
    /// The output sample rate in Hz (8000, 12000, 16000, 24000 or 48000), whatever rate the packets were encoded at.
    public let sampleRate: Int32
    /// Interleaved output channels (1 or 2).
    public let channels: Int
    private let handle: OpaquePointer

    /// Creates a decoder (`opus_decoder_create`); throws `OPUS_BAD_ARG` for an unsupported rate or channel count.
    public init(sampleRate: Int32 = 48_000, channels: Int = 1) throws(OpusError) {
        try OpusLimits.checkFormat(sampleRate: sampleRate, channels: channels)
        var error: Int32 = OPUS_OK
        guard let handle = opus_decoder_create(sampleRate, Int32(channels), &error), error == OPUS_OK else {
            throw OpusError(code: error == OPUS_OK ? OPUS_ALLOC_FAIL : error, context: "opus_decoder_create(\(sampleRate), \(channels))")
        }
        self.handle = handle
        self.sampleRate = sampleRate
        self.channels = channels
    }

    deinit { opus_decoder_destroy(handle) }

    /// Decodes a packet; returns samples per channel written.
    ///
    /// `pcm` must hold the whole packet (`samples(in:) * channels`; 120 ms always suffices), else `OPUS_BUFFER_TOO_SMALL`.
    /// An empty packet is `OPUS_BAD_ARG` (use `conceal` for a lost one); a malformed one is `OPUS_INVALID_PACKET`.
    public func decode(_ packet: UnsafeRawBufferPointer, into pcm: UnsafeMutableBufferPointer<Int16>) throws(OpusError) -> Int {
        guard let data = packet.baseAddress, !packet.isEmpty else {
            throw .badArgument("packet is empty (call conceal(frameSize:into:) for a lost packet)")
        }
        guard let output = pcm.baseAddress, pcm.count >= channels else {
            throw .badArgument("pcm holds \(pcm.count) samples, less than one per channel")
        }
        return try run(data: data, count: packet.count, output: output, frameSize: pcm.count / channels, fec: 0, "opus_decode")
    }

    /// Packet loss concealment for `frameSize` samples per channel (libopus NULL packet).
    ///
    /// `frameSize` must be a multiple of 2.5 ms up to 120 ms — the duration that is missing; returns exactly `frameSize`.
    public func conceal(frameSize: Int, into pcm: UnsafeMutableBufferPointer<Int16>) throws(OpusError) -> Int {
        try OpusLimits.checkConcealFrameSize(frameSize, sampleRate: sampleRate)
        try OpusLimits.checkPCM(count: pcm.count, frameSize: frameSize, channels: channels, what: "pcm")
        return try run(data: nil, count: 0, output: pcm.baseAddress!, frameSize: frameSize, fec: 0, "opus_decode(NULL)")
    }

    /// Recovers the frame *before* `nextPacket` from its in-band FEC (decode_fec = 1), frameSize samples per channel;
    /// falls back to PLC inside libopus when the packet carries no FEC.
    ///
    /// `frameSize` is the duration that is missing (a multiple of 2.5 ms). Afterwards decode `nextPacket` itself as usual.
    public func decodeFEC(from nextPacket: UnsafeRawBufferPointer, frameSize: Int, into pcm: UnsafeMutableBufferPointer<Int16>) throws(OpusError) -> Int {
        guard let data = nextPacket.baseAddress, !nextPacket.isEmpty else {
            throw .badArgument("nextPacket is empty (call conceal(frameSize:into:) when there is no next packet)")
        }
        try OpusLimits.checkConcealFrameSize(frameSize, sampleRate: sampleRate)
        try OpusLimits.checkPCM(count: pcm.count, frameSize: frameSize, channels: channels, what: "pcm")
        return try run(data: data, count: nextPacket.count, output: pcm.baseAddress!, frameSize: frameSize, fec: 1, "opus_decode(fec: 1)")
    }

    /// Resets the decoder to its freshly created state (`OPUS_RESET_STATE`), e.g. when a stream restarts.
    public func reset() throws(OpusError) {
        let result = parley_opus_decoder_reset(handle)
        if result < 0 { throw OpusError(code: result, context: "OPUS_RESET_STATE") }
    }

    /// Samples per channel in a packet at this decoder's rate (opus_packet_get_nb_samples), or nil if the packet is invalid.
    public func samples(in packet: UnsafeRawBufferPointer) -> Int? {
        guard let data = packet.baseAddress, !packet.isEmpty, packet.count <= Int(Int32.max) else { return nil }
        let n = opus_packet_get_nb_samples(data.assumingMemoryBound(to: UInt8.self), Int32(packet.count), sampleRate)
        return n > 0 ? Int(n) : nil
    }

    /// The range coder's final state after the last decode (`OPUS_GET_FINAL_RANGE`); equals the encoder's for the same packet.
    public func finalRange() throws(OpusError) -> UInt32 {
        var range: UInt32 = 0
        let result = parley_opus_decoder_get_final_range(handle, &range)
        if result < 0 { throw OpusError(code: result, context: "OPUS_GET_FINAL_RANGE") }
        return range
    }

    /// Samples per channel of the last decode or concealment (`OPUS_GET_LAST_PACKET_DURATION`).
    public func lastPacketDuration() throws(OpusError) -> Int {
        var duration: Int32 = 0
        let result = parley_opus_decoder_get_last_packet_duration(handle, &duration)
        if result < 0 { throw OpusError(code: result, context: "OPUS_GET_LAST_PACKET_DURATION") }
        return Int(duration)
    }

    /// One `opus_decode` call; a negative result becomes an error naming `call`.
    @inline(__always)
    private func run(
        data: UnsafeRawPointer?, count: Int, output: UnsafeMutablePointer<Int16>, frameSize: Int, fec: Int32,
        _ call: @autoclosure () -> String
    ) throws(OpusError) -> Int {
        guard count <= Int(Int32.max) else { throw .badArgument("packet of \(count) bytes is too long") }
        let frameLimit = Int32(clamping: frameSize)
        let decoded = opus_decode(handle, data?.assumingMemoryBound(to: UInt8.self), Int32(count), output, frameLimit, fec)
        guard decoded >= 0 else {
            throw OpusError(code: decoded, context: "\(call())(packet: \(count) bytes, frameSize: \(frameSize))")
        }
        return Int(decoded)
    }
}
