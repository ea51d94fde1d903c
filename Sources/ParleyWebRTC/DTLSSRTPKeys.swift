import COpenSSL

/// An SRTP protection profile negotiated in DTLS's `use_srtp` extension (RFC 5764 §4.1.2, RFC 7714 §14.2): its
/// raw value is the profile's two-byte identifier on the wire.
public enum SRTPProfile: UInt16, Sendable, CaseIterable {
    /// SRTP_AES128_CM_HMAC_SHA1_80 (0x0001): 16-byte key, 14-byte salt. Every WebRTC endpoint supports it.
    case aes128CmHmacSha1_80 = 0x0001
    /// SRTP_AEAD_AES_128_GCM (0x0007): 16-byte key, 12-byte salt.
    case aeadAes128Gcm = 0x0007
    /// SRTP_AEAD_AES_256_GCM (0x0008): 32-byte key, 12-byte salt.
    case aeadAes256Gcm = 0x0008

    /// The master key length in bytes.
    public var keyLength: Int {
        switch self {
        case .aes128CmHmacSha1_80, .aeadAes128Gcm: 16
        case .aeadAes256Gcm: 32
        }
    }

    /// The master salt length in bytes.
    public var saltLength: Int {
        switch self {
        case .aes128CmHmacSha1_80: 14
        case .aeadAes128Gcm, .aeadAes256Gcm: 12
        }
    }

    /// OpenSSL's name for the profile, as `SSL_CTX_set_tlsext_use_srtp` takes it.
    public var openSSLName: String {
        switch self {
        case .aes128CmHmacSha1_80: "SRTP_AES128_CM_SHA1_80"
        case .aeadAes128Gcm: "SRTP_AEAD_AES_128_GCM"
        case .aeadAes256Gcm: "SRTP_AEAD_AES_256_GCM"
        }
    }
}

/// The SRTP master keys a DTLS-SRTP handshake exported (RFC 5764 §4.2), seen from one side: `local` protects what
/// this side sends, `remote` unprotects what the peer sends.
///
/// The exporter's output, `EXTRACTOR-dtls_srtp` with no context, is laid out as
///
///     +------------+------------+-------------+-------------+
///     | client key | server key | client salt | server salt |
///     +------------+------------+-------------+-------------+
///
/// so the server's local key is the server key and salt, the client's local key the client key and salt.
public struct DTLSSRTPKeys: Sendable {
    /// The negotiated profile: it fixes the lengths below.
    public let profile: SRTPProfile
    /// The master key for what this side sends.
    public let localKey: [UInt8]
    /// The master salt for what this side sends.
    public let localSalt: [UInt8]
    /// The master key for what the peer sends.
    public let remoteKey: [UInt8]
    /// The master salt for what the peer sends.
    public let remoteSalt: [UInt8]

    /// `localKey ‖ localSalt`, the form libsrtp2's policies take.
    public var localMasterKey: [UInt8] { localKey + localSalt }
    /// `remoteKey ‖ remoteSalt`.
    public var remoteMasterKey: [UInt8] { remoteKey + remoteSalt }

    /// The keys from exporter output `material` (`2 × (key + salt)` bytes, laid out as above) for the side `isServer`.
    init(profile: SRTPProfile, material: UnsafeRawBufferPointer, isServer: Bool) {
        let k = profile.keyLength, s = profile.saltLength
        precondition(material.count == 2 * (k + s))
        let clientKey = Array(material[0..<k]), serverKey = Array(material[k..<2 * k])
        let clientSalt = Array(material[2 * k..<2 * k + s]), serverSalt = Array(material[2 * k + s..<2 * k + 2 * s])
        self.profile = profile
        localKey = isServer ? serverKey : clientKey
        localSalt = isServer ? serverSalt : clientSalt
        remoteKey = isServer ? clientKey : serverKey
        remoteSalt = isServer ? clientSalt : serverSalt
    }

    /// RFC 5764 §4.2's exporter label.
    static let exporterLabel = "EXTRACTOR-dtls_srtp"

    /// Exports the keys of the handshake `ssl` has completed with `profile`; nil when OpenSSL refuses. The
    /// exporter's buffer is wiped (`OPENSSL_cleanse`) before returning.
    static func export(from ssl: OpaquePointer, profile: SRTPProfile, isServer: Bool) -> DTLSSRTPKeys? {
        let length = 2 * (profile.keyLength + profile.saltLength)
        return withUnsafeTemporaryAllocation(byteCount: length, alignment: 1) { buffer -> DTLSSRTPKeys? in
            defer { OPENSSL_cleanse(buffer.baseAddress, length) }
            let bytes = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let label = Array(exporterLabel.utf8)
            guard label.withUnsafeBufferPointer({ labelBytes in
                labelBytes.withMemoryRebound(to: CChar.self) {
                    SSL_export_keying_material(ssl, bytes, length, $0.baseAddress, label.count, nil, 0, 0)
                }
            }) == 1 else { return nil }
            return DTLSSRTPKeys(profile: profile, material: UnsafeRawBufferPointer(buffer), isServer: isServer)
        }
    }
}
