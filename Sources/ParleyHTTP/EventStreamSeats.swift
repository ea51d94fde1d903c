import ParleyAuth

/// Who opens an event stream, for the server's bounds on them: the token's identity and expiry, and whether it is an
/// admin's (the backend's, not counted against the bounds: its secret is the operator's).
public struct StreamHolder: Equatable, Sendable {
    /// The token's identity (`sub`).
    public var identity: String
    /// Whether the token has the admin grant.
    public var admin: Bool
    /// The token's `exp`, Unix seconds: the stream ends then, with a last event saying why.
    public var expiresAt: Int64

    /// A holder.
    public init(identity: String, admin: Bool, expiresAt: Int64) {
        self.identity = identity
        self.admin = admin
        self.expiresAt = expiresAt
    }

    /// The holder of a stream opened with a token of `claims`.
    public init(_ claims: TokenClaims) {
        self.init(identity: claims.identity, admin: claims.grants.admin, expiresAt: claims.expiresAt)
    }
}

/// The event streams open per identity and in all, and whether one more may open: at most `perIdentity` per member
/// identity (`event_streams_per_identity`) and `total` member streams relay-wide (`HTTPLimits.eventStreamCap`, at most
/// half of the connections, so requests always find one). Pure; the server holds it under a lock, takes a seat before a
/// stream starts and gives it back when the stream ends.
struct EventStreamSeats: Equatable {
    /// Streams one identity may hold.
    let perIdentity: Int
    /// Member streams the relay holds at most.
    let total: Int
    /// Member streams open.
    private(set) var open = 0
    /// Member streams open per identity (no entry: none).
    private(set) var byIdentity: [String: Int] = [:]

    /// Why a stream may not start.
    enum Refusal: Equatable, Error {
        /// Its identity holds `perIdentity` streams already.
        case identityFull(identity: String, limit: Int)
        /// The relay holds `total` member streams already.
        case relayFull(limit: Int)

        /// The answer: 429 for the identity's own bound, 503 for the relay's.
        var error: APIError {
            switch self {
            case .identityFull(let identity, let limit):
                APIError(429, "too_many_streams", "\(identity) has \(limit) event streams open, its most (event_streams_per_identity): close one first")
            case .relayFull(let limit):
                APIError(503, "unavailable", "the relay holds \(limit) event streams, its most (event_streams_max): retry later")
            }
        }
    }

    /// Bounds of `perIdentity` streams per identity and `total` in all (each at least 1).
    init(perIdentity: Int, total: Int) {
        self.perIdentity = max(1, perIdentity)
        self.total = max(1, total)
    }

    /// Takes a seat for `holder`'s new stream, or says why not (nothing changes then). An admin's takes none.
    mutating func take(_ holder: StreamHolder) -> Refusal? {
        guard !holder.admin else { return nil }
        let mine = byIdentity[holder.identity, default: 0]
        if mine >= perIdentity { return .identityFull(identity: holder.identity, limit: perIdentity) }
        if open >= total { return .relayFull(limit: total) }
        byIdentity[holder.identity] = mine + 1
        open += 1
        return nil
    }

    /// Gives back the seat of one of `holder`'s streams that `take` admitted.
    mutating func give(_ holder: StreamHolder) {
        guard !holder.admin, let mine = byIdentity[holder.identity] else { return }
        byIdentity[holder.identity] = mine > 1 ? mine - 1 : nil
        open -= 1
    }
}
