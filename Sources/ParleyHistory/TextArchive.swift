/// What the relay's message store (`ParleyRelay`'s `TextStore`) asks of the place texts are kept: room texts,
/// direct texts waiting, held, delivered or failed, and the chats between identities. Two places keep them:
///
/// - `SQLiteTextArchive`: one SQLite file in the state directory (a relay on its own);
/// - `RedisTextArchive`: the cluster's Redis, which every node reaches (a relay in a cluster).
///
/// An archive belongs to one thread (the store's, or the API's reader under its lock). Errors are the archive's own
/// (`SQLiteError`, `ArchiveError`); `StoreFailure` says what kind of failure one is.
public protocol TextArchive: AnyObject {
    /// Keeps a room text; returns its id.
    @discardableResult
    func addRoomText(room: String, identity: String, name: String, text: String, at: Int64, attachments: [String]) throws -> Int64
    /// A page of `room`'s texts, newest first: at most `limit`, older than id `before` when given.
    func roomMessages(room: String, before: Int64?, limit: Int) throws -> [SQLiteTextArchive.RoomMessage]

    /// Keeps a direct text in `state` (stored or held: until `expiresAt`); returns its id.
    @discardableResult
    func addDirectText(from: String, to: String, text: String, at: Int64, state: SQLiteTextArchive.DirectState, expiresAt: Int64,
                       senderConnection: UInt32, senderMessageID: UInt32, attachments: [String]) throws -> Int64
    /// Texts waiting for `identity` (from `from` only, when given), oldest first, at most `limit`, **claimed** for the
    /// caller: an archive several relays share hands each text to one of them only, until it is marked delivered or
    /// handed back (`returnUndelivered`).
    func claimWaiting(for identity: String, from: String?, limit: Int) throws -> [SQLiteTextArchive.DirectMessage]
    /// How many texts wait for `identity` (stored or held).
    func waitingCount(for identity: String) throws -> Int
    /// How many texts from `identity` wait for anyone (stored or held).
    func waitingCount(from identity: String) throws -> Int
    /// Marks claimed texts delivered.
    func markDelivered(_ ids: [Int64], at: Int64) throws
    /// Claimed texts that no device took: they wait again.
    func returnUndelivered(_ ids: [Int64]) throws
    /// The recipient accepted: texts `from` held for `to` wait like any other now.
    func release(from: String, to: String) throws
    /// The recipient declined: texts `from` held for `to` fail with `reason`; returns them.
    func failHeld(from: String, to: String, reason: String) throws -> [SQLiteTextArchive.DirectMessage]
    /// Waiting or held texts whose time ran out by `now`: failed ("expired") and returned.
    func expire(now: Int64) throws -> [SQLiteTextArchive.DirectMessage]

    /// Sets where the chat between `requester` and `recipient` stands.
    func setChat(requester: String, recipient: String, state: SQLiteTextArchive.ChatState, at: Int64) throws
    /// Every chat.
    func allChats() throws -> [SQLiteTextArchive.Chat]
    /// A number that changes whenever a chat changes, by any relay; nil when only this relay changes them (then the
    /// copy the core holds never needs refreshing).
    func chatsVersion() throws -> Int64?

    /// Runs `body` as one transaction where the archive has them (`rollsBack`: nothing of a body that throws stays);
    /// otherwise each call inside is atomic on its own and what ran before a throw stays.
    func transaction(_ body: () throws -> Void) throws
    /// Whether `transaction` undoes a body that throws.
    var rollsBack: Bool { get }
}

/// A failure of the Redis archive: Redis unreachable, or Redis refusing a command.
public struct ArchiveError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Whether Redis could not be reached (the archive reconnects by itself; until then everything fails fast).
    public var unreachable: Bool
    /// What went wrong, in one line.
    public var description: String
    public init(unreachable: Bool, _ description: String) {
        self.unreachable = unreachable
        self.description = description
    }
}

/// What kind of failure an archive's error is, for the people told about it.
public enum StoreFailure: Equatable, Sendable {
    /// The disk under the SQLite file is full.
    case full
    /// The SQLite file is locked by another process past the busy timeout.
    case busy
    /// The cluster's Redis cannot be reached.
    case unreachable
    /// Anything else.
    case other

    /// The kind of `error` (an archive's).
    public init(_ error: any Error) {
        if let e = error as? SQLiteError {
            self = e.isFull ? .full : e.isBusy ? .busy : .other
        } else if let e = error as? ArchiveError {
            self = e.unreachable ? .unreachable : .other
        } else {
            self = .other
        }
    }

    /// Why a text could not be kept, for its sender.
    public var reason: String {
        switch self {
        case .full: "the relay's disk is full"
        case .busy: "the relay's message store is busy"
        case .unreachable: "the relay's message store is unreachable"
        case .other: "the relay could not keep it"
        }
    }
}
