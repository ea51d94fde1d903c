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
        hash { update in for part in parts { update(part) } }
    }

    /// `HASH` over whatever `feed` passes to its `update` function, in order. The state lives on the stack (64-byte
    /// aligned, as C declares it) and is wiped after use.
    private static func hash(_ feed: (_ update: ([UInt8]) -> Void) -> Void) -> [UInt8] {
        Sodium.ensureReady()
        return withUnsafeTemporaryAllocation(byteCount: crypto_generichash_statebytes(), alignment: 64) { raw in
            let state = OpaquePointer(raw.baseAddress!)
            crypto_generichash_init(state, nil, 0, hashLength)
            feed { part in part.withUnsafeBufferPointer { _ = crypto_generichash_update(state, $0.baseAddress, UInt64($0.count)) } }
            var out = [UInt8](repeating: 0, count: hashLength)
            out.withUnsafeMutableBufferPointer { _ = crypto_generichash_final(state, $0.baseAddress!, hashLength) }
            sodium_memzero(raw.baseAddress!, raw.count)
            return out
        }
    }

    /// `HMAC-HASH(key, data)` per RFC 2104: `H((K ⊕ opad) || H((K ⊕ ipad) || data))`, the key zero-padded to 128
    /// bytes (hashed first if longer, which Noise never does: its keys are `HASHLEN` long). One pad buffer, turned
    /// from the inner pad into the outer one in place.
    static func hmac(key: [UInt8], _ data: [UInt8]...) -> [UInt8] {
        let key = key.count > blockLength ? hash(key) : key
        var pad = [UInt8](repeating: 0x36, count: blockLength)
        for i in key.indices { pad[i] ^= key[i] }
        let inner = hash { update in
            update(pad)
            for part in data { update(part) }
        }
        for i in pad.indices { pad[i] ^= 0x36 ^ 0x5c }
        let outer = hash { update in
            update(pad)
            update(inner)
        }
        sodium_memzero(&pad, pad.count)
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
