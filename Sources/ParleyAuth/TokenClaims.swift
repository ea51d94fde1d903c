/// JWT claims. JSON field names: sub, name, room, exp, nbf, iat, grants {join,publish,subscribe,admin,create},
/// mode (optional room mode "forward"/"mix"), call (optional; true on the relay-minted tokens of a private call room),
/// jti (optional token id), relay_key (optional; the base64url X25519 public key of the one relay the token is for),
/// e2ee (optional; true asks for an end-to-end encrypted room, which the relay refuses in a mix room).
/// Absent optionals are omitted when encoding.
public struct TokenClaims: Equatable, Sendable, Codable {
    /// Who the token is for ("sub"); 1...128 UTF-8 bytes, no control characters.
    public var identity: String
    /// Display name ("name").
    public var name: String?
    /// nil = any room (admin tokens), else the one room this token joins ("room").
    public var room: String?
    /// "exp", seconds since the Unix epoch; the token is refused from this instant on.
    public var expiresAt: Int64
    /// "nbf", seconds since the Unix epoch; the token is refused before this instant.
    public var notBefore: Int64?
    /// "iat", seconds since the Unix epoch; informational.
    public var issuedAt: Int64?
    /// What the token permits ("grants").
    public var grants: Grants
    /// Optional requested room mode ("forward", "mix" or "hybrid") for rooms this token creates.
    public var mode: String?
    /// "call": true on tokens for a private call room (`call-…`), which the relay mints when a call is answered;
    /// such rooms admit only tokens carrying it. Absent on every other token.
    public var call: Bool?
    /// "jti" (RFC 7519 JWT ID), optional: tells apart tokens otherwise alike, e.g. the presence tokens two devices of one
    /// identity mint in the same second (the relay drops a token already in use from another address as a replay).
    public var tokenID: String?
    /// "relay_key", optional: the base64url (unpadded, 43 characters) X25519 public key of the relay this token is for.
    /// A relay whose own key differs refuses the token, so a token minted for one relay cannot be replayed to another.
    public var relayKey: String?
    /// "e2ee", optional: true when the application encrypts this room's media end to end (with a key of its own the
    /// relay never sees). The relay cannot mix what it cannot decode, so it refuses such a token in a mix room.
    public var endToEnd: Bool?
    /// "audience", optional: a room this token opens is an audience room — its listeners (members without `publish`)
    /// are counted, not announced one by one (for rooms that fill with listeners in seconds).
    public var audience: Bool?

    /// Claims for one token.
    public init(identity: String, name: String? = nil, room: String?, expiresAt: Int64, notBefore: Int64? = nil,
                issuedAt: Int64? = nil, grants: Grants = Grants(), mode: String? = nil, call: Bool? = nil, tokenID: String? = nil,
                relayKey: String? = nil, endToEnd: Bool? = nil, audience: Bool? = nil) {
        self.identity = identity
        self.name = name
        self.room = room
        self.expiresAt = expiresAt
        self.notBefore = notBefore
        self.issuedAt = issuedAt
        self.grants = grants
        self.mode = mode
        self.call = call
        self.tokenID = tokenID
        self.relayKey = relayKey
        self.endToEnd = endToEnd
        self.audience = audience
    }

    private enum CodingKeys: String, CodingKey {
        case identity = "sub", name, room, expiresAt = "exp", notBefore = "nbf", issuedAt = "iat", grants, mode, call, tokenID = "jti",
             relayKey = "relay_key", endToEnd = "e2ee", audience
    }

    /// Decodes the claims; `sub` and `exp` are required, `grants` defaults to `Grants.empty`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        identity = try container.decode(String.self, forKey: .identity)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        room = try container.decodeIfPresent(String.self, forKey: .room)
        expiresAt = try container.decodeSeconds(forKey: .expiresAt)
        notBefore = try container.decodeSecondsIfPresent(forKey: .notBefore)
        issuedAt = try container.decodeSecondsIfPresent(forKey: .issuedAt)
        grants = try container.decodeIfPresent(Grants.self, forKey: .grants) ?? .empty
        mode = try container.decodeIfPresent(String.self, forKey: .mode)
        call = try container.decodeIfPresent(Bool.self, forKey: .call)
        tokenID = try container.decodeIfPresent(String.self, forKey: .tokenID)
        relayKey = try container.decodeIfPresent(String.self, forKey: .relayKey)
        endToEnd = try container.decodeIfPresent(Bool.self, forKey: .endToEnd)
        audience = try container.decodeIfPresent(Bool.self, forKey: .audience)
    }
}

extension KeyedDecodingContainer {
    /// Decodes an integer timestamp. JSONDecoder reports a number that is not a representable Int64
    /// (1.5, 1e30) with an internal error that loses the coding path; rethrow it as a type mismatch naming the key.
    fileprivate func decodeSecondsIfPresent(forKey key: Key) throws -> Int64? {
        do {
            return try decodeIfPresent(Int64.self, forKey: key)
        } catch let error as DecodingError {
            guard case .dataCorrupted(let context) = error, context.codingPath.isEmpty else { throw error }
            throw Self.notSeconds(at: codingPath + [key], underlying: error)
        } catch {
            throw Self.notSeconds(at: codingPath + [key], underlying: error)
        }
    }

    private static func notSeconds(at path: [any CodingKey], underlying: any Error) -> DecodingError {
        .typeMismatch(Int64.self, DecodingError.Context(codingPath: path, debugDescription: "not an integer number of seconds",
                                                       underlyingError: underlying))
    }

    /// Decodes a required integer timestamp, naming the key when it is missing or not an Int64.
    fileprivate func decodeSeconds(forKey key: Key) throws -> Int64 {
        guard let seconds = try decodeSecondsIfPresent(forKey: key) else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(codingPath: codingPath, debugDescription: "required"))
        }
        return seconds
    }
}

extension TokenClaims {
    /// The claims of `token` read without checking its signature: for a client that holds a token and wants to say
    /// who it is for (the relay always verifies). Nil when the token is not a JWT with readable claims.
    public static func unverified(_ token: String) -> TokenClaims? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= TokenVerifier.maximumTokenBytes,
              let bytes = Base64URL.decode(parts[1]), !bytes.isEmpty else { return nil }
        return try? TokenJSON.decode(TokenClaims.self, from: bytes, part: "claims")
    }
}
