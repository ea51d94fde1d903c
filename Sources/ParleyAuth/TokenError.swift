/// Why a token was refused; `reason` is a short sentence a client can show to a person.
public enum TokenError: Error, Equatable, Sendable {
    /// Not three base64url parts, bad JSON, or a missing/ill-typed claim; the payload says which.
    case malformed(String)
    /// The header's `alg` is not HS256 (e.g. "none", "HS512").
    case unsupportedAlgorithm(String)
    /// The header's `kid` is not among the configured API keys.
    case unknownKey(String)
    /// The signature does not match.
    case badSignature
    /// now >= exp (after leeway).
    case expired
    /// now < nbf (after leeway).
    case notYetValid
    /// The token names a different room (or pattern) from the one being joined.
    case wrongRoom(expected: String, got: String)
    /// A member token that names no room: it admits to none (only admin tokens go anywhere).
    case noRoom
    /// The token lacks a required grant, e.g. "join".
    case missingGrant(String)
    /// The token's `relay_key` names another relay's public key: it was minted for that relay, not this one.
    case wrongRelay

    /// A short sentence a client can show to a person.
    public var reason: String {
        switch self {
        case .malformed(let detail): "The token is malformed: \(detail)."
        case .unsupportedAlgorithm(let alg): "The token uses the unsupported signing algorithm \"\(alg)\"; only HS256 is accepted."
        case .unknownKey(let kid): "The token was signed with an unknown API key \"\(kid)\"."
        case .badSignature: "The token's signature is invalid."
        case .expired: "The token has expired."
        case .notYetValid: "The token is not valid yet."
        case .wrongRoom(let expected, let got): "The token is for room \"\(got)\", not \"\(expected)\"."
        case .noRoom: "The token names no room; a member token admits only to the room (or pattern such as \"team-*\") it names."
        case .missingGrant(let grant): "The token does not grant \"\(grant)\"."
        case .wrongRelay: "The token is for another relay (its relay_key is not this relay's public key)."
        }
    }

    /// A stable machine code, e.g. "token_expired", "token_bad_signature", "token_malformed".
    public var code: String {
        switch self {
        case .malformed: "token_malformed"
        case .unsupportedAlgorithm: "token_unsupported_algorithm"
        case .unknownKey: "token_unknown_key"
        case .badSignature: "token_bad_signature"
        case .expired: "token_expired"
        case .notYetValid: "token_not_yet_valid"
        case .wrongRoom, .noRoom: "token_wrong_room"
        case .missingGrant: "token_missing_grant"
        case .wrongRelay: "token_wrong_relay"
        }
    }
}
