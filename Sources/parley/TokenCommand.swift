import Foundation
import ParleyAuth
import ParleyNet
import ParleyWire

/// The API key and secret from PARLEY_API_KEY / PARLEY_API_SECRET, or the dev defaults.
func apiCredentials() -> (key: String, secret: String) {
    let env = ProcessInfo.processInfo.environment
    return (env["PARLEY_API_KEY"] ?? DevDefaults.apiKey, env["PARLEY_API_SECRET"] ?? DevDefaults.apiSecret)
}

/// Mints a token the way `parley token` does.
func mintToken(identity: String, name: String?, room: String?, ttlSeconds: Int64, publish: Bool, admin: Bool, mode: String?,
               tokenID: String? = nil, relayKey: String? = nil, audience: Bool = false) -> String {
    let (key, secret) = apiCredentials()
    let now = Clock.unixSeconds()
    let claims = TokenClaims(identity: identity, name: name, room: room, expiresAt: now + ttlSeconds, notBefore: now - 1,
                             issuedAt: now, grants: Grants(join: true, publish: publish, subscribe: true, admin: admin, create: true),
                             mode: mode, tokenID: tokenID, relayKey: relayKey, audience: audience ? true : nil)
    return TokenSigner(apiKey: key, apiSecret: secret).mint(claims)
}

enum TokenCommand {
    static let usage = """
    usage: parley token --identity I --room R [--name N] [--ttl 1h] [--no-publish] [--admin] [--mode forward|mix|hybrid]
                        [--audience] [--relay-key K]

    Mints a join token signed with PARLEY_API_KEY / PARLEY_API_SECRET (the relay's dev defaults when unset)
    and prints it. --ttl takes seconds or 30s/15m/1h/2d (default 1h). --admin adds the admin grant;
    with --admin, --room may be omitted (a token for the HTTP API). --relay-key names the one relay the token
    is for (its public key, as its ready line and GET /v1/relay show); any other relay refuses the token.
    --audience: a room the token opens is an audience room (members without publish are counted, not announced).
    """

    static func run(_ arguments: [String]) -> Int32 {
        let o = Options(arguments, valued: ["identity", "room", "name", "ttl", "mode", "relay-key"], switches: ["no-publish", "admin", "audience"], usage: usage)
        guard let identity = o["identity"], !identity.isEmpty else { fail("token needs --identity\n\(usage)") }
        let room = o["room"]
        guard room != nil || o.has("admin") else { fail("token needs --room (or --admin for an API token)\n\(usage)") }
        guard let ttl = parseDuration(o["ttl"] ?? "1h") else { fail("--ttl must be like 3600, 90s, 15m, 1h or 2d") }
        if let mode = o["mode"], !RoomMode.isValid(mode) { fail("--mode must be \(RoomMode.choices)") }
        if let key = o["relay-key"], key.utf8.count != 43 || Base64URL.decode(Substring(key))?.count != 32 {
            fail("--relay-key must be a relay's public key: 43 base64url characters, as its ready line shows")
        }
        writeLine(mintToken(identity: identity, name: o["name"], room: room, ttlSeconds: ttl, publish: !o.has("no-publish"),
                            admin: o.has("admin"), mode: o["mode"], relayKey: o["relay-key"], audience: o.has("audience")))
        return 0
    }
}
