/// What the relay keeps of texts, in one SQLite file (`<state_dir>/messages.db`): every room text, every direct text
/// (delivered at once, or stored until its recipient comes online), and the state of each chat between two identities
/// (requested, accepted, declined). The schema is made on open; one writer connection and any number of readers.
///
///     room_messages(id, room, sender, name, body, at, attachments)           newest first by id, per room
///     direct_messages(id, sender, recipient, body, at, state, delivered_at,  state: 0 stored (waiting),
///                     expires_at, sender_connection, sender_message_id,           1 delivered, 2 failed
///                     reason, attachments)
///     chats(low, high, requester, state, at)                                 one row per pair of identities
///
/// `attachments`: the ids of the images a text carries (`POST /v1/attachments`), space-separated ('' for none); a
/// file made before the column existed gets it on open.
public final class SQLiteTextArchive {
    /// The connection.
    public let db: SQLiteDatabase

    /// One room text as kept.
    public struct RoomMessage: Equatable, Sendable {
        public var id: Int64, room: String, identity: String, name: String, text: String, at: Int64
        /// The ids of the images it carries.
        public var attachments: [String]
        public init(id: Int64, room: String, identity: String, name: String, text: String, at: Int64, attachments: [String] = []) {
            self.id = id; self.room = room; self.identity = identity; self.name = name; self.text = text; self.at = at
            self.attachments = attachments
        }
    }

    /// A direct text's state.
    /// A direct text's state: `held` waits for its recipient to accept the chat, `stored` for its recipient to come online.
    public enum DirectState: Int64, Sendable { case stored = 0, delivered = 1, failed = 2, held = 3 }

    /// One direct text as kept.
    public struct DirectMessage: Equatable, Sendable {
        public var id: Int64, from: String, to: String, text: String, at: Int64, state: DirectState
        /// The sending session (connection id) and its id for the text, to tell it when the text is delivered.
        public var senderConnection: UInt32, senderMessageID: UInt32
        public var reason: String
        /// The ids of the images it carries.
        public var attachments: [String]
        public init(id: Int64, from: String, to: String, text: String, at: Int64, state: DirectState, senderConnection: UInt32,
                    senderMessageID: UInt32, reason: String = "", attachments: [String] = []) {
            self.id = id; self.from = from; self.to = to; self.text = text; self.at = at; self.state = state
            self.senderConnection = senderConnection; self.senderMessageID = senderMessageID; self.reason = reason
            self.attachments = attachments
        }
    }

    /// Where a chat between two identities stands.
    public enum ChatState: Int64, Sendable { case requested = 0, accepted = 1, declined = 2 }

    /// A chat: who asked, and where it stands.
    public struct Chat: Equatable, Sendable {
        public var requester: String, recipient: String, state: ChatState
        public init(requester: String, recipient: String, state: ChatState) {
            self.requester = requester; self.recipient = recipient; self.state = state
        }
    }

