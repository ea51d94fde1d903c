import CSodium

/// libsodium's AEADs on 120 bytes with no associated data, the floor SRTP's framing sits on: AES-256-GCM with the key
/// expanded once (`*_afternm`, what `SRTPSender` uses) and one-shot (expansion per call), and XChaCha20-Poly1305-IETF.
/// Encryption uses a fresh counter nonce per packet; decryption opens one ciphertext over and over.
final class BareAEADLoop {
    /// Which construction.
    enum Kind: CaseIterable {
        case aes256gcmExpandedKey, aes256gcmOneShot, xchacha20poly1305
    }

    static let messageBytes = 120
    private let key: UnsafeMutablePointer<UInt8>
    private let state: UnsafeMutablePointer<crypto_aead_aes256gcm_state>
    private let message: UnsafeMutablePointer<UInt8>
    private let ciphertext: UnsafeMutablePointer<UInt8>
    private let nonce: UnsafeMutablePointer<UInt8>
    /// Calls that failed (a decryption that did not verify).
    private(set) var failures = 0

    init() {
        precondition(sodium_init() >= 0 && crypto_aead_aes256gcm_is_available() == 1, "libsodium AES-256-GCM is unavailable")
        key = .allocate(capacity: 32)
        randombytes_buf(key, 32)
        state = UnsafeMutableRawPointer.allocate(byteCount: crypto_aead_aes256gcm_statebytes(), alignment: 16)
            .bindMemory(to: crypto_aead_aes256gcm_state.self, capacity: 1)
        crypto_aead_aes256gcm_beforenm(state, key)
        message = .allocate(capacity: Self.messageBytes)
        for i in 0..<Self.messageBytes { message[i] = UInt8(truncatingIfNeeded: i &* 37) }
        ciphertext = .allocate(capacity: Self.messageBytes + 16)
        nonce = .allocate(capacity: 24)
        nonce.initialize(repeating: 0, count: 24)
    }

    deinit {
        key.deallocate(); UnsafeMutableRawPointer(state).deallocate(); message.deallocate(); ciphertext.deallocate(); nonce.deallocate()
    }

    /// Times `packets` encryptions of `kind`.
    func seal(_ kind: Kind, _ packets: Int) -> Timing {
        var length: UInt64 = 0
        let m = UInt64(Self.messageBytes)
        return timed(packets) { _ in
            UnsafeMutableRawPointer(nonce).storeBytes(of: UnsafeRawPointer(nonce).load(as: UInt64.self) &+ 1, as: UInt64.self)
            switch kind {
            case .aes256gcmExpandedKey: crypto_aead_aes256gcm_encrypt_afternm(ciphertext, &length, message, m, nil, 0, nil, nonce, state)
            case .aes256gcmOneShot: crypto_aead_aes256gcm_encrypt(ciphertext, &length, message, m, nil, 0, nil, nonce, key)
            case .xchacha20poly1305: crypto_aead_xchacha20poly1305_ietf_encrypt(ciphertext, &length, message, m, nil, 0, nil, nonce, key)
            }
        }
    }

    /// Times `packets` decryptions of one ciphertext of `kind`.
    func open(_ kind: Kind, _ packets: Int) -> Timing {
        var length: UInt64 = 0
        let c = UInt64(Self.messageBytes + 16)
        switch kind {
        case .aes256gcmExpandedKey, .aes256gcmOneShot:
            crypto_aead_aes256gcm_encrypt_afternm(ciphertext, &length, message, UInt64(Self.messageBytes), nil, 0, nil, nonce, state)
        case .xchacha20poly1305:
            crypto_aead_xchacha20poly1305_ietf_encrypt(ciphertext, &length, message, UInt64(Self.messageBytes), nil, 0, nil, nonce, key)
        }
        return timed(packets) { _ in
            let status: Int32
            switch kind {
            case .aes256gcmExpandedKey: status = crypto_aead_aes256gcm_decrypt_afternm(message, &length, nil, ciphertext, c, nil, 0, nonce, state)
            case .aes256gcmOneShot: status = crypto_aead_aes256gcm_decrypt(message, &length, nil, ciphertext, c, nil, 0, nonce, key)
            case .xchacha20poly1305: status = crypto_aead_xchacha20poly1305_ietf_decrypt(message, &length, nil, ciphertext, c, nil, 0, nonce, key)
            }
            if status != 0 { failures += 1 }
        }
    }
}
