// Where SRTP and SRTCP with an AEAD (RFC 7714 §7, §9) put their fields. The RTP header, CSRCs and header extension
// (an RFC 6464 audio level included) stay in the clear and are the AEAD's associated data; the payload (with any
// padding) is encrypted; the 16-byte tag follows it:
//
//   SRTP:  | RTP header ... extension | encrypted payload ... | tag (16) |
//          '------ associated data ---'
//
//   SRTCP: | V P RC PT length | SSRC | encrypted rest of the compound packet ... | tag (16) |E| SRTCP index (31)|
//          '---- associated data ---'                                                     '-- associated data --'
//
// IVs (§8.1, §9.1), each XORed with the 12-byte salt:
//
//   SRTP:  | 00 00 | SSRC (4) | ROC (4) | SEQ (2) |
//   SRTCP: | 00 00 | SSRC (4) | 00 00 | 0 + SRTCP index (31 bits) |

/// Sizes, offsets and bits of RFC 7714 framing, and the bounds-checked reads every context uses on hostile input.
enum SRTPLayout {
    /// The AEAD tag after the payload.
    static let tagLength = 16
    /// The AES-GCM IV.
    static let ivLength = 12
    /// The salt XORed into every IV.
    static let saltLength = 12
    /// The AES-256 key.
    static let keyLength = 32
    /// The E flag and SRTCP index word after the SRTCP tag.
    static let srtcpTrailerLength = 4
    /// The E flag in the SRTCP trailer: the packet body is encrypted.
    static let encryptedFlag: UInt32 = 0x8000_0000
    /// The largest SRTCP index (31 bits).
    static let maxSRTCPIndex: UInt32 = 0x7FFF_FFFF
    /// The RTP fixed header.
    static let rtpFixedHeaderLength = 12
    /// The clear part of an SRTCP packet: the first RTCP header and the sender's SSRC.
    static let rtcpClearLength = 8

    /// The length of the RTP header of `packet`: fixed part, CSRCs and header extension. Throws `malformed` when it
    /// is not version 2 or any of them runs past the end.
    static func rtpHeaderLength(_ packet: UnsafeRawBufferPointer) throws(SRTPError) -> Int {
        guard packet.count >= rtpFixedHeaderLength, packet[0] >> 6 == 2 else { throw .malformed }
        var length = rtpFixedHeaderLength + Int(packet[0] & 0x0F) * 4
        if packet[0] & 0x10 != 0 {
            guard length + 4 <= packet.count else { throw .malformed }
            length += 4 + Int(uint16(packet, at: length + 2)) * 4
        }
        guard length <= packet.count else { throw .malformed }
        return length
    }

    /// True when `packet` can be an RTCP packet: version 2 and its clear part present.
    static func isRTCP(_ packet: UnsafeRawBufferPointer, minimumLength: Int) -> Bool {
        packet.count >= minimumLength && packet[0] >> 6 == 2
    }

    /// The big-endian 16-bit value at `offset` (the caller checked the bounds).
    @inline(__always)
    static func uint16(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    /// The big-endian 32-bit value at `offset` (the caller checked the bounds).
    @inline(__always)
    static func uint32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// Writes `value` big-endian at `pointer`.
    @inline(__always)
    static func store(_ value: UInt32, at pointer: UnsafeMutableRawPointer) {
        pointer.storeBytes(of: value.bigEndian, as: UInt32.self)
    }
}
