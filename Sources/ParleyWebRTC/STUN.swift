// STUN message header (RFC 8489 §5):
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |0 0|     STUN Message Type     |         Message Length        |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                         Magic Cookie                          |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                     Transaction ID (96 bits)                  |
// |                                                               |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Message Length counts the attributes after the header. Each attribute (§14) is a TLV whose Length counts the value
// without the padding that aligns the next attribute to 32 bits:
//
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |         Type                  |            Length             |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                         Value (variable)                ....
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// A relay message ends with MESSAGE-INTEGRITY (HMAC-SHA1, §14.5) and FINGERPRINT (CRC-32, §14.7), in that order.

/// STUN (RFC 8489) as the relay's ICE-lite agent speaks it: header constants and the RFC 7983 demultiplexing test.
public enum STUN {
    /// The magic cookie at bytes 4..<8 of every RFC 5389/8489 message.
    public static let magicCookie: UInt32 = 0x2112_A442
    /// Size of the fixed header.
    public static let headerSize = 20
    /// Size of the transaction ID at bytes 8..<20.
    public static let transactionIDSize = 12

    /// True when a datagram whose first byte is `first` is STUN on a port shared with DTLS and SRTP (RFC 7983 §7:
    /// 0...3 is STUN, 20...63 DTLS, 128...191 RTP/RTCP).
    @inline(__always)
    public static func isSTUN(_ first: UInt8) -> Bool { first <= 3 }
}

/// Message and attribute types, field sizes.
enum STUNLayout {
    /// Binding request (class request, method Binding).
    static let bindingRequest: UInt16 = 0x0001
    /// Binding success response.
    static let bindingSuccess: UInt16 = 0x0101
    /// Binding error response.
    static let bindingError: UInt16 = 0x0111

    /// MAPPED-ADDRESS (RFC 8489 §14.1).
    static let mappedAddress: UInt16 = 0x0001
    /// USERNAME (§14.3).
    static let username: UInt16 = 0x0006
    /// MESSAGE-INTEGRITY (§14.5).
    static let messageIntegrity: UInt16 = 0x0008
    /// ERROR-CODE (§14.8).
    static let errorCode: UInt16 = 0x0009
    /// UNKNOWN-ATTRIBUTES (§14.9).
    static let unknownAttributes: UInt16 = 0x000A
    /// XOR-MAPPED-ADDRESS (§14.2).
    static let xorMappedAddress: UInt16 = 0x0020
    /// PRIORITY (RFC 8445 §16.1).
    static let priority: UInt16 = 0x0024
    /// USE-CANDIDATE (RFC 8445 §16.1).
    static let useCandidate: UInt16 = 0x0025
    /// FINGERPRINT (§14.7).
    static let fingerprint: UInt16 = 0x8028
    /// ICE-CONTROLLED (RFC 8445 §16.1).
    static let iceControlled: UInt16 = 0x8029
    /// ICE-CONTROLLING (RFC 8445 §16.1).
    static let iceControlling: UInt16 = 0x802A
    /// Types below this are comprehension-required (§14).
    static let firstComprehensionOptional: UInt16 = 0x8000

    /// Type and length before every attribute value.
    static let attributeHeaderSize = 4
    /// HMAC-SHA1 output.
    static let messageIntegritySize = 20
    /// CRC-32.
    static let fingerprintSize = 4
    /// XORed into the CRC-32 so STUN's FINGERPRINT differs from CRCs other protocols carry (§14.7).
    static let fingerprintXOR: UInt32 = 0x5354_554E
    /// USERNAME is at most 513 bytes of UTF-8 (§14.3).
    static let maxUsernameSize = 513
    /// Address family values of (XOR-)MAPPED-ADDRESS.
    static let familyIPv4: UInt8 = 0x01
    /// Address family values of (XOR-)MAPPED-ADDRESS.
    static let familyIPv6: UInt8 = 0x02

    /// `type` as `0x1234`, for error reasons.
    static func hex(_ type: UInt16) -> String {
        let digits = String(type, radix: 16)
        return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
    }
}

// Big-endian field access for STUN. Named apart from ParleyWire's internal `get*`/`set*` helpers so the two
// never collide if this module grows its own.
extension UnsafeRawBufferPointer {
    /// The big-endian `UInt16` at `offset`.
    @inline(__always)
    func stunUInt16(at offset: Int) -> UInt16 {
        UInt16(self[offset]) << 8 | UInt16(self[offset + 1])
    }

    /// The big-endian `UInt32` at `offset`.
    @inline(__always)
    func stunUInt32(at offset: Int) -> UInt32 {
        UInt32(self[offset]) << 24 | UInt32(self[offset + 1]) << 16 | UInt32(self[offset + 2]) << 8 | UInt32(self[offset + 3])
    }

    /// The big-endian `UInt64` at `offset`.
    @inline(__always)
    func stunUInt64(at offset: Int) -> UInt64 {
        UInt64(stunUInt32(at: offset)) << 32 | UInt64(stunUInt32(at: offset + 4))
    }
}

extension UnsafeMutableRawBufferPointer {
    /// Writes `value` big-endian at `offset`.
    @inline(__always)
    func stunSet(_ value: UInt16, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 1] = UInt8(truncatingIfNeeded: value)
    }

    /// Writes `value` big-endian at `offset`.
    @inline(__always)
    func stunSet(_ value: UInt32, at offset: Int) {
        stunSet(UInt16(truncatingIfNeeded: value >> 16), at: offset)
        stunSet(UInt16(truncatingIfNeeded: value), at: offset + 2)
    }

    /// Writes `value` big-endian at `offset`.
    @inline(__always)
    func stunSet(_ value: UInt64, at offset: Int) {
        stunSet(UInt32(truncatingIfNeeded: value >> 32), at: offset)
        stunSet(UInt32(truncatingIfNeeded: value), at: offset + 4)
    }
}
