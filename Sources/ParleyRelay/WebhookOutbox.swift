import ParleyHistory

/// The webhooks' durable outbox: one SQLite file (`<state_dir>/webhooks.db`, WAL, `synchronous=FULL`), a row per
/// event and receiver. An event is committed here before its first attempt, with its id: a retry, or a redelivery by
/// the next relay after a kill, sends the same id and the same body. Takes `now` (Unix ms) as a parameter and never
/// reads a clock; owned by one thread (the dispatcher's).
///
///     seq (order of storing) │ endpoint │ event_id │ type │ order_key │ created_ms │ body │ attempts │ next_ms
///
/// Only the oldest row of each (endpoint, order_key) is ever due — the head of that room's queue — so a room's events
/// reach a receiver in order, and a receiver that fails one room's head holds back that room only. Bounded per
/// receiver: beyond `capacity` rows for one receiver its oldest are dropped (counted in `dropped`), so a receiver that
/// is down for long costs the others nothing.
public final class WebhookOutbox {
    // Invariant: used only by the thread that owns it (the dispatcher's, or a test's).
    private let db: SQLiteDatabase
    /// How long an event is retried after it happened (ms); then dropped and counted (`expired`).
    public var retryWindow: Int64
    /// Rows kept at most for one receiver.
    public var capacity: Int
    /// The delay after `attempts` failed attempts, before jitter (ms): 1 s doubling, at most `maxBackoff`.
    public static func backoff(attempts: Int) -> Int64 {
        min(maxBackoff, 1_000 << Int64(min(max(attempts - 1, 0), 20)))
    }
    /// The longest wait between two attempts (10 minutes).
    public static let maxBackoff: Int64 = 600_000
    /// Draws the jitter: given a delay, a delay in its upper half (tests pass a fixed one).
    private let jitter: (Int64) -> Int64
    /// Rows now kept, by receiver.
    public private(set) var counts: [String: Int] = [:]
    /// Rows now kept.
    public var count: Int { counts.values.reduce(0, +) }
    /// Rows dropped because the outbox was full (oldest first).
    public private(set) var dropped: UInt64 = 0
    /// Rows dropped because their event was older than `retryWindow` when an attempt failed.
    public private(set) var expired: UInt64 = 0

    /// One event on its way to one receiver.
    public struct Delivery: Sendable, Equatable {
        /// The row.
        public var seq: Int64
        /// The receiver's URL.
        public var endpoint: String
        /// The event, as stored.
        public var event: WebhookEvent
        /// Attempts that failed so far.
        public var attempts: Int
    }

    /// What became of a failed attempt.
    public enum Retry: Equatable, Sendable {
        /// Tried again at this time (Unix ms).
        case at(Int64)
        /// Older than the retry window: dropped.
        case expired
    }

