/// Parley signalling, protocol version 2: the encrypted envelope around version 1's messages.
///
/// Every version 2 datagram starts with the same magic byte as version 1 (`0x50`, outside every RFC 7983 range),
/// then the version, a kind and the connection id:
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +---------------+---------------+---------------+---------------+
/// |  magic 0x50   |  version = 2  |     kind      |  flags (0)    |
/// +---------------+---------------+---------------+---------------+
/// |             connection id (sealed only; 0 otherwise)          |
/// +---------------------------------------------------------------+
/// |  body ...                                                     |
/// ```
///
/// | kind | from | body |
/// |---|---|---|
/// | 1 hello | member | 16-byte nonce, zero padding to `helloSize` (asks for a cookie; carries nothing secret) |
/// | 2 cookie | relay | cookie (`cookieLength`) ‖ the relay's X25519 public key (32); never larger than the hello |
/// | 3 initiation | member | cookie length (1) ‖ cookie ‖ Noise NK message 1 (`e, es` + sealed payload: a version 1 `join` or `register` datagram) |
/// | 4 response | relay | Noise NK message 2 (`e, ee` + sealed payload: empty when accepted, else a version 1 `refused` datagram) |
/// | 5 sealed | both | `SealedChannel` datagram (counter ‖ ChaCha20-Poly1305 of one version 1 datagram) |
///
/// The cookie (address verification) comes before any Diffie-Hellman, as in version 1, and is mixed into the Noise
/// prologue, so an initiation only works from the address its cookie was minted for. Inside a sealed datagram the
/// version 1 datagram repeats the connection id; the receiver checks the two agree, which authenticates the
/// outer one. This type only frames bytes: the cryptography lives in `ParleyCrypto`.
public enum SignallingEnvelope {
    /// The version byte of encrypted datagrams.
    public static let version: UInt8 = 2
    /// Bytes of the envelope header.
    public static let headerSize = 8
    /// Every hello is padded to this size, so the cookie answer (60 bytes) is never larger than what asked for it.
    public static let helloSize = 96
    /// Bytes of the nonce a hello carries.
    public static let nonceLength = 16
    /// Bytes of a relay public key.
    public static let publicKeyLength = 32
    /// Longest cookie an initiation may carry.
    public static let maxCookieLength = 64
    /// Bytes a sealed datagram adds around its version 1 datagram: header, counter, tag.
    public static let sealedOverhead = headerSize + 8 + 16
    /// The longest version 1 datagram that fits in a sealed one of `Signalling.maxDatagramSize` bytes.
    public static let maxSealedPlaintext = Signalling.maxDatagramSize - sealedOverhead

    /// What a version 2 datagram is.
    public enum Kind: UInt8, Sendable {
        case hello = 1, cookie = 2, initiation = 3, response = 4, sealed = 5
    }

    /// Whether `bytes` start like a version 2 datagram (the magic byte and version 2).
    public static func isEnvelope(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 2 && bytes[0] == Signalling.magic && bytes[1] == version
    }

    /// Writes the header for `kind` and `connectionID` into the first `headerSize` bytes of `buffer`.
    public static func writeHeader(_ kind: Kind, connectionID: UInt32 = 0, into buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count >= headerSize)
        buffer[0] = Signalling.magic
        buffer[1] = version
        buffer[2] = kind.rawValue
        buffer[3] = 0
        buffer.storeBytes(of: connectionID.bigEndian, toByteOffset: 4, as: UInt32.self)
    }

    /// A header for `kind` as an array (the control plane builds datagrams by appending to it).
    public static func header(_ kind: Kind, connectionID: UInt32 = 0) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: headerSize)
        out.withUnsafeMutableBytes { writeHeader(kind, connectionID: connectionID, into: $0) }
        return out
    }

    /// A hello: header, `nonce`, zero padding to `helloSize`.
    public static func hello(nonce: [UInt8]) -> [UInt8] {
        precondition(nonce.count == nonceLength)
        var out = header(.hello) + nonce
        out += [UInt8](repeating: 0, count: helloSize - out.count)
        return out
    }

    /// A cookie answer: header, cookie, the relay's public key.
    public static func cookieAnswer(cookie: [UInt8], relayKey: [UInt8]) -> [UInt8] {
        header(.cookie) + cookie + relayKey
    }

    /// An initiation: header, the cookie with its length, the Noise message.
    public static func initiation(cookie: [UInt8], noiseMessage: [UInt8]) -> [UInt8] {
        precondition(cookie.count <= maxCookieLength)
        return header(.initiation) + [UInt8(cookie.count)] + cookie + noiseMessage
    }
}

/// A parsed version 2 datagram: its kind, connection id and body, pointing into the received bytes.
public struct EnvelopeView {
    /// What the datagram is.
    public let kind: SignallingEnvelope.Kind
    /// The connection id (sealed datagrams; 0 otherwise).
    public let connectionID: UInt32
    /// Everything after the header.
    public let body: UnsafeRawBufferPointer

    /// Parses the header. Throws `badVersion` when it is not version 2, `unknownType` for an unknown kind,
    /// `truncated` when shorter than the header, `badLength` when longer than `Signalling.maxDatagramSize`.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        guard bytes.count >= SignallingEnvelope.headerSize else { throw .truncated }
        guard bytes.count <= Signalling.maxDatagramSize else { throw .badLength }
        guard SignallingEnvelope.isEnvelope(bytes) else { throw .badVersion }
        guard let kind = SignallingEnvelope.Kind(rawValue: bytes[2]) else { throw .unknownType }
        self.kind = kind
        connectionID = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        body = UnsafeRawBufferPointer(rebasing: bytes[SignallingEnvelope.headerSize...])
    }

    /// A hello's nonce. Throws `badLength` unless the datagram is exactly `helloSize` bytes.
    public func helloNonce() throws(WireError) -> [UInt8] {
        guard kind == .hello, body.count == SignallingEnvelope.helloSize - SignallingEnvelope.headerSize else { throw .badLength }
        return Array(body.prefix(SignallingEnvelope.nonceLength))
    }

    /// A cookie answer's cookie and relay key (the key is the last 32 bytes).
    public func cookieAnswer() throws(WireError) -> (cookie: [UInt8], relayKey: [UInt8]) {
        let keyLength = SignallingEnvelope.publicKeyLength
        guard kind == .cookie, body.count > keyLength, body.count - keyLength <= SignallingEnvelope.maxCookieLength else { throw .badLength }
        return (Array(body.prefix(body.count - keyLength)), Array(body.suffix(keyLength)))
    }

    /// An initiation's cookie and Noise message.
    public func initiation() throws(WireError) -> (cookie: [UInt8], noiseMessage: [UInt8]) {
        guard kind == .initiation, body.count >= 1 else { throw .truncated }
        let length = Int(body[0])
        guard length <= SignallingEnvelope.maxCookieLength, body.count >= 1 + length else { throw .badLength }
        return (Array(body[1..<(1 + length)]), Array(body[(1 + length)...]))
    }
}
