/// The STUN and TURN servers the relay hands to its WebRTC members (`turn_urls`, `turn_secret`, `turn_ttl_s`), and
/// the `RTCIceServer` entries one member gets: the STUN URLs as they are, the TURN URLs with a `TURNCredential` for
/// the member's identity that expires `lifetime` seconds from `now`. Pure: the time is passed in.
///
/// The shared secret stays inside: no property shows it, and `description`, `debugDescription` and the mirror
/// (`dump`, `print`) say only whether one is set.
public struct ICEServers: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The configured URLs, in the order given.
    public var urls: [ICEServerURL]
    /// Seconds a credential lasts from when it is handed out.
    public var lifetime: Int64
    /// The secret shared with the TURN server (coturn's `static-auth-secret`), as bytes; nil: none.
    private var secret: [UInt8]?

    /// A credential's lifetime unless configured: one hour.
    public static let defaultLifetime: Int64 = 3600
    /// The shortest and longest lifetimes taken.
    public static let lifetimes: ClosedRange<Int64> = 60...86_400

    /// No servers: members get an empty list (their own host candidates only).
    public init() {
        urls = []
        lifetime = Self.defaultLifetime
        secret = nil
    }

    /// `urls` with `secret` (UTF-8, as coturn reads its `static-auth-secret`) for the TURN ones.
    public init(urls: [ICEServerURL], secret: String?, lifetime: Int64 = ICEServers.defaultLifetime) {
        self.urls = urls
        self.secret = secret.map { Array($0.utf8) }
        self.lifetime = lifetime
    }

    /// True when there is no URL to hand out.
    public var isEmpty: Bool { urls.isEmpty }
    /// True when a shared secret is set.
    public var hasSecret: Bool { secret != nil }
    /// The `turn:` and `turns:` URLs.
    public var turnURLs: [ICEServerURL] { urls.filter(\.scheme.isTURN) }
    /// The `stun:` URLs.
    public var stunURLs: [ICEServerURL] { urls.filter { !$0.scheme.isTURN } }

    /// What `identity` gets at `now` (Unix seconds): one entry for the STUN URLs (no credentials), one for the TURN
    /// URLs with a credential that expires at `now + lifetime`; either left out when it has no URL (the TURN one too
    /// when no secret is set). Empty when nothing is configured.
    public func servers(for identity: String, now: Int64) -> [ICEServer] {
        var servers: [ICEServer] = []
        if !stunURLs.isEmpty { servers.append(ICEServer(urls: stunURLs.map(\.text), username: nil, credential: nil)) }
        if let secret, !turnURLs.isEmpty {
            let credential = TURNCredential(secret: secret, identity: identity, expiresAt: now + lifetime)
            servers.append(ICEServer(urls: turnURLs.map(\.text), username: credential.username,
                                     credential: credential.password))
        }
        return servers
    }

    /// The URLs, the lifetime and whether a secret is set: never the secret.
    public var description: String {
        let list = urls.map(\.text).joined(separator: ", ")
        return "ICE servers [\(list)], credentials for \(lifetime) s, "
            + (secret == nil ? "no shared secret" : "shared secret set (not shown)")
    }

    /// `description`.
    public var debugDescription: String { description }

    /// The URLs, the lifetime, and "(not shown)" for the secret.
    public var customMirror: Mirror {
        Mirror(self, children: ["urls": urls, "lifetime": lifetime, "secret": secret == nil ? "none" : "(not shown)"])
    }
}

/// One entry of a browser's `RTCPeerConnection` configuration (`RTCIceServer`): its URLs and, for TURN, the
/// username and credential (a password: `credentialType` "password", the default).
public struct ICEServer: Equatable, Sendable, Codable {
    /// The server's URLs, as `ICEServerURL.text`.
    public var urls: [String]
    /// The TURN username (`TURNCredential.username`); nil for STUN.
    public var username: String?
    /// The TURN password (`TURNCredential.password`); nil for STUN.
    public var credential: String?

    /// An entry.
    public init(urls: [String], username: String?, credential: String?) {
        self.urls = urls
        self.username = username
        self.credential = credential
    }
}