    /// Opens (or makes) the outbox at `path` (":memory:" keeps it in memory: nothing survives the process).
    public init(
        path: String, retryWindow: Int64 = 86_400_000, capacity: Int = 100_000,
        jitter: @escaping (Int64) -> Int64 = { $0 / 2 + Int64.random(in: 0...max(0, $0 / 2)) }
    ) throws(SQLiteError) {
        db = try SQLiteDatabase(path: path)
        self.retryWindow = retryWindow
        self.capacity = max(1, capacity)
        self.jitter = jitter
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS webhook_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, endpoint TEXT NOT NULL,
              event_id TEXT NOT NULL, type TEXT NOT NULL, order_key TEXT NOT NULL, created_ms INTEGER NOT NULL,
              body TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_ms INTEGER NOT NULL);
            CREATE INDEX IF NOT EXISTS webhook_outbox_order ON webhook_outbox (endpoint, order_key, seq);
            """)
        for (endpoint, n) in try db.query(
            "SELECT endpoint, COUNT(*) FROM webhook_outbox GROUP BY endpoint", [], { ($0.text(0), Int($0.int(1))) })
        {
            counts[endpoint] = n
        }
    }

    /// Stores `events` for every one of `endpoints` in one transaction (committed when this returns), each due at once;
    /// then drops each receiver's oldest rows beyond `capacity`. Returns how many were dropped.
    @discardableResult
    public func store(_ events: [WebhookEvent], for endpoints: [String]) throws(SQLiteError) -> Int {
        guard !events.isEmpty, !endpoints.isEmpty else { return 0 }
        let dropping = try db.transaction { () throws(SQLiteError) -> Int in
            for e in events {
                for endpoint in endpoints {
                    try db.run(
                        """
                        INSERT INTO webhook_outbox (endpoint, event_id, type, order_key, created_ms, body, next_ms)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                        [
                            .text(endpoint), .text(e.id), .text(e.type), .text(e.orderKey), .int(e.unixMilliseconds),
                            .text(e.body), .int(e.unixMilliseconds),
                        ])
                }
            }
            var dropping = 0
            for endpoint in endpoints {
                let over = counts[endpoint, default: 0] + events.count - capacity
                if over > 0 {
                    try db.run(
                        """
                        DELETE FROM webhook_outbox WHERE seq IN
                          (SELECT seq FROM webhook_outbox WHERE endpoint = ? ORDER BY seq LIMIT ?)
                        """, [.text(endpoint), .int(Int64(over))])
                }
                dropping += max(0, over)
            }
            return dropping
        }
        for endpoint in endpoints { counts[endpoint] = min(capacity, counts[endpoint, default: 0] + events.count) }
        dropped += UInt64(dropping)
        return dropping
    }

    /// The head of each of `endpoint`'s queues (one per order key) that is due at `now` and whose key is not in
    /// `busy` (an attempt of it is under way), oldest first, at most `limit`.
    public func due(endpoint: String, now: Int64, busy: Set<String> = [], limit: Int = 64) throws(SQLiteError)
        -> [Delivery]
    {
        let heads = try self.heads(endpoint: endpoint)
        return Array(
            heads.filter { $0.next <= now && !busy.contains($0.delivery.event.orderKey) }.prefix(limit).map(\.delivery))
    }

    /// When the earliest head of `endpoint`'s queues not in `busy` is due (Unix ms); nil when none waits.
    public func nextDue(endpoint: String, busy: Set<String> = []) throws(SQLiteError) -> Int64? {
        try heads(endpoint: endpoint).filter { !busy.contains($0.delivery.event.orderKey) }.map(\.next).min()
    }

    /// The head of each of `endpoint`'s queues (the oldest row of each order key), oldest first, and when it is due.
    public func heads(endpoint: String) throws(SQLiteError) -> [(delivery: Delivery, next: Int64)] {
        try db.query(
            """
            SELECT seq, event_id, type, order_key, created_ms, body, attempts, next_ms FROM webhook_outbox
            WHERE seq IN (SELECT MIN(seq) FROM webhook_outbox WHERE endpoint = ? GROUP BY order_key) ORDER BY seq
            """, [.text(endpoint)]
        ) { row in
            (
                Delivery(
                    seq: row.int(0), endpoint: endpoint,
                    event: WebhookEvent(
                        id: row.text(1), type: row.text(2), orderKey: row.text(3), unixMilliseconds: row.int(4),
                        body: row.text(5)),
                    attempts: Int(row.int(6))), row.int(7)
            )
        }
    }

    /// The receiver took it (a 2xx): the row is deleted, the next of its queue becomes the head.
    public func delivered(_ d: Delivery) throws(SQLiteError) {
        counts[d.endpoint, default: 0] -= try db.run("DELETE FROM webhook_outbox WHERE seq = ?", [.int(d.seq)])
    }

    /// An attempt failed at `now`: tried again after the backoff (with jitter), no later than the end of the retry
    /// window; an event already older than the window is dropped.
    @discardableResult
    public func failed(_ d: Delivery, now: Int64) throws(SQLiteError) -> Retry {
        let deadline = d.event.unixMilliseconds + retryWindow
        if now >= deadline {
            counts[d.endpoint, default: 0] -= try db.run("DELETE FROM webhook_outbox WHERE seq = ?", [.int(d.seq)])
            expired += 1
            return .expired
        }
        let attempts = d.attempts + 1
        let next = min(deadline, now + jitter(Self.backoff(attempts: attempts)))
        try db.run(
            "UPDATE webhook_outbox SET attempts = ?, next_ms = ? WHERE seq = ?",
            [.int(Int64(attempts)), .int(next), .int(d.seq)])
        return .at(next)
    }

    /// Runs `body` (deliveries and failures of one pass) in one transaction: one commit, one fsync, for all of them.
    public func batch(_ body: () throws(SQLiteError) -> Void) throws(SQLiteError) {
        try db.transaction(body)
    }

    /// Drops every row of a receiver no longer configured (a reload removed it); returns how many.
    @discardableResult
    public func forget(endpointsOtherThan kept: [String]) throws(SQLiteError) -> Int {
        let all = try db.query("SELECT DISTINCT endpoint FROM webhook_outbox") { $0.text(0) }
        var removed = 0
        for endpoint in all where !kept.contains(endpoint) {
            removed += try db.run("DELETE FROM webhook_outbox WHERE endpoint = ?", [.text(endpoint)])
            counts[endpoint] = nil
        }
        return removed
    }

    /// Rows waiting for `endpoint`.
    public func waiting(endpoint: String) throws(SQLiteError) -> Int {
        Int(
            try db.query("SELECT COUNT(*) FROM webhook_outbox WHERE endpoint = ?", [.text(endpoint)]) { $0.int(0) }
                .first ?? 0)
    }
}
