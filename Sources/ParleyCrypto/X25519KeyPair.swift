import CSodium

/// An X25519 key pair (RFC 7748) through libsodium's `crypto_scalarmult`: the relay's long-term identity and the
/// handshake's ephemeral keys. The secret half is wiped when the value is dropped.
public final class X25519KeyPair: @unchecked Sendable {
    // Invariant: `secretKey` changes only in `deinit` (wiped), when no other reference exists.
    /// Length of a public or secret key, and of a shared secret.
    public static let keyLength = 32

    /// The public key (shareable).
    public let publicKey: [UInt8]
    /// The secret key. Never logged, never sent.
    public private(set) var secretKey: [UInt8]

    /// A fresh key pair from libsodium's CSPRNG (`crypto_box_keypair` draws the secret, clamping is X25519's own).
    public convenience init() {
        Sodium.ensureReady()
        var secret = [UInt8](repeating: 0, count: Self.keyLength)
        secret.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, Self.keyLength) }
        self.init(secretKey: secret)!
    }

    /// The pair of a stored secret key; nil when it is not 32 bytes.
    public init?(secretKey: [UInt8]) {
        guard secretKey.count == Self.keyLength else { return nil }
        Sodium.ensureReady()
        var publicKey = [UInt8](repeating: 0, count: Self.keyLength)
        let status = publicKey.withUnsafeMutableBufferPointer { p in
            secretKey.withUnsafeBufferPointer { crypto_scalarmult_base(p.baseAddress!, $0.baseAddress!) }
        }
        guard status == 0 else { return nil }
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    deinit {
        secretKey.withUnsafeMutableBytes { sodium_memzero($0.baseAddress!, $0.count) }
    }

    /// The X25519 shared secret with `peerPublicKey`; nil when the peer's key is not 32 bytes or is a low-order
    /// point (the result would be all zeros: libsodium refuses it, and so do we).
    public func sharedSecret(with peerPublicKey: [UInt8]) -> [UInt8]? {
        guard peerPublicKey.count == Self.keyLength else { return nil }
        var shared = [UInt8](repeating: 0, count: Self.keyLength)
        let status = shared.withUnsafeMutableBufferPointer { out in
            secretKey.withUnsafeBufferPointer { s in
                peerPublicKey.withUnsafeBufferPointer { crypto_scalarmult(out.baseAddress!, s.baseAddress!, $0.baseAddress!) }
            }
        }
        return status == 0 ? shared : nil
    }
}
