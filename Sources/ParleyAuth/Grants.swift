/// What a token permits.
///
/// Decoding is least-privilege: a grant absent from the JSON (or a token with no `grants` object) is `false`,
/// whereas `init()`'s defaults describe an ordinary participant token being minted.
public struct Grants: Equatable, Sendable, Codable {
    /// May join a room.
    public var join: Bool
    /// May send audio into the room.
    public var publish: Bool
    /// May receive other members' audio.
    public var subscribe: Bool
    /// May administer rooms (kick, close, list).
    public var admin: Bool
    /// May create the room if it does not exist yet.
    public var create: Bool

    /// A grant set; the defaults are an ordinary participant (everything but `admin`).
    public init(join: Bool = true, publish: Bool = true, subscribe: Bool = true, admin: Bool = false, create: Bool = true) {
        self.join = join
        self.publish = publish
        self.subscribe = subscribe
        self.admin = admin
        self.create = create
    }

    /// No permissions at all; what a token without a `grants` object receives.
    public static let empty = Grants(join: false, publish: false, subscribe: false, admin: false, create: false)

    private enum CodingKeys: String, CodingKey { case join, publish, subscribe, admin, create }

    /// Decodes each grant, treating a missing or null one as `false`; a non-Boolean value is an error.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        join = try container.decodeIfPresent(Bool.self, forKey: .join) ?? false
        publish = try container.decodeIfPresent(Bool.self, forKey: .publish) ?? false
        subscribe = try container.decodeIfPresent(Bool.self, forKey: .subscribe) ?? false
        admin = try container.decodeIfPresent(Bool.self, forKey: .admin) ?? false
        create = try container.decodeIfPresent(Bool.self, forKey: .create) ?? false
    }
}
