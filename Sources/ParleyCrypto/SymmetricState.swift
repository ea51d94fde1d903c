/// Noise's `SymmetricState` (revision 34, §5.2) for `BLAKE2b`: the chaining key `ck`, the handshake hash `h` and a
/// `CipherState`. Everything the handshake sends or receives is mixed into `h`; every Diffie-Hellman result into `ck`.
public struct SymmetricState: Sendable {
    /// The cipher state keyed by the latest `mixKey`.
    public private(set) var cipherState = CipherState()
    /// The chaining key (64 bytes).
    var chainingKey: [UInt8]
    /// The handshake hash `h` (64 bytes): after the handshake, a transcript digest both sides share (channel binding).
    public private(set) var handshakeHash: [UInt8]

    /// `InitializeSymmetric(protocolName)`: `h` is the name zero-padded to 64 bytes (or its hash if longer), `ck = h`.
    public init(protocolName: String) {
        let name = Array(protocolName.utf8)
        handshakeHash = name.count <= NoiseHash.hashLength
            ? name + [UInt8](repeating: 0, count: NoiseHash.hashLength - name.count)
            : NoiseHash.hash(name)
        chainingKey = handshakeHash
    }

    /// `MixKey(inputKeyMaterial)`: `ck, temp_k = HKDF(ck, ikm, 2)`; the cipher key is `temp_k` truncated to 32 bytes.
    public mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        let outputs = NoiseHash.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 2)
        chainingKey = outputs[0]
        cipherState = CipherState(key: Array(outputs[1].prefix(CipherState.keyLength)))
    }

    /// `MixHash(data)`: `h = HASH(h || data)`.
    public mutating func mixHash(_ data: [UInt8]) {
        handshakeHash = NoiseHash.hash(handshakeHash, data)
    }

    /// `EncryptAndHash(plaintext)`: encrypt with `h` as associated data, then mix the ciphertext into `h`.
    public mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let ciphertext = try cipherState.encrypt(plaintext, associatedData: handshakeHash)
        mixHash(ciphertext)
        return ciphertext
    }

    /// `DecryptAndHash(ciphertext)`: decrypt with `h` as associated data, then mix the ciphertext into `h`.
    public mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let plaintext = try cipherState.decrypt(ciphertext, associatedData: handshakeHash)
        mixHash(ciphertext)
        return plaintext
    }

    /// `Split()`: the two transport cipher states, initiator-to-responder first, from `HKDF(ck, empty, 2)`.
    public func split() -> (initiatorToResponder: CipherState, responderToInitiator: CipherState) {
        let outputs = NoiseHash.hkdf(chainingKey: chainingKey, inputKeyMaterial: [], outputs: 2)
        return (CipherState(key: Array(outputs[0].prefix(CipherState.keyLength))),
                CipherState(key: Array(outputs[1].prefix(CipherState.keyLength))))
    }
}
