import ParleyWire

/// The sending half of an SRTP/SRTCP crypto context with AEAD_AES_256_GCM (RFC 7714): protects RTP and RTCP
/// packets of up to `maxStreams` SSRCs under one key and salt, into caller-owned buffers, without allocating.
///
/// The key and salt are given directly (our handshake derives them per member per direction). Each SSRC's rollover
/// counter follows its sequence numbers as the receiver's will (RFC 3711 Appendix A: a wrap 65535 → 0 counts one
/// rollover; a late packet from before the wrap keeps the old ROC), and an index already protected is refused
/// (`replayed`): an IV must never be used twice under one key, so a retransmission resends the protected bytes.
/// SRTCP indices count from 0 for the whole context. One thread at a time.
public final class SRTPSender {
    private let cipher: SRTPCipher
    private var streams: SRTPStreamTable
    private var nextRTCPIndex: UInt32 = 0

    /// Bytes `protect` adds to an RTP packet (the tag).
    public static let rtpOverhead = SRTPLayout.tagLength
    /// Bytes `protect(rtcp:)` adds to an RTCP packet (the tag, then the E flag and SRTCP index).
    public static let rtcpOverhead = SRTPLayout.tagLength + SRTPLayout.srtcpTrailerLength

    /// True when this machine can run AES-256-GCM through libsodium (AES-NI); when false, `init` throws `aesGCMUnavailable`.
    public static var isAvailable: Bool { SRTPCipher.isAvailable }

    /// A context for a 32-byte `key` and a 12-byte `salt`, tracking at most `maxStreams` SSRCs.
    /// Throws `badKeyLength`, or `aesGCMUnavailable` on a CPU without AES-NI.
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

