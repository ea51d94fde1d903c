/// STUN's FINGERPRINT (RFC 8489 §14.7): CRC-32/ISO-HDLC — the CRC of zlib, Ethernet and PNG (reflected polynomial
/// 0xEDB88320, initial value and final XOR 0xFFFFFFFF) — XORed with 0x5354554E.
public enum STUNFingerprint {
    /// CRC-32/ISO-HDLC of `bytes` ("123456789" gives the check value 0xCBF43926).
    public static func crc32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        table.withUnsafeBufferPointer { table in
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc = table[Int(UInt8(truncatingIfNeeded: crc) ^ byte)] ^ (crc >> 8)
            }
            return crc ^ 0xFFFF_FFFF
        }
    }

    /// The FINGERPRINT value of a message whose bytes up to the FINGERPRINT attribute are `bytes` (the header's
    /// length already counting the FINGERPRINT attribute).
    public static func value(over bytes: UnsafeRawBufferPointer) -> UInt32 {
        crc32(bytes) ^ STUNLayout.fingerprintXOR
    }

    /// The CRC of every byte value, one bit at a time.
    private static let table: [UInt32] = (0..<256).map { (n: UInt32) in
        var c = n
        for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
}
