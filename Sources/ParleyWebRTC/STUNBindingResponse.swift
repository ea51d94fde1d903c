import ParleyWire

/// A STUN Binding response, success (0x0101) or error (0x0111): what a client (or a test of the relay) reads back.
///
/// The same structural rules as `STUNBindingRequest`; MESSAGE-INTEGRITY is checked separately with
/// `hasValidIntegrity(key:in:)`. When an attribute appears twice, the first counts.
public struct STUNBindingResponse: Equatable, Sendable {
    /// The 12-byte transaction ID of the request answered.
    public var transactionID: [UInt8]
    /// True for a success response, false for an error response.
    public var isSuccess: Bool
    /// XOR-MAPPED-ADDRESS (or, without it, MAPPED-ADDRESS): where the request came from as the responder saw it.
    public var mappedAddress: PeerAddress?
    /// ERROR-CODE as class × 100 + number (400, 401, 420, 487, …) in an error response; a number over 99, which would
    /// read as another class, throws `bad_stun`.
    public var errorCode: Int?
    /// Offset of the MESSAGE-INTEGRITY attribute (its type field) within the message, if present.
    public var messageIntegrityOffset: Int?
    /// True when FINGERPRINT is present; a FINGERPRINT that does not match throws instead.
    public var hasFingerprint: Bool

    /// Parses a Binding success or error response. Throws `bad_stun` for a malformed message or address,
    /// `not_binding_response` for any other type, `bad_stun_fingerprint` for a wrong FINGERPRINT,
    /// `unknown_stun_attribute` for an unknown comprehension-required attribute.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WebRTCError) {
        let type = try STUNAttributeWalk.messageType(of: bytes)
        guard type == STUNLayout.bindingSuccess || type == STUNLayout.bindingError else {
            throw WebRTCError("not_binding_response", "STUN message type \(STUNLayout.hex(type)) is not a Binding response")
        }
        transactionID = Array(bytes[8..<STUN.headerSize])
        isSuccess = type == STUNLayout.bindingSuccess
        var xorMapped: PeerAddress?
        var mapped: PeerAddress?
        var errorCode: Int?
        let trailer = try STUNAttributeWalk.walk(bytes) { (type, offset, length) throws(WebRTCError) in
            let value = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
            switch type {
            case STUNLayout.xorMappedAddress:
                let address = try Self.address(value, xor: true, transactionID: bytes[8..<STUN.headerSize])
                if xorMapped == nil { xorMapped = address }
            case STUNLayout.mappedAddress:
                let address = try Self.address(value, xor: false, transactionID: bytes[8..<STUN.headerSize])
                if mapped == nil { mapped = address }
            case STUNLayout.errorCode:
                // 21 reserved bits, class (3 bits), number (8 bits: 0-99, the code modulo 100), reason phrase.
                guard length >= 4 else { throw WebRTCError("bad_stun", "STUN ERROR-CODE is \(length) bytes, fewer than 4") }
                guard value[3] <= 99 else {
                    throw WebRTCError("bad_stun", "STUN ERROR-CODE number \(value[3]) is over 99")
                }
                if errorCode == nil { errorCode = Int(value[2] & 0x07) * 100 + Int(value[3]) }
            case STUNLayout.unknownAttributes:
                break
            case ..<STUNLayout.firstComprehensionOptional:
                throw STUNAttributeWalk.unknownAttribute(type)
            default:
                break
            }
        }
        self.mappedAddress = xorMapped ?? mapped
        self.errorCode = errorCode
        self.messageIntegrityOffset = trailer.messageIntegrityOffset
        self.hasFingerprint = trailer.hasFingerprint
    }

    /// True when the response carries MESSAGE-INTEGRITY and it is the HMAC-SHA1 under `key` of `bytes`, the buffer
    /// this response was parsed from. `bytes` is not modified.
    public func hasValidIntegrity(key: [UInt8], in bytes: UnsafeRawBufferPointer) -> Bool {
        guard let offset = messageIntegrityOffset else { return false }
        return STUNMessageIntegrity.isValid(key: key, attributeOffset: offset, in: bytes)
    }

    // (XOR-)MAPPED-ADDRESS (RFC 8489 §14.1, §14.2):
    //
    // |0 0 0 0 0 0 0 0|    Family     |         (X-)Port              |
    // |                 (X-)Address (32 bits or 128 bits)             |
    //
    // X-Port is the port XOR the cookie's high 16 bits; an IPv4 X-Address is XORed with the cookie, an IPv6 one
    // with the cookie followed by the transaction ID.
    private static func address(
        _ value: UnsafeRawBufferPointer, xor: Bool, transactionID: Slice<UnsafeRawBufferPointer>
    ) throws(WebRTCError) -> PeerAddress {
        guard value.count >= 4 else { throw WebRTCError("bad_stun", "STUN address attribute of \(value.count) bytes") }
        let family = value[1]
        let port = value.stunUInt16(at: 2) ^ (xor ? UInt16(STUN.magicCookie >> 16) : 0)
        switch (family, value.count) {
        case (STUNLayout.familyIPv4, 8):
            return PeerAddress(ipv4: value.stunUInt32(at: 4) ^ (xor ? STUN.magicCookie : 0), port: port)
        case (STUNLayout.familyIPv6, 20):
            var mask: UInt64 = 0
            for byte in transactionID.prefix(4) { mask = mask << 8 | UInt64(byte) }
            let highMask = xor ? UInt64(STUN.magicCookie) << 32 | mask : 0
            var lowMask: UInt64 = 0
            for byte in transactionID.dropFirst(4) { lowMask = lowMask << 8 | UInt64(byte) }
            return PeerAddress(high: value.stunUInt64(at: 4) ^ highMask,
                               low: value.stunUInt64(at: 12) ^ (xor ? lowMask : 0), port: port)
        default:
            throw WebRTCError("bad_stun", "STUN address family \(family) with \(value.count) bytes")
        }
    }
}
