import CSodium

/// HMAC, constant-time comparison and random bytes, each a thin wrapper over one libsodium call.
///
/// No Foundation here: the `into:` HMAC variant is used per datagram (cookies, resume proofs) and does not allocate.
public enum Crypto {
    /// Length in bytes of an HMAC-SHA-256 tag.
    public static let hmacSHA256Length = 32

    /// HMAC-SHA-256 of `message` under `key` (any key length), via `crypto_auth_hmacsha256_init/_update/_final`.
    public static func hmacSHA256(key: [UInt8], message: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: hmacSHA256Length) { out, initialised in
            key.withUnsafeBytes { keyBytes in
                hmacSHA256(key: keyBytes, message: message, into: UnsafeMutableRawBufferPointer(out))
            }
            initialised = hmacSHA256Length
        }
    }

    /// HMAC-SHA-256 of `message` under `key` (any key length); returns the 32-byte tag.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { hmacSHA256(key: key, message: $0) }
    }

    /// Writes the MAC into `out` (at least 32 bytes) without allocating; for per-datagram use (cookies, resume proofs).
    public static func hmacSHA256(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer,
                                  into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= hmacSHA256Length, "HMAC-SHA-256 output buffer must hold 32 bytes")
        SodiumRuntime.ensureReady()
        var state = crypto_auth_hmacsha256_state()
        // libsodium never dereferences the key or message pointer when the length is 0, but an empty Swift
        // buffer may have a nil base address; point at a harmless byte instead.
        var empty: UInt8 = 0
        withUnsafeMutablePointer(to: &empty) { emptyPointer in
            let keyPointer = key.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(emptyPointer)
            _ = crypto_auth_hmacsha256_init(&state, keyPointer, key.count)
        }
        if let messagePointer = message.baseAddress, message.count > 0 {
            _ = crypto_auth_hmacsha256_update(&state, messagePointer.assumingMemoryBound(to: UInt8.self),
                                              UInt64(message.count))
        }
        _ = crypto_auth_hmacsha256_final(&state, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        sodium_memzero(&state, MemoryLayout<crypto_auth_hmacsha256_state>.size)
    }

    /// Length in bytes of a SHA-256 digest.
    public static let sha256Length = 32

    /// SHA-256 of `message` (`crypto_hash_sha256`): 32 bytes.
    public static func sha256(_ message: [UInt8]) -> [UInt8] {
        SodiumRuntime.ensureReady()
        return [UInt8](unsafeUninitializedCapacity: sha256Length) { out, initialised in
            message.withUnsafeBufferPointer { input in
                var empty: UInt8 = 0  // an empty array may have no base address; libsodium reads nothing for length 0
                withUnsafePointer(to: &empty) { emptyPointer in
                    _ = crypto_hash_sha256(out.baseAddress!, input.baseAddress ?? emptyPointer, UInt64(input.count))
                }
            }
            initialised = sha256Length
        }
    }

    /// Lower-case hexadecimal of `bytes` (two digits a byte), as SHA-256 digests are usually written.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Constant-time equality (`sodium_memcmp`); false when lengths differ (the length itself is not secret).
    public static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
        SodiumRuntime.ensureReady()
        return sodium_memcmp(pa, pb, a.count) == 0
    }

    /// Constant-time equality of two byte arrays (`sodium_memcmp`); false when lengths differ.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { ra in b.withUnsafeBytes { rb in constantTimeEqual(ra, rb) } }
    }

    /// `count` bytes from libsodium's CSPRNG (`randombytes_buf`).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "randomBytes count must not be negative")
        SodiumRuntime.ensureReady()
        return [UInt8](unsafeUninitializedCapacity: count) { out, initialised in
            if let base = out.baseAddress, count > 0 { randombytes_buf(base, count) }
            initialised = count
        }
    }

    /// A uniformly random 32-bit value (`randombytes_random`).
    public static func randomUInt32() -> UInt32 {
        SodiumRuntime.ensureReady()
        return randombytes_random()
    }

    /// A uniformly random 64-bit value (`randombytes_buf` into 8 bytes).
    public static func randomUInt64() -> UInt64 {
        SodiumRuntime.ensureReady()
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { randombytes_buf($0.baseAddress!, 8) }
        return value
    }
}
