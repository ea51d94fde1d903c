import CSodium

/// The Noise spec's hash functions for `BLAKE2b` (revision 34, §4.3 and §5.1): `HASH` is BLAKE2b-512 through
/// libsodium's `crypto_generichash`, `HMAC-HASH` is RFC 2104 with BLAKE2b's 128-byte block, and `HKDF` is the Noise
/// variant built on it (RFC 5869 with an empty `info`, one to three outputs).
enum NoiseHash {
    /// `HASHLEN`: 64 bytes for BLAKE2b-512.
    static let hashLength = 64
    /// `BLOCKLEN`: BLAKE2b's block, the HMAC pad length.
    static let blockLength = 128

    /// `HASH(parts[0] || parts[1] || ...)`: BLAKE2b-512 over the concatenation, without building it.
    static func hash(_ parts: [UInt8]...) -> [UInt8] { hash(parts) }

    /// `HASH` over an array of parts.
    static func hash(_ parts: [[UInt8]]) -> [UInt8] {
        Sodium.ensureReady()
        // The state is 64-byte aligned in C (`CRYPTO_ALIGN(64)`), so Swift sees it as opaque: allocate it aligned.
        let raw = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        defer {
            sodium_memzero(raw, crypto_generichash_statebytes())
            raw.deallocate()
        }
        let state = OpaquePointer(raw)
        crypto_generichash_init(state, nil, 0, hashLength)
        for part in parts {
            part.withUnsafeBufferPointer { _ = crypto_generichash_update(state, $0.baseAddress, UInt64($0.count)) }
        }
        var out = [UInt8](repeating: 0, count: hashLength)
        out.withUnsafeMutableBufferPointer { _ = crypto_generichash_final(state, $0.baseAddress!, hashLength) }
        return out
    }

    /// `HMAC-HASH(key, data)` per RFC 2104: `H((K ⊕ opad) || H((K ⊕ ipad) || data))`, the key zero-padded to 128
    /// bytes (hashed first if longer, which Noise never does: its keys are `HASHLEN` long).
    static func hmac(key: [UInt8], _ data: [UInt8]...) -> [UInt8] {
        var block = key.count > blockLength ? hash(key) : key
        block += [UInt8](repeating: 0, count: blockLength - block.count)
        let inner = hash([block.map { $0 ^ 0x36 }] + data)
        let outer = hash(block.map { $0 ^ 0x5c }, inner)
        sodium_memzero(&block, block.count)
        return outer
    }

    /// `HKDF(chainingKey, inputKeyMaterial, numOutputs)` exactly as Noise §4.3 defines it: two or three outputs of
    /// `HASHLEN` bytes each.
    static func hkdf(chainingKey: [UInt8], inputKeyMaterial: [UInt8], outputs: Int) -> [[UInt8]] {
        precondition(outputs == 2 || outputs == 3, "Noise's HKDF yields two or three outputs")
        let tempKey = hmac(key: chainingKey, inputKeyMaterial)
        let first = hmac(key: tempKey, [0x01])
        let second = hmac(key: tempKey, first, [0x02])
        guard outputs == 3 else { return [first, second] }
        return [first, second, hmac(key: tempKey, second, [0x03])]
    }
}
