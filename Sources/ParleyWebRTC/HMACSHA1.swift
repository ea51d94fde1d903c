import COpenSSL

/// HMAC-SHA1 (RFC 2104) through OpenSSL's one-shot `HMAC()`: STUN's MESSAGE-INTEGRITY (`STUNMessageIntegrity`) and
/// the TURN REST credentials the relay hands out (`TURNCredential`). The one place ParleyWebRTC calls `HMAC()`.
enum HMACSHA1 {
    /// The tag's length in bytes.
    static let tagSize = 20

    /// HMAC-SHA1 of `message` under `key`, written to the 20 bytes at `out`.
    static func authenticate(key: [UInt8], message: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) {
        var outLength: UInt32 = 0
        // `HMAC()` wants a non-null key pointer even for an empty key.
        let keyBytes = key.isEmpty ? [0] : key
        keyBytes.withUnsafeBytes { keyPointer in
            _ = HMAC(EVP_sha1(), keyPointer.baseAddress, Int32(key.count),
                     message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                     out.assumingMemoryBound(to: UInt8.self), &outLength)
        }
        assert(outLength == UInt32(tagSize))
    }

    /// HMAC-SHA1 of `message` under `key`: the 20-byte tag.
    static func tag(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: tagSize)
        message.withUnsafeBytes { message in
            tag.withUnsafeMutableBytes { authenticate(key: key, message: message, into: $0.baseAddress!) }
        }
        return tag
    }
}
