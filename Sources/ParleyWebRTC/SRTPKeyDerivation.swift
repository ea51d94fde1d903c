import COpenSSL

/// SRTP's key derivation (RFC 3711 §4.3.1, the AES counter-mode PRF, key derivation rate 0) from the master key and
/// salt DTLS-SRTP exported, to the session keys and salts of SRTP and SRTCP. With AEAD_AES_256_GCM (RFC 7714 §11)
/// the PRF is AES-256 and the master salt 12 bytes, zero-padded to the PRF's 14 as libsrtp pads it:
///
///     IV  = [ master salt (14 bytes, byte 7 XOR label) | counter (2 bytes) ]
///     out = AES_k(IV + 0) ‖ AES_k(IV + 1) ‖ …   (first `length` bytes)
///
/// Run once per member at the end of its handshake (OpenSSL's AES through EVP), never per packet.
public enum SRTPKeyDerivation {
    /// What a derived value is for (RFC 3711 §4.3.1 labels).
    public enum Label: UInt8, Sendable {
        case rtpKey = 0x00, rtpAuthentication = 0x01, rtpSalt = 0x02
        case rtcpKey = 0x03, rtcpAuthentication = 0x04, rtcpSalt = 0x05
    }

    /// The session keys of one direction for an AEAD profile: SRTP's and SRTCP's keys and salts.
    public struct SessionKeys: Sendable, Equatable {
        public var rtpKey: [UInt8], rtpSalt: [UInt8], rtcpKey: [UInt8], rtcpSalt: [UInt8]
    }

    /// `length` bytes for `label` from `masterKey` (16 or 32 bytes: AES-128 or AES-256) and `masterSalt` (≤ 14
    /// bytes); nil when the key has another length or OpenSSL fails.
    public static func derive(masterKey: [UInt8], masterSalt: [UInt8], label: Label, length: Int) -> [UInt8]? {
        guard masterSalt.count <= 14, length > 0 else { return nil }
        let cipher: OpaquePointer?
        switch masterKey.count {
        case 16: cipher = EVP_aes_128_ecb()
        case 32: cipher = EVP_aes_256_ecb()
        default: return nil
        }
        guard let cipher, let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        guard masterKey.withUnsafeBufferPointer({ EVP_EncryptInit_ex(context, cipher, nil, $0.baseAddress, nil) }) == 1 else { return nil }
        EVP_CIPHER_CTX_set_padding(context, 0)
        var iv = [UInt8](repeating: 0, count: 16)
        for (i, b) in masterSalt.enumerated() { iv[i] = b }
        iv[7] ^= label.rawValue
        var out: [UInt8] = []
        var block = [UInt8](repeating: 0, count: 32)
        var counter: UInt16 = 0
        while out.count < length {
            iv[14] = UInt8(counter >> 8)
            iv[15] = UInt8(counter & 0xFF)
            var written: Int32 = 0
            let ok = block.withUnsafeMutableBufferPointer { b in
                iv.withUnsafeBufferPointer { EVP_EncryptUpdate(context, b.baseAddress, &written, $0.baseAddress, 16) }
            }
            guard ok == 1, written == 16 else { return nil }
            out += block[0..<16]
            counter &+= 1
        }
        for i in block.indices { block[i] = 0 }
        return Array(out.prefix(length))
    }

    /// SRTP's and SRTCP's session keys and salts for an AEAD profile (RFC 7714: keys as long as the master key,
    /// 12-byte salts); nil when derivation fails.
    public static func aeadSessionKeys(masterKey: [UInt8], masterSalt: [UInt8]) -> SessionKeys? {
        let n = masterKey.count
        guard let rtpKey = derive(masterKey: masterKey, masterSalt: masterSalt, label: .rtpKey, length: n),
              let rtpSalt = derive(masterKey: masterKey, masterSalt: masterSalt, label: .rtpSalt, length: 12),
              let rtcpKey = derive(masterKey: masterKey, masterSalt: masterSalt, label: .rtcpKey, length: n),
              let rtcpSalt = derive(masterKey: masterKey, masterSalt: masterSalt, label: .rtcpSalt, length: 12) else { return nil }
        return SessionKeys(rtpKey: rtpKey, rtpSalt: rtpSalt, rtcpKey: rtcpKey, rtcpSalt: rtcpSalt)
    }
}
