import ParleyWire

/// The receiving half of an SRTP/SRTCP crypto context with AEAD_AES_256_GCM (RFC 7714): unprotects packets of up
/// to `maxStreams` SSRCs under one key and salt, into caller-owned buffers, without allocating.
///
/// Per SSRC it keeps the highest packet index (giving the rollover counter guess of RFC 3711 Appendix A) and a
/// 128-packet replay window for SRTP, and one for SRTCP indices. Nothing changes until a packet authenticated: a
/// forged packet cannot advance the rollover counter, slide a window or take a stream slot. One thread at a time.
public final class SRTPReceiver {
    private let cipher: SRTPCipher
    private var streams: SRTPStreamTable

    /// True when this machine can run AES-256-GCM through libsodium (AES-NI); when false, `init` throws `aesGCMUnavailable`.
    public static var isAvailable: Bool { SRTPCipher.isAvailable }

    /// A context for a 32-byte `key` and a 12-byte `salt`, tracking at most `maxStreams` SSRCs (a new SSRC beyond
    /// them is refused with `tooManyStreams`, before any cryptography). Throws `badKeyLength` or `aesGCMUnavailable`.
    public init(key: [UInt8], salt: [UInt8], maxStreams: Int = 16) throws(SRTPError) {
        cipher = try SRTPCipher(key: key, salt: salt)
        streams = SRTPStreamTable(capacity: maxStreams)
    }

    /// Notes the lines handling one of its packets reads (`HotLines`): this context, its cipher and its streams.
    public func noteLines(_ hot: HotLines) {
        hot.note(object: self, bytes: 64)
        cipher.noteLines(hot)
        streams.noteLines(hot)
    }

    /// Verifies and decrypts the SRTP packet in `packet` into `out` (which may be the same memory): the RTP packet,
    /// header untouched, tag removed. Returns its length. Throws `malformed`, `bufferTooSmall`, `tooManyStreams`,
    /// `replayed`, `tooOld`, `indexExhausted`, `authenticationFailed`; nothing changes then (`out` may hold garbage).
    public func unprotect(_ packet: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws(SRTPError) -> Int {
        let headerLength = try SRTPLayout.rtpHeaderLength(packet)
        guard packet.count >= headerLength + SRTPLayout.tagLength else { throw .malformed }
        let length = packet.count - SRTPLayout.tagLength
        guard out.count >= length else { throw .bufferTooSmall }
        let sequence = SRTPLayout.uint16(packet, at: 2)
        let ssrc = SRTPLayout.uint32(packet, at: 8)
        let slot = try streams.slot(for: ssrc)
        let index = try streams.rtpIndex(sequence: sequence, in: slot)

        let input = packet.baseAddress!, output = out.baseAddress!
        let iv = cipher.rtpIV(ssrc: ssrc, rolloverCounter: SRTPPacketIndex.rolloverCounter(of: index), sequence: sequence)
        guard cipher.open(input + headerLength, count: length - headerLength, tag: input + length, into: output + headerLength,
                          associatedData: input, associatedDataCount: headerLength, iv: iv) else {
            throw .authenticationFailed
        }
        if output != UnsafeMutableRawPointer(mutating: input) { output.copyMemory(from: input, byteCount: headerLength) }
        streams.acceptRTP(index, ssrc: ssrc, in: slot)
        return length
    }

    /// Verifies (and, when its E flag is set, decrypts) the SRTCP packet in `packet` into `out` (which may be the
    /// same memory): the RTCP packet, tag and trailer removed. Returns its length. Throws `malformed`,
    /// `bufferTooSmall` (an unencrypted packet needs 4 bytes beyond its RTCP length), `tooManyStreams`, `replayed`,
    /// `tooOld`, `authenticationFailed`; nothing changes then.
    public func unprotect(rtcp packet: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws(SRTPError) -> Int {
        let overhead = SRTPLayout.tagLength + SRTPLayout.srtcpTrailerLength
        guard SRTPLayout.isRTCP(packet, minimumLength: SRTPLayout.rtcpClearLength + overhead) else { throw .malformed }
        let length = packet.count - overhead
        let trailer = SRTPLayout.uint32(packet, at: packet.count - SRTPLayout.srtcpTrailerLength)
        let encrypted = trailer & SRTPLayout.encryptedFlag != 0
        let index = trailer & SRTPLayout.maxSRTCPIndex
        guard out.count >= (encrypted ? length : length + SRTPLayout.srtcpTrailerLength) else { throw .bufferTooSmall }
        let ssrc = SRTPLayout.uint32(packet, at: 4)
        let slot = try streams.slot(for: ssrc)
        try streams.checkRTCP(UInt64(index), in: slot)

        let input = packet.baseAddress!, output = out.baseAddress!
        let iv = cipher.rtcpIV(ssrc: ssrc, index: index)
        let clear = SRTPLayout.rtcpClearLength
        let authentic: Bool
        if encrypted {
            let associatedData = cipher.associatedDataArea
            associatedData.copyMemory(from: input, byteCount: clear)
            SRTPLayout.store(trailer, at: associatedData + clear)
            authentic = cipher.open(input + clear, count: length - clear, tag: input + length, into: output + clear,
                                    associatedData: associatedData, associatedDataCount: clear + SRTPLayout.srtcpTrailerLength, iv: iv)
            if authentic, output != UnsafeMutableRawPointer(mutating: input) { output.copyMemory(from: input, byteCount: clear) }
        } else {
            // Associated data is the whole packet and the trailer: save the tag, lay them out contiguously in `out`.
            let tag = cipher.savedTagArea
            tag.copyMemory(from: input + length, byteCount: SRTPLayout.tagLength)
            if output != UnsafeMutableRawPointer(mutating: input) { output.copyMemory(from: input, byteCount: length) }
            SRTPLayout.store(trailer, at: output + length)
            authentic = cipher.open(tag, count: 0, tag: tag, into: tag, associatedData: output,
                                    associatedDataCount: length + SRTPLayout.srtcpTrailerLength, iv: iv)
        }
        guard authentic else { throw .authenticationFailed }
        streams.acceptRTCP(UInt64(index), ssrc: ssrc, in: slot)
        return length
    }

    /// The rollover counter of `ssrc`'s stream as estimated so far, nil before its first authentic RTP packet.
    public func rolloverCounter(ssrc: UInt32) -> UInt32? {
        streams.highestRTPIndex(of: ssrc).map(SRTPPacketIndex.rolloverCounter(of:))
    }

    /// Starts tracking `ssrc` at packet index `index` (its sender's highest so far, told by a trusted party): a
    /// receiver joining a stream after its sequence numbers wrapped then estimates the right rollover counter, which
    /// it cannot learn from the packets (RFC 3711 §3.3.1). Ignored for a stream already tracked or a full table;
    /// returns whether it took it. The index itself counts as received.
    @discardableResult
    public func seed(ssrc: UInt32, index: UInt64) -> Bool {
        guard index >> 16 <= SRTPPacketIndex.maxRolloverCounter else { return false }
        return streams.seedRTP(ssrc: ssrc, index: index)
    }

    /// Streams (SSRCs) tracked so far.
    public var streamCount: Int { streams.count }
}
