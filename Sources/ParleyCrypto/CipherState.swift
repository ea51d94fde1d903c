import CSodium

/// Noise's `CipherState` (revision 34, §5.1) for `ChaChaPoly`: a key `k` (or none yet) and a 64-bit nonce `n`;
/// ChaCha20-Poly1305 IETF from libsodium with the 96-bit nonce `00 00 00 00 || little-endian n`.
///
/// Used by the handshake and for Noise's own transport messages (implicit nonces, in order); datagrams that may be
/// lost or reordered go through `SealedChannel`, which takes the two keys `split()` yields.
public struct CipherState: Sendable {
    /// Length of a ChaChaPoly key.
    public static let keyLength = 32
    /// Length of the Poly1305 tag each encryption appends.
    public static let tagLength = 16
    /// The largest Noise message (§3): 65535 bytes.
    public static let maxMessageLength = 65535

    /// The key, or nil before `initializeKey` (then encryption is the identity). An array, so copies are not wiped:
    /// handshake states are short-lived, and long-lived transport keys move into `SealedChannel`, which wipes them.
    var key: [UInt8]?
    /// The next nonce; 2^64−1 is reserved and never used.
    public private(set) var nonce: UInt64 = 0

    /// A cipher state with no key yet (`InitializeKey(empty)`).
    public init() {}

    /// A cipher state holding `key` (32 bytes), nonce 0.
    public init(key: [UInt8]) {
        precondition(key.count == Self.keyLength, "a ChaChaPoly key is 32 bytes")
        self.key = key
    }

    /// `HasKey()`.
    public var hasKey: Bool { key != nil }

    /// `EncryptWithAd(ad, plaintext)`: the ciphertext with its tag, or the plaintext itself when there is no key.
    /// Throws `.nonceExhausted` when `n` has reached 2^64−1.
    public mutating func encrypt(_ plaintext: [UInt8], associatedData: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return plaintext }
        guard nonce < UInt64.max else { throw .nonceExhausted }
        var out = [UInt8](repeating: 0, count: plaintext.count + Self.tagLength)
        out.withUnsafeMutableBytes { o in
            plaintext.withUnsafeBytes { p in
                associatedData.withUnsafeBytes { a in
                    key.withUnsafeBytes { k in
                        _ = Self.encrypt(key: k, nonce: nonce, plaintext: p, associatedData: a, into: o)
                    }
                }
            }
        }
        nonce += 1
        return out
    }

    /// `DecryptWithAd(ad, ciphertext)`: the plaintext, or the ciphertext itself when there is no key. On a failed tag
    /// it throws `.authenticationFailed` and leaves the nonce where it was (§5.1).
    public mutating func decrypt(_ ciphertext: [UInt8], associatedData: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return ciphertext }
        guard nonce < UInt64.max else { throw .nonceExhausted }
        guard ciphertext.count >= Self.tagLength else { throw .messageTooShort }
        var out = [UInt8](repeating: 0, count: ciphertext.count - Self.tagLength)
        let ok = out.withUnsafeMutableBytes { o in
            ciphertext.withUnsafeBytes { c in
                associatedData.withUnsafeBytes { a in
                    key.withUnsafeBytes { k in
                        Self.decrypt(key: k, nonce: nonce, ciphertext: c, associatedData: a, into: o)
                    }
                }
            }
        }
        guard ok else { throw .authenticationFailed }
        nonce += 1
        return out
    }

    /// `Rekey()` (§4.2): `k = ENCRYPT(k, 2^64−1, empty, 32 zero bytes)` truncated to 32 bytes; the nonce is kept.
    public mutating func rekey() {
        guard let key else { return }
        var out = [UInt8](repeating: 0, count: Self.keyLength + Self.tagLength)
        let zeros = [UInt8](repeating: 0, count: Self.keyLength)
        out.withUnsafeMutableBytes { o in
            zeros.withUnsafeBytes { p in
                key.withUnsafeBytes { k in
                    _ = Self.encrypt(key: k, nonce: UInt64.max, plaintext: p, associatedData: UnsafeRawBufferPointer(start: nil, count: 0), into: o)
                }
            }
        }
        self.key = Array(out.prefix(Self.keyLength))
    }

    // MARK: - The AEAD, without allocation (shared with SealedChannel)

    /// ChaCha20-Poly1305 IETF encryption of `plaintext` into `out` (at least `plaintext.count + 16` bytes) under the
    /// Noise nonce for `nonce`; returns the bytes written.
    @inline(__always)
    static func encrypt(key: UnsafeRawBufferPointer, nonce: UInt64, plaintext: UnsafeRawBufferPointer,
                        associatedData: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        withNoiseNonce(nonce) { n in
            var written: UInt64 = 0
            crypto_aead_chacha20poly1305_ietf_encrypt(
                out.baseAddress!.assumingMemoryBound(to: UInt8.self), &written,
                plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
                nil, n, key.baseAddress!.assumingMemoryBound(to: UInt8.self))
            return Int(written)
        }
    }

    /// ChaCha20-Poly1305 IETF decryption of `ciphertext` (tag included) into `out` (at least `ciphertext.count − 16`
    /// bytes); false when the tag does not verify (then `out` holds nothing meaningful).
    @inline(__always)
    static func decrypt(key: UnsafeRawBufferPointer, nonce: UInt64, ciphertext: UnsafeRawBufferPointer,
                        associatedData: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        withNoiseNonce(nonce) { n in
            var written: UInt64 = 0
            let status = crypto_aead_chacha20poly1305_ietf_decrypt(
                out.baseAddress?.assumingMemoryBound(to: UInt8.self), &written, nil,
                ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
                associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
                n, key.baseAddress!.assumingMemoryBound(to: UInt8.self))
            return status == 0
        }
    }

    /// Calls `body` with the 12-byte Noise nonce for `n` (4 zero bytes, then `n` little-endian) on the stack.
    @inline(__always)
    private static func withNoiseNonce<R>(_ n: UInt64, _ body: (UnsafePointer<UInt8>) -> R) -> R {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 12) { buffer in
            for i in 0..<4 { buffer[i] = 0 }
            for i in 0..<8 { buffer[4 + i] = UInt8(truncatingIfNeeded: n >> (8 * UInt64(i))) }
            return body(buffer.baseAddress!)
        }
    }
}