    /// Opens (or makes) the history at `path`.
    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        db = try SQLiteDatabase(path: path, readOnly: readOnly)
        guard !readOnly else { return }
        try db.execute("""
            CREATE TABLE IF NOT EXISTS room_messages(id INTEGER PRIMARY KEY, room TEXT NOT NULL, sender TEXT NOT NULL,
                name TEXT NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL, attachments TEXT NOT NULL DEFAULT '');
            CREATE INDEX IF NOT EXISTS room_messages_by_room ON room_messages(room, id);
            CREATE TABLE IF NOT EXISTS direct_messages(id INTEGER PRIMARY KEY, sender TEXT NOT NULL, recipient TEXT NOT NULL,
                body TEXT NOT NULL, at INTEGER NOT NULL, state INTEGER NOT NULL, delivered_at INTEGER, expires_at INTEGER NOT NULL,
                sender_connection INTEGER NOT NULL, sender_message_id INTEGER NOT NULL, reason TEXT NOT NULL DEFAULT '',
                attachments TEXT NOT NULL DEFAULT '');
            CREATE INDEX IF NOT EXISTS direct_waiting ON direct_messages(recipient, state, id);
            CREATE INDEX IF NOT EXISTS direct_by_pair ON direct_messages(sender, recipient, id);
            CREATE TABLE IF NOT EXISTS chats(low TEXT NOT NULL, high TEXT NOT NULL, requester TEXT NOT NULL, state INTEGER NOT NULL,
                at INTEGER NOT NULL, PRIMARY KEY(low, high));
            """)
        // A file from before images: the column, empty for every text it holds.
        for table in ["room_messages", "direct_messages"] {
            let columns = try db.query("SELECT name FROM pragma_table_info('\(table)')") { $0.text(0) }
            if !columns.contains("attachments") { try db.execute("ALTER TABLE \(table) ADD COLUMN attachments TEXT NOT NULL DEFAULT ''") }
        }
    }

    /// Image ids as a column holds them (space-separated; an id never holds a space).
    static func column(_ ids: [String]) -> String { ids.joined(separator: " ") }
    static func ids(_ column: String) -> [String] { column.split(separator: " ").map(String.init) }

    // MARK: Room texts

    /// Keeps a room text; returns its id.
    @discardableResult
    public func addRoomText(room: String, identity: String, name: String, text: String, at: Int64,
                            attachments: [String] = []) throws(SQLiteError) -> Int64 {
        try db.run("INSERT INTO room_messages(room, sender, name, body, at, attachments) VALUES (?, ?, ?, ?, ?, ?)",
                   [.text(room), .text(identity), .text(name), .text(text), .int(at), .text(Self.column(attachments))])
        return db.lastInsertID
    }

    /// A page of `room`'s texts, newest first: at most `limit`, older than id `before` when given.
    public func roomMessages(room: String, before: Int64? = nil, limit: Int) throws(SQLiteError) -> [RoomMessage] {
        try db.query("SELECT id, room, sender, name, body, at, attachments FROM room_messages WHERE room = ? AND id < ? ORDER BY id DESC LIMIT ?",
                     [.text(room), .int(before ?? .max), .int(Int64(max(0, limit)))]) {
            RoomMessage(id: $0.int(0), room: $0.text(1), identity: $0.text(2), name: $0.text(3), text: $0.text(4), at: $0.int(5),
                        attachments: Self.ids($0.text(6)))
        }
    }

    // MARK: Direct texts

    /// Keeps a direct text (`state` stored: waiting for its recipient, until `expiresAt`); returns its id.
    @discardableResult
    public func addDirectText(from: String, to: String, text: String, at: Int64, state: DirectState, expiresAt: Int64,
                              senderConnection: UInt32, senderMessageID: UInt32, attachments: [String] = []) throws(SQLiteError) -> Int64 {
        try db.run("""
            INSERT INTO direct_messages(sender, recipient, body, at, state, delivered_at, expires_at, sender_connection, sender_message_id,
                                        attachments)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(from), .text(to), .text(text), .int(at), .int(state.rawValue), state == .delivered ? .int(at) : .null,
                  .int(expiresAt), .int(Int64(senderConnection)), .int(Int64(senderMessageID)), .text(Self.column(attachments))])
        return db.lastInsertID
    }

    private static func direct(_ r: SQLiteDatabase.Row) -> DirectMessage {
        DirectMessage(id: r.int(0), from: r.text(1), to: r.text(2), text: r.text(3), at: r.int(4), state: DirectState(rawValue: r.int(5)) ?? .failed,
                      senderConnection: UInt32(truncatingIfNeeded: r.int(6)), senderMessageID: UInt32(truncatingIfNeeded: r.int(7)), reason: r.text(8),
                      attachments: ids(r.text(9)))
    }
    private static let directColumns = "id, sender, recipient, body, at, state, sender_connection, sender_message_id, reason, attachments"

    /// Texts waiting for `identity`, oldest first (at most `limit`); `from`: only those of one sender.
    public func waiting(for identity: String, from: String? = nil, limit: Int = 500) throws(SQLiteError) -> [DirectMessage] {
        if let from {
            return try db.query("SELECT \(Self.directColumns) FROM direct_messages WHERE recipient = ? AND sender = ? AND state = 0 ORDER BY id LIMIT ?",
                                [.text(identity), .text(from), .int(Int64(limit))], Self.direct)
        }
        return try db.query("SELECT \(Self.directColumns) FROM direct_messages WHERE recipient = ? AND state = 0 ORDER BY id LIMIT ?",
                            [.text(identity), .int(Int64(limit))], Self.direct)
    }

    /// How many texts wait for `identity`.
    public func waitingCount(for identity: String) throws(SQLiteError) -> Int {
        Int(try db.query("SELECT count(*) FROM direct_messages WHERE recipient = ? AND state IN (0, 3)", [.text(identity)]) { $0.int(0) }.first ?? 0)
    }

    /// How many texts from `identity` wait for anyone.
    public func waitingCount(from identity: String) throws(SQLiteError) -> Int {
        Int(try db.query("SELECT count(*) FROM direct_messages WHERE sender = ? AND state IN (0, 3)", [.text(identity)]) { $0.int(0) }.first ?? 0)
    }

    /// Marks waiting texts delivered.
    public func markDelivered(_ ids: [Int64], at: Int64) throws(SQLiteError) {
        for id in ids { try db.run("UPDATE direct_messages SET state = 1, delivered_at = ? WHERE id = ? AND state = 0", [.int(at), .int(id)]) }
    }

    /// Marks waiting texts failed, with why; returns those it marked.
    @discardableResult
    public func markFailed(_ ids: [Int64], reason: String) throws(SQLiteError) -> [DirectMessage] {
        var failed: [DirectMessage] = []
        for id in ids {
            if try db.run("UPDATE direct_messages SET state = 2, reason = ? WHERE id = ? AND state = 0", [.text(reason), .int(id)]) > 0 {
                failed += try db.query("SELECT \(Self.directColumns) FROM direct_messages WHERE id = ?", [.int(id)], Self.direct)
            }
        }
        return failed
    }

    /// The recipient accepted: texts `from` held for `to` wait like any other now.
    public func release(from: String, to: String) throws(SQLiteError) {
        try db.run("UPDATE direct_messages SET state = 0 WHERE sender = ? AND recipient = ? AND state = 3", [.text(from), .text(to)])
    }

    /// The recipient declined: texts `from` held for `to` fail with `reason`; returns them.
    public func failHeld(from: String, to: String, reason: String) throws(SQLiteError) -> [DirectMessage] {
        let held = try db.query("SELECT \(Self.directColumns) FROM direct_messages WHERE sender = ? AND recipient = ? AND state = 3",
                                [.text(from), .text(to)], Self.direct)
        try db.run("UPDATE direct_messages SET state = 2, reason = ? WHERE sender = ? AND recipient = ? AND state = 3",
                   [.text(reason), .text(from), .text(to)])
        return held.map { var m = $0; m.state = .failed; m.reason = reason; return m }
    }

    /// Waiting texts whose time ran out by `now`: marked failed ("expired"), and returned.
    public func expire(now: Int64) throws(SQLiteError) -> [DirectMessage] {
        let due = try db.query("SELECT id FROM direct_messages WHERE state IN (0, 3) AND expires_at <= ? LIMIT 1000", [.int(now)]) { $0.int(0) }
        var failed: [DirectMessage] = []
        for id in due where try db.run("UPDATE direct_messages SET state = 2, reason = 'expired before it could be delivered' WHERE id = ?", [.int(id)]) > 0 {
            failed += try db.query("SELECT \(Self.directColumns) FROM direct_messages WHERE id = ?", [.int(id)], Self.direct)
        }
        return failed
    }

    /// Direct texts between two identities, newest first (a chat's history).
    public func directMessages(between a: String, and b: String, before: Int64? = nil, limit: Int) throws(SQLiteError) -> [DirectMessage] {
        try db.query("""
            SELECT \(Self.directColumns) FROM direct_messages
            WHERE ((sender = ? AND recipient = ?) OR (sender = ? AND recipient = ?)) AND id < ? ORDER BY id DESC LIMIT ?
            """, [.text(a), .text(b), .text(b), .text(a), .int(before ?? .max), .int(Int64(max(0, limit)))], Self.direct)
    }

    // MARK: Chats

    private static func pair(_ a: String, _ b: String) -> (String, String) { a < b ? (a, b) : (b, a) }

    /// The chat between `a` and `b`, if either ever wrote.
    public func chat(_ a: String, _ b: String) throws(SQLiteError) -> Chat? {
        let (low, high) = Self.pair(a, b)
        return try db.query("SELECT requester, state FROM chats WHERE low = ? AND high = ?", [.text(low), .text(high)]) { r in
            let requester = r.text(0)
            return Chat(requester: requester, recipient: requester == low ? high : low, state: ChatState(rawValue: r.int(1)) ?? .declined)
        }.first
    }

    /// Sets where the chat between `requester` and `recipient` stands.
    public func setChat(requester: String, recipient: String, state: ChatState, at: Int64) throws(SQLiteError) {
        let (low, high) = Self.pair(requester, recipient)
        try db.run("""
            INSERT INTO chats(low, high, requester, state, at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(low, high) DO UPDATE SET requester = excluded.requester, state = excluded.state, at = excluded.at
            """, [.text(low), .text(high), .text(requester), .int(state.rawValue), .int(at)])
    }

    /// Every chat (the relay loads them at start: the core decides from them without waiting for the disk).
    public func allChats() throws(SQLiteError) -> [Chat] {
        try db.query("SELECT low, high, requester, state FROM chats") { r in
            let low = r.text(0), high = r.text(1), requester = r.text(2)
            return Chat(requester: requester, recipient: requester == low ? high : low, state: ChatState(rawValue: r.int(3)) ?? .declined)
        }
    }
}

/// The SQLite file as the store's archive: one relay writes it, so a waiting text needs no claim (it stays waiting
/// until marked delivered) and the chats change only through this relay.
extension SQLiteTextArchive: TextArchive {
    /// `waiting`: nothing else delivers from this file.
    public func claimWaiting(for identity: String, from: String?, limit: Int) throws(SQLiteError) -> [DirectMessage] {
        try waiting(for: identity, from: from, limit: limit)
    }

    /// Nothing to do: a text is waiting until it is marked delivered.
    public func returnUndelivered(_ ids: [Int64]) {}

    /// nil: the chats change only through this relay.
    public func chatsVersion() -> Int64? { nil }

    /// `BEGIN IMMEDIATE` … `COMMIT`, rolled back when `body` throws.
    public func transaction(_ body: () throws -> Void) throws {
        try db.execute("BEGIN IMMEDIATE")
        do {
            try body()
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    public var rollsBack: Bool { true }
}
