import CSodium
import ParleyWire

/// AEAD_AES_256_GCM for SRTP (RFC 7714) through libsodium's `crypto_aead_aes256gcm_*_afternm`: the key is expanded
/// once into an aligned `crypto_aead_aes256gcm_state` (wiped and freed in `deinit`), the IV is built per packet in a
/// scratch area owned here, so sealing and opening never allocate. One context's cipher: one thread at a time.
final class SRTPCipher {
    private let state: UnsafeMutablePointer<crypto_aead_aes256gcm_state>
    private let stateBytes: Int
    /// The 12-byte salt, then the IV (12), the SRTCP associated data (12) and a saved tag (16).
    private let scratch: UnsafeMutableRawPointer
    private static let scratchBytes = 64
    private static let ivOffset = 16, associatedDataOffset = 32, tagOffset = 48

    /// True when libsodium's AES-256-GCM can run here: it needs AES-NI and PCLMULQDQ.
    static var isAvailable: Bool {
        Sodium.ensureReady()
        return crypto_aead_aes256gcm_is_available() == 1
    }

    /// A cipher for a 32-byte `key` and a 12-byte `salt`. Throws `badKeyLength`, or `aesGCMUnavailable` on a CPU
    /// without AES-NI (libsodium has no portable AES-GCM).
    init(key: [UInt8], salt: [UInt8]) throws(SRTPError) {
        guard key.count == SRTPLayout.keyLength, salt.count == SRTPLayout.saltLength else { throw .badKeyLength }
        guard Self.isAvailable else { throw .aesGCMUnavailable }
        stateBytes = crypto_aead_aes256gcm_statebytes()
        let raw = UnsafeMutableRawPointer.allocate(byteCount: stateBytes, alignment: 16)
        let expanded = raw.bindMemory(to: crypto_aead_aes256gcm_state.self, capacity: 1)
        key.withUnsafeBufferPointer { _ = crypto_aead_aes256gcm_beforenm(expanded, $0.baseAddress!) }
        let area = UnsafeMutableRawPointer.allocate(byteCount: Self.scratchBytes, alignment: 16)
        area.initializeMemory(as: UInt8.self, repeating: 0, count: Self.scratchBytes)
        salt.withUnsafeBytes { area.copyMemory(from: $0.baseAddress!, byteCount: SRTPLayout.saltLength) }
        state = expanded
        scratch = area
    }

    deinit {
        sodium_memzero(state, stateBytes)
        sodium_memzero(scratch, Self.scratchBytes)
        UnsafeMutableRawPointer(state).deallocate()
        scratch.deallocate()
    }

    /// Notes the lines a packet's sealing or opening reads: the expanded key and the IV scratch (`HotLines`).
    func noteLines(_ hot: HotLines) {
        hot.note(UnsafeRawPointer(state), bytes: stateBytes)
        hot.note(UnsafeRawPointer(scratch), bytes: Self.scratchBytes)
    }

    /// The SRTP IV (RFC 7714 §8.1): `(00 00 ‖ SSRC ‖ ROC ‖ SEQ) XOR salt`.
    @inline(__always)
    func rtpIV(ssrc: UInt32, rolloverCounter: UInt32, sequence: UInt16) -> UnsafeRawPointer {
        let iv = scratch + Self.ivOffset
        iv.storeBytes(of: UInt16(0), as: UInt16.self)
        iv.storeBytes(of: ssrc.bigEndian, toByteOffset: 2, as: UInt32.self)
        iv.storeBytes(of: rolloverCounter.bigEndian, toByteOffset: 6, as: UInt32.self)
        iv.storeBytes(of: sequence.bigEndian, toByteOffset: 10, as: UInt16.self)
        return salted(iv)
    }

    /// The SRTCP IV (RFC 7714 §9.1): `(00 00 ‖ SSRC ‖ 00 00 ‖ 0 + SRTCP index) XOR salt`.
    @inline(__always)
    func rtcpIV(ssrc: UInt32, index: UInt32) -> UnsafeRawPointer {
        let iv = scratch + Self.ivOffset
        iv.storeBytes(of: UInt16(0), as: UInt16.self)
        iv.storeBytes(of: ssrc.bigEndian, toByteOffset: 2, as: UInt32.self)
        iv.storeBytes(of: UInt16(0), toByteOffset: 6, as: UInt16.self)
        iv.storeBytes(of: index.bigEndian, toByteOffset: 8, as: UInt32.self)
        return salted(iv)
    }

    @inline(__always)
    private func salted(_ iv: UnsafeMutableRawPointer) -> UnsafeRawPointer {
        for i in 0..<SRTPLayout.ivLength {
            iv.storeBytes(of: iv.load(fromByteOffset: i, as: UInt8.self) ^ scratch.load(fromByteOffset: i, as: UInt8.self),
                          toByteOffset: i, as: UInt8.self)
        }
        return UnsafeRawPointer(iv)
    }

    /// The 12-byte area where SRTCP's associated data (clear header ‖ trailer) is assembled.
    var associatedDataArea: UnsafeMutableRawPointer { scratch + Self.associatedDataOffset }

    /// The 16-byte area where a tag is kept while the bytes it came from are overwritten.
    var savedTagArea: UnsafeMutableRawPointer { scratch + Self.tagOffset }

    /// Encrypts `count` bytes at `message` into `ciphertext` (the same memory is fine) and writes the tag at `tag`.
    @inline(__always)
    func seal(_ message: UnsafeRawPointer, count: Int, into ciphertext: UnsafeMutableRawPointer, tag: UnsafeMutableRawPointer,
              associatedData: UnsafeRawPointer, associatedDataCount: Int, iv: UnsafeRawPointer) {
        _ = crypto_aead_aes256gcm_encrypt_detached_afternm(
            ciphertext.assumingMemoryBound(to: UInt8.self), tag.assumingMemoryBound(to: UInt8.self), nil,
            message.assumingMemoryBound(to: UInt8.self), UInt64(count),
            associatedData.assumingMemoryBound(to: UInt8.self), UInt64(associatedDataCount), nil,
            iv.assumingMemoryBound(to: UInt8.self), state)
    }

    /// Verifies `tag` over the ciphertext and associated data and decrypts into `message` (the same memory is fine);
    /// false when the tag does not verify (what `message` then holds is unspecified).
    @inline(__always)
    func open(_ ciphertext: UnsafeRawPointer, count: Int, tag: UnsafeRawPointer, into message: UnsafeMutableRawPointer,
              associatedData: UnsafeRawPointer, associatedDataCount: Int, iv: UnsafeRawPointer) -> Bool {
        crypto_aead_aes256gcm_decrypt_detached_afternm(
            message.assumingMemoryBound(to: UInt8.self), nil,
            ciphertext.assumingMemoryBound(to: UInt8.self), UInt64(count), tag.assumingMemoryBound(to: UInt8.self),
            associatedData.assumingMemoryBound(to: UInt8.self), UInt64(associatedDataCount),
            iv.assumingMemoryBound(to: UInt8.self), state) == 0
    }
}