    /// Protects the RTP packet in `packet` into `out` (which may be the same memory, with `rtpOverhead` bytes to
    /// spare): header in the clear as associated data, payload encrypted, tag appended. Returns the SRTP length.
    /// Throws `malformed`, `bufferTooSmall`, `tooManyStreams`, `replayed` or `tooOld` (index already used or far
    /// behind), `indexExhausted`; nothing changes then.
    public func protect(_ packet: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws(SRTPError) -> Int {
        let headerLength = try SRTPLayout.rtpHeaderLength(packet)
        let total = packet.count + SRTPLayout.tagLength
        guard out.count >= total else { throw .bufferTooSmall }
        let sequence = SRTPLayout.uint16(packet, at: 2)
        let ssrc = SRTPLayout.uint32(packet, at: 8)
        if !retired.isEmpty, retired.contains(ssrc) { throw .replayed }  // a retired SSRC never has a slot
        let slot = try streams.slot(for: ssrc)
        let index = try streams.rtpIndex(sequence: sequence, in: slot)
        seal(packet, into: out, headerLength: headerLength, ssrc: ssrc, sequence: sequence, index: index)
        streams.acceptRTP(index, ssrc: ssrc, in: slot)
        return total
    }

    /// Protects again an RTP packet whose index this context protected before, when the packet is byte for byte the
    /// one protected then (a NACKed packet rebuilt and resent): the result is the same SRTP packet, so using the IV a
    /// second time reveals nothing. The caller guarantees the identity — header and payload: GCM under one IV with
    /// other bytes would leak the authentication key. Throws `tooOld` for an index never protected (or no longer in
    /// the 128-packet window), and what `protect` throws; nothing changes.
    public func protect(again packet: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws(SRTPError) -> Int {
        let headerLength = try SRTPLayout.rtpHeaderLength(packet)
        let total = packet.count + SRTPLayout.tagLength
        guard out.count >= total else { throw .bufferTooSmall }
        let sequence = SRTPLayout.uint16(packet, at: 2)
        let ssrc = SRTPLayout.uint32(packet, at: 8)
        let slot = try streams.slot(for: ssrc)
        let index = try streams.protectedRTPIndex(sequence: sequence, in: slot)
        seal(packet, into: out, headerLength: headerLength, ssrc: ssrc, sequence: sequence, index: index)
        return total
    }

    /// RFC 7714 §8 for one RTP packet at `index`: the header copied (when `out` is other memory) and authenticated,
    /// the payload encrypted after it, the tag appended. `out` holds `packet.count + tagLength` bytes (checked by callers).
    @inline(__always)
    private func seal(_ packet: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, headerLength: Int, ssrc: UInt32,
                      sequence: UInt16, index: UInt64) {
        let input = packet.baseAddress!, output = out.baseAddress!
        if output != UnsafeMutableRawPointer(mutating: input) { output.copyMemory(from: input, byteCount: headerLength) }
        let iv = cipher.rtpIV(ssrc: ssrc, rolloverCounter: SRTPPacketIndex.rolloverCounter(of: index), sequence: sequence)
        cipher.seal(input + headerLength, count: packet.count - headerLength, into: output + headerLength,
                    tag: output + packet.count, associatedData: output, associatedDataCount: headerLength, iv: iv)
    }

    /// Protects the (compound) RTCP packet in `packet` into `out` (which may be the same memory, with `rtcpOverhead`
    /// bytes to spare), with the next SRTCP index: the first header and SSRC in the clear, the rest encrypted unless
    /// `encrypt` is false (then all of it is only authenticated, E = 0), tag and E ‖ index appended. Returns the SRTCP
    /// length. Throws `malformed`, `bufferTooSmall`, `indexExhausted` (2³¹ packets: replace the key).
    public func protect(rtcp packet: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer,
                        encrypt: Bool = true) throws(SRTPError) -> Int {
        guard SRTPLayout.isRTCP(packet, minimumLength: SRTPLayout.rtcpClearLength) else { throw .malformed }
        let length = packet.count
        let total = length + Self.rtcpOverhead
        guard out.count >= total else { throw .bufferTooSmall }
        guard nextRTCPIndex <= SRTPLayout.maxSRTCPIndex else { throw .indexExhausted }
        let ssrc = SRTPLayout.uint32(packet, at: 4)
        let index = nextRTCPIndex
        let trailer = (encrypt ? SRTPLayout.encryptedFlag : 0) | index

        let input = packet.baseAddress!, output = out.baseAddress!
        let iv = cipher.rtcpIV(ssrc: ssrc, index: index)
        let clear = SRTPLayout.rtcpClearLength
        if encrypt {
            let associatedData = cipher.associatedDataArea
            associatedData.copyMemory(from: input, byteCount: clear)
            SRTPLayout.store(trailer, at: associatedData + clear)
            cipher.seal(input + clear, count: length - clear, into: output + clear, tag: output + length,
                        associatedData: associatedData, associatedDataCount: clear + SRTPLayout.srtcpTrailerLength, iv: iv)
            if output != UnsafeMutableRawPointer(mutating: input) { output.copyMemory(from: input, byteCount: clear) }
        } else {
            // Associated data is the whole packet and the trailer: lay them out contiguously, then put the tag between.
            if output != UnsafeMutableRawPointer(mutating: input) { output.copyMemory(from: input, byteCount: length) }
            SRTPLayout.store(trailer, at: output + length)
            let tag = cipher.savedTagArea
            cipher.seal(output, count: 0, into: tag, tag: tag, associatedData: output,
                        associatedDataCount: length + SRTPLayout.srtcpTrailerLength, iv: iv)
            (output + length).copyMemory(from: tag, byteCount: SRTPLayout.tagLength)
        }
        SRTPLayout.store(trailer, at: output + length + SRTPLayout.tagLength)
        nextRTCPIndex += 1
        return total
    }

    /// The rollover counter of `ssrc`'s stream (what an SDP `a=crypto` or a late joiner would need), nil before its
    /// first packet.
    public func rolloverCounter(ssrc: UInt32) -> UInt32? {
        streams.highestRTPIndex(of: ssrc).map(SRTPPacketIndex.rolloverCounter(of:))
    }

    /// Every stream's SSRC and the highest RTP packet index protected so far: what a receiver that starts late needs
    /// to know each stream's rollover counter (RFC 3711 §3.3.1), see `SRTPReceiver.seed`.
    public var highestRTPIndices: [(ssrc: UInt32, index: UInt64)] { streams.rtpHighest }

    /// The SRTCP index the next `protect(rtcp:)` uses.
    public var nextSRTCPIndex: UInt32 { nextRTCPIndex }

    /// SSRCs whose streams ended (`retire`): never protected again under this key.
    public private(set) var retired: Set<UInt32> = []

    /// Ends `ssrc`'s stream: its slot is freed for another SSRC, and the SSRC is refused (`replayed`) from now on, so
    /// none of its indices is ever protected twice under this key. A long-lived context (a room's downstream key)
    /// thus serves any number of streams over time, `maxStreams` at once.
    public func retire(ssrc: UInt32) {
        streams.remove(ssrc)
        retired.insert(ssrc)
    }

    /// A context under `key`, tracking at most `maxStreams` SSRCs, that carries on this one's streams: each starts at
    /// its highest index here (so receivers seeded with `highestRTPIndices` follow its rollovers) and the retired
    /// SSRCs stay retired. How a room's downstream key changes without its streams restarting.
    public func successor(key: MediaKey, maxStreams: Int) throws(SRTPError) -> SRTPSender {
        let next = try key.sender(maxStreams: maxStreams)
        for (ssrc, index) in streams.rtpHighest { _ = next.streams.seedRTP(ssrc: ssrc, index: index) }
        next.retired = retired
        return next
    }

    /// Whether `ssrc` was retired (a new stream must take another SSRC).
    public func isRetired(_ ssrc: UInt32) -> Bool { retired.contains(ssrc) }
}
