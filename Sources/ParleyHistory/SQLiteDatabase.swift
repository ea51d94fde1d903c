import CSQLite

/// An SQLite error: the call that failed, SQLite's code and message.
public struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was being done.
    public var operation: String
    /// SQLite's (extended) result code.
    public var code: Int32
    /// SQLite's message.
    public var message: String
    /// The database file is locked by another process past the busy timeout.
    public var isBusy: Bool { code & 0xFF == SQLITE_BUSY || code & 0xFF == SQLITE_LOCKED }
    /// The disk is full.
    public var isFull: Bool { code & 0xFF == SQLITE_FULL }
    /// The file is not a database, or it is damaged.
    public var isCorrupt: Bool { code & 0xFF == SQLITE_CORRUPT || code & 0xFF == SQLITE_NOTADB }
    public var description: String { "\(operation): \(message) (SQLite \(code))" }
    /// An error.
    public init(operation: String, code: Int32, message: String) {
        self.operation = operation
        self.code = code
        self.message = message
    }
}

/// One connection to an SQLite database file (libsqlite3, Debian's): prepared statements with bound values, one
/// thread at a time (the caller's lock or thread says which). Opened in WAL mode, so one writer and readers on other
/// connections go on together, with `synchronous=FULL`: a committed transaction survives a crash and a power loss.
public final class SQLiteDatabase {
    // Invariant: used by one thread at a time (the owner serialises).
    private var handle: OpaquePointer?
    /// The file.
    public let path: String

    /// Opens (making it when missing, mode 0600 under the owner's umask) and checks the file: an unreadable or damaged
    /// one throws, naming it. `busyTimeoutMilliseconds`: how long a statement waits for another connection's lock.
    public init(path: String, readOnly: Bool = false, busyTimeoutMilliseconds: Int32 = 2_000) throws(SQLiteError) {
        self.path = path
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, nil)
        handle = db
        guard rc == SQLITE_OK else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(db)
            handle = nil
            throw SQLiteError(operation: "open \(path)", code: rc, message: message)
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        if !readOnly {
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=FULL")
        }
        // A damaged file says so now, not at the first query that touches the damage.
        let check = try query("PRAGMA quick_check") { $0.text(0) }
        guard check == ["ok"] else {
            throw SQLiteError(operation: "check \(path)", code: SQLITE_CORRUPT, message: check.prefix(3).joined(separator: "; "))
        }
    }

    deinit { sqlite3_close_v2(handle) }

    private func error(_ operation: String, _ rc: Int32) -> SQLiteError {
        SQLiteError(operation: "\(path): \(operation)", code: rc, message: handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed")
    }

    /// Runs statements that return no rows (schema, pragmas); `sql` may hold several.
    public func execute(_ sql: String) throws(SQLiteError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        // journal_mode returns a row; sqlite3_exec takes it without a callback.
        guard rc == SQLITE_OK else { throw error(String(sql.prefix(60)), rc) }
    }

    /// A value bound to a `?` of a statement.
    public enum Value: Equatable, Sendable {
        case int(Int64), text(String), null
    }

    /// One row of a result, read by column index.
    public struct Row {
        let statement: OpaquePointer
        /// The column as an integer (0 for NULL).
        public func int(_ i: Int32) -> Int64 { sqlite3_column_int64(statement, i) }
        /// The column as text ("" for NULL).
        public func text(_ i: Int32) -> String {
            guard let p = sqlite3_column_text(statement, i) else { return "" }
            return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(statement, i))), as: UTF8.self)
        }
        /// Whether the column is NULL.
        public func isNull(_ i: Int32) -> Bool { sqlite3_column_type(statement, i) == SQLITE_NULL }
    }

    private func prepare(_ sql: String, _ values: [Value]) throws(SQLiteError) -> OpaquePointer {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw error("prepare \(sql.prefix(60))", rc) }
        for (k, v) in values.enumerated() {
            let i = Int32(k + 1)
            let bound: Int32
            switch v {
            case .int(let n): bound = sqlite3_bind_int64(statement, i, n)
            case .text(let s): bound = parley_sqlite3_bind_text(statement, i, s, -1)
            case .null: bound = sqlite3_bind_null(statement, i)
            }
            guard bound == SQLITE_OK else { sqlite3_finalize(statement); throw error("bind \(sql.prefix(60))", bound) }
        }
        return statement
    }

    /// Runs one statement with `values` bound to its `?`s; returns the rows changed.
    @discardableResult
    public func run(_ sql: String, _ values: [Value] = []) throws(SQLiteError) -> Int {
        let statement = try prepare(sql, values)
        defer { sqlite3_finalize(statement) }
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw error(String(sql.prefix(60)), rc) }
        return Int(sqlite3_changes(handle))
    }

    /// Runs a query and maps each row.
    public func query<T>(_ sql: String, _ values: [Value] = [], _ map: (Row) -> T) throws(SQLiteError) -> [T] {
        let statement = try prepare(sql, values)
        defer { sqlite3_finalize(statement) }
        var out: [T] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return out }
            guard rc == SQLITE_ROW else { throw error(String(sql.prefix(60)), rc) }
            out.append(map(Row(statement: statement)))
        }
    }

    /// The rowid of the last insert on this connection.
    public var lastInsertID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Runs `body` in one transaction (`BEGIN IMMEDIATE`): committed if it returns, rolled back if it throws.
    public func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }
}
