import ParleyAuth
import ParleyWire

/// Stateless address verification for joins (as DTLS HelloVerifyRequest / QUIC Retry): the relay answers a
/// join without a valid cookie with a cookie bound to the sender's address and the time, and keeps no state.
///
/// ```
/// cookie = issued-at (4 bytes, Unix seconds) ‖ HMAC-SHA-256(secret, address ‖ port ‖ issued-at)[0..<16]
/// ```
public struct JoinCookie: Sendable {
    /// Cookie length in bytes.
    public static let size = 20
    private let secret: [UInt8]
    /// Seconds a cookie stays valid.
    public let lifetimeSeconds: Int64

    /// A cookie minter/checker with a relay-wide secret.
    public init(secret: [UInt8], lifetimeSeconds: Int64) {
        self.secret = secret
        self.lifetimeSeconds = lifetimeSeconds
    }

    /// The cookie for `address` issued at `unixSeconds`.
    public func mint(for address: PeerAddress, unixSeconds: Int64) -> [UInt8] {
        let issued = UInt32(truncatingIfNeeded: unixSeconds)
        var message = address.addressBytes
        message.append(UInt8(address.port >> 8)); message.append(UInt8(address.port & 0xFF))
        let stamp = [UInt8(issued >> 24), UInt8((issued >> 16) & 0xFF), UInt8((issued >> 8) & 0xFF), UInt8(issued & 0xFF)]
        message += stamp
        return stamp + Crypto.hmacSHA256(key: secret, message: message).prefix(16)
    }

    /// Whether `cookie` was minted by this relay for `address` within the lifetime.
    public func verify(_ cookie: [UInt8], for address: PeerAddress, unixSeconds: Int64) -> Bool {
        guard cookie.count == Self.size else { return false }
        let issued = Int64(UInt32(cookie[0]) << 24 | UInt32(cookie[1]) << 16 | UInt32(cookie[2]) << 8 | UInt32(cookie[3]))
        let now = Int64(UInt32(truncatingIfNeeded: unixSeconds))
        let age = now - issued
        guard age >= -2, age <= lifetimeSeconds else { return false }
        return Crypto.constantTimeEqual(mint(for: address, unixSeconds: issued), cookie)
    }
}
