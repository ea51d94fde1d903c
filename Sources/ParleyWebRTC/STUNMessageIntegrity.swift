/// STUN's MESSAGE-INTEGRITY (RFC 8489 §14.5): HMAC-SHA1 over the message up to the attribute, computed with the
/// header's length set as if MESSAGE-INTEGRITY were the last attribute. ICE uses short-term credentials: the key is
/// the peer's ice-pwd as UTF-8 (RFC 8445 §7.2.2); ICE passwords are ASCII, so no SASLprep.
enum STUNMessageIntegrity {
    /// The size of the whole attribute: header and HMAC.
    static let attributeSize = STUNLayout.attributeHeaderSize + STUNLayout.messageIntegritySize

    /// HMAC-SHA1 of `message` under `key`, written to the 20 bytes at `out`.
    static func hmac(key: [UInt8], message: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) {
        HMACSHA1.authenticate(key: key, message: message, into: out)
    }

    /// True when the MESSAGE-INTEGRITY attribute at `offset` of `bytes` is the HMAC of what precedes it under `key`.
    /// The message is copied to a temporary buffer to patch its length; `bytes` is not written. Compares in
    /// constant time.
    static func isValid(key: [UInt8], attributeOffset offset: Int, in bytes: UnsafeRawBufferPointer) -> Bool {
        guard offset >= STUN.headerSize, offset % 4 == 0, bytes.count >= offset + attributeSize,
              bytes.stunUInt16(at: offset) == STUNLayout.messageIntegrity,
              bytes.stunUInt16(at: offset + 2) == UInt16(STUNLayout.messageIntegritySize)
        else { return false }
        return withUnsafeTemporaryAllocation(byteCount: offset + STUNLayout.messageIntegritySize, alignment: 1) { scratch in
            scratch.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<offset]))
            scratch.stunSet(UInt16(offset + attributeSize - STUN.headerSize), at: 2)
            let computed = scratch.baseAddress! + offset
            hmac(key: key, message: UnsafeRawBufferPointer(rebasing: scratch[0..<offset]), into: computed)
            var difference: UInt8 = 0
            for i in 0..<STUNLayout.messageIntegritySize {
                difference |= scratch[offset + i] ^ bytes[offset + STUNLayout.attributeHeaderSize + i]
            }
            return difference == 0
        }
    }
}
