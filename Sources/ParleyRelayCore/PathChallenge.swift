import ParleyAuth
import ParleyWire

/// Path validation for a session that shows up at a new address (QUIC's PATH_CHALLENGE/PATH_RESPONSE is the model):
/// the relay sends the new address a challenge bound to the session and the address, keeps no state, and moves the
/// session only when an answer proven with the session secret comes back from that address.
///
/// ```
/// challenge = issued-at (8 bytes, Unix ms) ‖ HMAC-SHA-256(secret, "parley-path" ‖ connection id ‖ address ‖ port ‖ issued-at)[0..<8]
/// ```
///
/// A challenge is single-use: a session accepts only challenges issued after the last one it accepted, so a captured
/// answer replayed later, or from another address, moves nothing.
public struct PathChallenge: Sendable {
    /// Challenge length in bytes.
    public static let size = 16
    /// How long an answer may take.
    public static let lifetime = Interval.seconds(10)
    /// How far in the future (our clock behind the minting worker's) an issue time may be.
    public static let clockSkew = Interval.seconds(2)
    private let secret: [UInt8]

    /// A challenge minter/checker with a relay-wide secret.
    public init(secret: [UInt8]) { self.secret = secret }

    /// The challenge for session `connectionID` at `address`, issued at `unixMilliseconds`.
    public func mint(connectionID: UInt32, address: PeerAddress, unixMilliseconds: Int64) -> [UInt8] {
        var stamp = [UInt8](repeating: 0, count: 8)
        for i in 0..<8 { stamp[i] = UInt8(truncatingIfNeeded: UInt64(bitPattern: unixMilliseconds) >> UInt64(56 - 8 * i)) }
        var message = Array("parley-path".utf8)
        for shift in stride(from: 24, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: connectionID >> UInt32(shift))) }
        message += address.addressBytes
        message.append(UInt8(address.port >> 8)); message.append(UInt8(address.port & 0xFF))
        message += stamp
        return stamp + Crypto.hmacSHA256(key: secret, message: message).prefix(8)
    }

    /// The challenge's issue time (Unix ms) when this relay minted it for `connectionID` at `address` within the
    /// lifetime; nil otherwise.
    public func verify(_ challenge: [UInt8], connectionID: UInt32, address: PeerAddress, unixMilliseconds: Int64) -> Int64? {
        guard challenge.count == Self.size else { return nil }
        var issued: UInt64 = 0
        for i in 0..<8 { issued = issued << 8 | UInt64(challenge[i]) }
        // The stamp is the sender's until the HMAC below holds: a stamp before 1970 (top bit set, or any negative
        // value) is refused before it is subtracted, so no forged stamp can overflow the arithmetic.
        let issuedAt = Int64(bitPattern: issued)
        guard issuedAt >= 0, unixMilliseconds >= 0 else { return nil }
        let age = unixMilliseconds - issuedAt
        guard age >= -Self.clockSkew.milliseconds, age <= Self.lifetime.milliseconds else { return nil }
        guard Crypto.constantTimeEqual(mint(connectionID: connectionID, address: address, unixMilliseconds: issuedAt), challenge) else { return nil }
        return issuedAt
    }
}
