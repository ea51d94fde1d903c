import COpenSSL

/// A time-limited TURN credential in the "TURN REST API" scheme (draft-uberti-behave-turn-rest-00 §2.2), which
/// coturn checks with `use-auth-secret` and the same `static-auth-secret`:
///
///     username = EXPIRY ":" IDENTITY        EXPIRY: Unix time in seconds after which the server refuses it
///     password = base64(HMAC-SHA1(secret, username))
///
/// The TURN server needs no call to the relay: it recomputes the password from the username and the shared secret,
/// and refuses a username whose EXPIRY has passed. The secret itself never leaves the relay.
///
/// IDENTITY is the member's token identity, for the TURN server's logs only. It is percent-encoded here to the
/// characters that need no quoting anywhere the username travels — the STUN USERNAME attribute, the JSON of
/// `GET /v1/ice-servers`, a quoted-string of a `Link` header —: ASCII letters, digits and `-._~@`. Everything else,
/// `:` included, becomes `%XX` per UTF-8 byte, so the username holds exactly one `:` and no quote, backslash or
/// control character. An encoded identity longer than `maxIdentityBytes` is cut there (STUN usernames stay under
/// 513 bytes, RFC 8489 §14.3).
public struct TURNCredential: Equatable, Sendable {
    /// `EXPIRY:IDENTITY`.
    public var username: String
    /// base64 of the HMAC-SHA1 of the username under the shared secret (28 characters).
    public var password: String
    /// When the TURN server stops taking it, Unix seconds.
    public var expiresAt: Int64

    /// The longest encoded identity kept in a username.
    public static let maxIdentityBytes = 400

    /// The credential for `identity` that expires at `expiresAt` (Unix seconds), under `secret`.
    public init(secret: [UInt8], identity: String, expiresAt: Int64) {
        let username = "\(expiresAt):" + Self.encodedIdentity(identity)
        self.username = username
        self.password = Self.base64(HMACSHA1.tag(key: secret, message: Array(username.utf8)))
        self.expiresAt = expiresAt
    }

    /// The punctuation an encoded identity keeps as it is: `-._~@`.
    static let plainPunctuation = Array("-._~@".utf8)

    /// `identity` percent-encoded to ASCII letters, digits and `-._~@`, at most `maxIdentityBytes` long: cut before
    /// the first character that does not fit whole (never inside a `%XX`, nor between a character's UTF-8 bytes).
    static func encodedIdentity(_ identity: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for scalar in identity.unicodeScalars {
            var piece: [UInt8] = []
            for byte in UTF8.encode(scalar)! {
                let plain = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || Self.plainPunctuation.contains(byte)
                piece += plain ? [byte] : [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
            guard out.count + piece.count <= maxIdentityBytes else { break }
            out += piece
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Standard base64 with padding (RFC 4648 §4), through OpenSSL's `EVP_EncodeBlock`.
    static func base64(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: (bytes.count + 2) / 3 * 4 + 1)  // and the NUL it writes
        let count = bytes.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer {
                EVP_EncodeBlock($0.baseAddress, input.baseAddress, Int32(input.count))
            }
        }
        return String(decoding: out[0..<Int(count)], as: UTF8.self)
    }
}
