import CSodium

/// An SRTP master key and salt for AEAD_AES_256_GCM (RFC 7714): 32 + 12 bytes.
public struct MediaKey: Sendable, Equatable {
    /// Bytes of the key.
    public static let keyLength = 32
    /// Bytes of the salt.
    public static let saltLength = 12
    /// The key.
    public let key: [UInt8]
    /// The salt.
    public let salt: [UInt8]

    /// A key from 44 bytes of material (key, then salt).
    public init(material: [UInt8]) {
        precondition(material.count >= Self.keyLength + Self.saltLength)
        key = Array(material[0..<Self.keyLength])
        salt = Array(material[Self.keyLength..<(Self.keyLength + Self.saltLength)])
    }

    /// A fresh random key (a room's downstream key).
    public static func random() -> MediaKey {
        Sodium.ensureReady()
        var material = [UInt8](repeating: 0, count: keyLength + saltLength)
        material.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return MediaKey(material: material)
    }

    /// Key and salt in one array (how a room key travels in a sealed welcome).
    public var material: [UInt8] { key + salt }

    /// A sender for this key.
    public func sender(maxStreams: Int = 16) throws(SRTPError) -> SRTPSender { try SRTPSender(key: key, salt: salt, maxStreams: maxStreams) }
    /// A receiver for this key.
    public func receiver(maxStreams: Int = 16) throws(SRTPError) -> SRTPReceiver { try SRTPReceiver(key: key, salt: salt, maxStreams: maxStreams) }
}

/// What one session uses after its handshake, this side's view: a signalling key and an SRTP key per direction.
///
/// Each comes from the Noise `Split()` key of its direction `k` by `HKDF(k, "")` (BLAKE2b, two outputs): the first
/// output's 32 bytes key the signalling (`SealedChannel`), the second's first 44 bytes are the SRTP key and salt.
/// The split keys themselves are never used, so no key serves two protocols. Sendable: a session's keys may move
/// from the worker that ran the handshake to the worker that owns the room.
public struct SessionKeys: Sendable, Equatable {
    /// Seals the signalling this side sends.
    public let signallingSend: [UInt8]
    /// Opens the signalling this side receives.
    public let signallingReceive: [UInt8]
    /// Protects the RTP/RTCP this side sends.
    public let mediaSend: MediaKey
    /// Unprotects the RTP/RTCP this side receives.
    public let mediaReceive: MediaKey

    /// The keys of a finished handshake.
    public init(handshake: HandshakeState) throws(NoiseError) {
        let (sending, receiving) = try handshake.split()
        (signallingSend, mediaSend) = Self.derive(sending)
        (signallingReceive, mediaReceive) = Self.derive(receiving)
    }

    private static func derive(_ state: CipherState) -> ([UInt8], MediaKey) {
        let outputs = NoiseHash.hkdf(chainingKey: state.key!, inputKeyMaterial: [], outputs: 2)
        return (Array(outputs[0].prefix(CipherState.keyLength)), MediaKey(material: outputs[1]))
    }

    /// A sealed signalling channel with these keys.
    public func signallingChannel() -> SealedChannel {
        SealedChannel(sending: CipherState(key: signallingSend), receiving: CipherState(key: signallingReceive))
    }
}
