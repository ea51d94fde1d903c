/// What parsing a Binding request and a Binding response share: the header checks, and the walk over attributes
/// with the placement rules for MESSAGE-INTEGRITY and FINGERPRINT.
///
/// Placement is strict, stricter than RFC 8489 §14.5's "ignore what follows MESSAGE-INTEGRITY": only FINGERPRINT
/// may follow MESSAGE-INTEGRITY, and nothing may follow FINGERPRINT; anything else throws. No browser sends more, and
/// a message the relay would answer carries nothing it ignores after the part the HMAC covers.
enum STUNAttributeWalk {
    /// Where the integrity attributes were found.
    struct Trailer {
        /// Offset of the MESSAGE-INTEGRITY attribute's type field, if there is one.
        var messageIntegrityOffset: Int?
        /// True when FINGERPRINT is present (it was also checked: a wrong one throws).
        var hasFingerprint: Bool
    }

    /// Checks the 20-byte header and returns the message type: the first two bits zero, a length that is a
    /// multiple of 4 and covers exactly the rest of `bytes`, the magic cookie.
    static func messageType(of bytes: UnsafeRawBufferPointer) throws(WebRTCError) -> UInt16 {
        guard bytes.count >= STUN.headerSize else {
            throw WebRTCError("bad_stun", "\(bytes.count) bytes is shorter than the 20-byte STUN header")
        }
        let type = bytes.stunUInt16(at: 0)
        guard type & 0xC000 == 0 else { throw WebRTCError("bad_stun", "the first two bits of a STUN message are not zero") }
        let length = Int(bytes.stunUInt16(at: 2))
        guard length % 4 == 0 else { throw WebRTCError("bad_stun", "STUN message length \(length) is not a multiple of 4") }
        guard length == bytes.count - STUN.headerSize else {
            throw WebRTCError("bad_stun", "STUN message length \(length) disagrees with the \(bytes.count - STUN.headerSize) bytes after the header")
        }
        guard bytes.stunUInt32(at: 4) == STUN.magicCookie else {
            throw WebRTCError("bad_stun", "the STUN magic cookie is not 0x2112A442")
        }
        return type
    }

    /// Walks the attributes of `bytes` (its header already checked), calling `body(type, valueOffset, length)` for
    /// each one before MESSAGE-INTEGRITY other than MESSAGE-INTEGRITY and FINGERPRINT themselves. Checks the
    /// FINGERPRINT value.
    static func walk(
        _ bytes: UnsafeRawBufferPointer,
        _ body: (UInt16, Int, Int) throws(WebRTCError) -> Void
    ) throws(WebRTCError) -> Trailer {
        var trailer = Trailer(messageIntegrityOffset: nil, hasFingerprint: false)
        var offset = STUN.headerSize
        while offset < bytes.count {
            // The header check made the remaining length a multiple of 4, so a whole attribute header is here.
            let type = bytes.stunUInt16(at: offset)
            let length = Int(bytes.stunUInt16(at: offset + 2))
            let valueOffset = offset + STUNLayout.attributeHeaderSize
            guard length <= bytes.count - valueOffset else {
                throw WebRTCError("bad_stun", "STUN attribute \(STUNLayout.hex(type)) of \(length) bytes overruns the message")
            }
            guard !trailer.hasFingerprint else {
                throw WebRTCError("bad_stun", "STUN attribute \(STUNLayout.hex(type)) follows FINGERPRINT, which must be last")
            }
            switch type {
            case STUNLayout.fingerprint:
                guard length == STUNLayout.fingerprintSize else {
                    throw WebRTCError("bad_stun", "STUN FINGERPRINT is \(length) bytes, not 4")
                }
                let expected = STUNFingerprint.value(over: UnsafeRawBufferPointer(rebasing: bytes[0..<offset]))
                guard bytes.stunUInt32(at: valueOffset) == expected else {
                    throw WebRTCError("bad_stun_fingerprint", "the STUN FINGERPRINT does not match the message")
                }
                trailer.hasFingerprint = true
            case STUNLayout.messageIntegrity where trailer.messageIntegrityOffset == nil:
                guard length == STUNLayout.messageIntegritySize else {
                    throw WebRTCError("bad_stun", "STUN MESSAGE-INTEGRITY is \(length) bytes, not 20")
                }
                trailer.messageIntegrityOffset = offset
            default:
                guard trailer.messageIntegrityOffset == nil else {
                    throw WebRTCError("bad_stun", "STUN attribute \(STUNLayout.hex(type)) follows MESSAGE-INTEGRITY; only FINGERPRINT may")
                }
                try body(type, valueOffset, length)
            }
            offset = valueOffset + ((length + 3) & ~3)
        }
        return trailer
    }

    /// The refusal of a comprehension-required attribute the parser does not know. A full agent would answer
    /// 420 (Unknown Attribute); the relay answers nothing.
    static func unknownAttribute(_ type: UInt16) -> WebRTCError {
        WebRTCError("unknown_stun_attribute", "STUN attribute \(STUNLayout.hex(type)) is comprehension-required and unknown")
    }
}
