import ParleyAuth

/// SIP digest credentials the backend mints for an identity (`POST /v1/sip/credentials`), as TURN's REST credentials
/// are: the username is `EXPIRY.IDENTITY` (Unix seconds), the password base64url of HMAC-SHA256 over it with a key the
/// relay derives from its API secret. The relay keeps no list: it recomputes the password from the username a device
/// presents, so credentials survive a restart and hold on every node with the same secret, and lapse at their expiry.
/// Pure.
public struct SIPCredentials: Sendable {
    private let key: [UInt8]
    /// The digest realm every challenge names.
    public let realm: String
    /// Credentials last this long unless asked otherwise (a day).
    public static let defaultLifetimeSeconds: Int64 = 86_400
    /// The longest lifetime granted (a week).
    public static let maxLifetimeSeconds: Int64 = 7 * 86_400

    /// Credentials keyed by `key` (32 bytes or more, secret) in `realm`.
    public init(key: [UInt8], realm: String = "parley") {
        self.key = key
        self.realm = realm
    }

    /// One identity's credentials.
    public struct Minted: Equatable, Sendable {
        /// The digest username: `EXPIRY.IDENTITY`.
        public var username: String
        /// The digest password.
        public var password: String
        /// When they lapse (Unix seconds).
        public var expiresAt: Int64
    }

    /// Credentials for `identity` from `now` (Unix seconds) for `lifetime` seconds (clamped to 60 s…a week).
    public func mint(identity: String, now: Int64, lifetime: Int64 = defaultLifetimeSeconds) -> Minted {
        let expiresAt = now + min(max(lifetime, 60), Self.maxLifetimeSeconds)
        let username = "\(expiresAt).\(identity)"
        return Minted(username: username, password: password(for: username), expiresAt: expiresAt)
    }

    /// What a device presenting `username` at `now` may be: its identity and the password it must know; nil when the
    /// username is not one the relay mints (no expiry, no identity) or has lapsed.
    public func check(username: String, now: Int64) -> (identity: String, password: String)? {
        guard let dot = username.firstIndex(of: "."), let expiresAt = Int64(username[..<dot]), expiresAt > now else {
            return nil
        }
        let identity = String(username[username.index(after: dot)...])
        guard Self.validIdentity(identity) else { return nil }
        return (identity, password(for: username))
    }

    private func password(for username: String) -> String {
        Base64URL.encode(Crypto.hmacSHA256(key: key, message: Array(("parley sip digest " + username).utf8)))
    }

    /// An identity credentials may name: 1-64 bytes of letters, digits and `-_.@+` (what a SIP user part and a
    /// digest username carry unescaped; the relay's tokens allow more, but such identities get no SIP credentials).
    public static func validIdentity(_ identity: String) -> Bool {
        !identity.isEmpty && identity.utf8.count <= 64
            && identity.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                    || "-_.@+".utf8.contains(b)
            }
    }
}

/// The nonces of digest challenges: each issued with a lifetime, good for one request (the first that presents it
/// takes it out), at most `capacity` outstanding (the oldest forgotten first, so a flood of challenges costs a fixed
/// amount of memory). A device whose nonce was used or lapsed is challenged again with `stale=true`, and standard
/// clients retry at once. Pure: the caller gives the time (monotonic nanoseconds) and the random bytes.
public struct SIPNonces: Sendable {
    /// How long a nonce stays good.
    public let lifetimeNanoseconds: Int64
    /// Outstanding nonces at most.
    public let capacity: Int
    private var expiry: [String: Int64] = [:]
    private var order: [String] = []
    private var head = 0

    /// Nonces good for `lifetimeSeconds`, at most `capacity` outstanding.
    public init(lifetimeSeconds: Int64 = 30, capacity: Int = 10_000) {
        lifetimeNanoseconds = lifetimeSeconds * 1_000_000_000
        self.capacity = max(1, capacity)
    }

    /// Nonces outstanding.
    public var outstanding: Int { expiry.count }

    /// A new nonce from 16 random bytes (hex), good until `now` + the lifetime.
    public mutating func issue(random: [UInt8], now: Int64) -> String {
        let nonce = Crypto.hex(random)
        while expiry.count >= capacity, head < order.count {
            expiry[order[head]] = nil
            head += 1
        }
        if order.count - head > 2 * capacity {  // consumed nonces' places: compacted now and then
            order = order[head...].filter { expiry[$0] != nil }
            head = 0
        } else if head > 1_024 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
        expiry[nonce] = now + lifetimeNanoseconds
        order.append(nonce)
        return nonce
    }

    /// True once for a nonce issued and not lapsed at `now`; it is gone after.
    public mutating func consume(_ nonce: String, now: Int64) -> Bool {
        guard let until = expiry.removeValue(forKey: nonce) else { return false }
        return until > now
    }
}
