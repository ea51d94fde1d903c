import ParleyCluster

/// Texts kept in the cluster's Redis (`RedisTextLayout`), so that every node of a cluster reads the same history,
/// delivers the texts waiting for an identity wherever it comes online, and decides by the same chats.
///
/// Several nodes write at once. A waiting (or held) text belongs to whoever takes it out of its waiting set: `ZREM`
/// answers 1 to one caller only, so two nodes never deliver, release, fail or expire the same text twice. A text
/// claimed for delivery is noted in `delivering` until it is marked delivered or handed back; a node that dies in
/// between leaves it there, and the next sweep (`expire`) puts it back after `RedisTextLayout.claimLease`.
///
/// One connection, blocking (hiredis, 500 ms timeouts), owned by one thread. When Redis cannot be reached every call
/// fails at once with `ArchiveError(unreachable: true)`; the archive connects again at the first call a second later.
/// A value read back that the relay could not have written (damaged, or written by someone else: its MAC does not
/// verify, `RedisTextLayout`) is skipped with a log line, never shown; so is a direct text found in another
/// recipient's (or sender's) set than its own.
public final class RedisTextArchive: TextArchive {
    // Invariant: used by one thread at a time (the owner serialises).
    private let url: ClusterURL
    private let mac: ClusterMAC
    /// This node's id: a kept text's notices go to its sender only from the node it was sent on.
    public let nodeID: String
    private let clock: @Sendable () -> Int64
    private let log: @Sendable (String) -> Void
    private var redis: RedisConnection?
    /// When to try connecting again (Unix ms); before then every call fails fast.
    private var retryAt: Int64 = 0
    private var down = false

    /// An archive on the Redis at `url` for node `nodeID`, its texts' MACs made and checked with `mac` (the texts'
    /// key, `ClusterMAC.Purpose.texts`); `clock` reads Unix milliseconds, `log` takes a line. Nothing is connected
    /// until the first call.
    public init(url: ClusterURL, nodeID: String, mac: ClusterMAC, clock: @escaping @Sendable () -> Int64,
                log: @escaping @Sendable (String) -> Void) {
        self.url = url
        self.mac = mac
        self.nodeID = nodeID
        self.clock = clock
        self.log = log
    }

    // MARK: Connection

    private func connection() throws(ArchiveError) -> RedisConnection {
        if let redis { return redis }
        guard clock() >= retryAt else { throw ArchiveError(unreachable: true, "Redis at \(url) is unreachable") }
        do {
            let c = try RedisConnection(url: url)
            redis = c
            if down { log("message store: Redis at \(url) is back") }
            down = false
            return c
        } catch {
            retryAt = clock() + 1_000
            if !down { log("message store: \(error.description); texts fail until it is back (trying every second)") }
            down = true
            throw ArchiveError(unreachable: true, error.description)
        }
    }

    /// The connection failed mid-command: drop it, and connect again at the next call.
    private func lost(_ error: ClusterError) -> ArchiveError {
        redis = nil
        retryAt = clock()
        if !down { log("message store: lost Redis at \(url) (\(error.description))") }
        down = true
        return ArchiveError(unreachable: true, error.description)
    }

    private func command(_ words: [String]) throws(ArchiveError) -> RedisReply {
        let reply: RedisReply
        do { reply = try connection().command(words) } catch let e as ArchiveError { throw e } catch { throw lost(error as! ClusterError) }
        if case .error(let why) = reply { throw ArchiveError(unreachable: false, "Redis refused \(words[0]): \(why)") }
        return reply
    }

    private func pipeline(_ commands: [[String]]) throws(ArchiveError) -> [RedisReply] {
        guard !commands.isEmpty else { return [] }
        let replies: [RedisReply]
        do { replies = try connection().pipeline(commands) } catch let e as ArchiveError { throw e } catch { throw lost(error as! ClusterError) }
        for (c, reply) in zip(commands, replies) {
            if case .error(let why) = reply { throw ArchiveError(unreachable: false, "Redis refused \(c[0]): \(why)") }
            // A transaction's commands answer `QUEUED`; EXEC answers theirs, or nil when it was aborted.
            if c == ["EXEC"], reply == .null { throw ArchiveError(unreachable: false, "Redis aborted a transaction") }
        }
        return replies
    }

    private func nextID() throws(ArchiveError) -> Int64 {
        guard case .integer(let id) = try command(["INCR", RedisTextLayout.idKey]), id > 0 else {
            throw ArchiveError(unreachable: false, "Redis: INCR \(RedisTextLayout.idKey) did not answer a number")
        }
        return id
    }

    /// The direct texts `ids` (in order), each read back whole; a missing one is left out, an unreadable one too
    /// (logged). The sender's connection is cleared for a text sent on another node.
    private func read(_ ids: [Int64]) throws(ArchiveError) -> [SQLiteTextArchive.DirectMessage] {
        let replies = try pipeline(ids.map { ["HGETALL", RedisTextLayout.textKey($0)] })
        var out: [SQLiteTextArchive.DirectMessage] = []
        for (id, reply) in zip(ids, replies) {
            guard case .array(let items) = reply, !items.isEmpty else { continue }
            guard let t = RedisTextLayout.directText(id: id, hash: items.map { $0.text ?? "" }, mac: mac) else {
                log("message store: skipped direct text \(id) in Redis: not a value a node of this cluster wrote")
                continue
            }
            var m = t.message
            if t.node != nodeID { m.senderConnection = 0 }
            out.append(m)
        }
        return out
    }

    // MARK: Room texts

    public func addRoomText(room: String, identity: String, name: String, text: String, at: Int64, attachments: [String]) throws(ArchiveError) -> Int64 {
        let id = try nextID()
        _ = try pipeline(RedisTextLayout.addRoomText(.init(id: id, room: room, identity: identity, name: name, text: text, at: at,
                                                           attachments: attachments), mac: mac))
        return id
    }

    public func roomMessages(room: String, before: Int64?, limit: Int) throws(ArchiveError) -> [SQLiteTextArchive.RoomMessage] {
        guard limit > 0 else { return [] }
        let reply = try command(["ZREVRANGEBYSCORE", RedisTextLayout.roomKey(room), before.map { "(" + String($0) } ?? "+inf", "-inf",
                                 "LIMIT", "0", String(limit)])
        guard case .array(let members) = reply else { return [] }
        return members.compactMap { member in
            guard let m = member.text.flatMap({ RedisTextLayout.roomText(member: $0, room: room, mac: mac) }) else {
                log("message store: skipped a text of room \(room) in Redis: not a value a node of this cluster wrote")
                return nil
            }
            return m
        }
    }

    // MARK: Direct texts

    public func addDirectText(from: String, to: String, text: String, at: Int64, state: SQLiteTextArchive.DirectState, expiresAt: Int64,
                              senderConnection: UInt32, senderMessageID: UInt32, attachments: [String]) throws(ArchiveError) -> Int64 {
        let id = try nextID()
        let m = SQLiteTextArchive.DirectMessage(id: id, from: from, to: to, text: text, at: at, state: state, senderConnection: senderConnection,
                                             senderMessageID: senderMessageID, attachments: attachments)
        _ = try pipeline(RedisTextLayout.addDirectText(.init(message: m, expiresAt: expiresAt, node: nodeID), mac: mac))
        return id
    }

    public func claimWaiting(for identity: String, from: String?, limit: Int) throws(ArchiveError) -> [SQLiteTextArchive.DirectMessage] {
        let key = RedisTextLayout.waitingKey(identity)
        var candidates = RedisTextLayout.ids(try command(["ZRANGE", key, "0", from == nil ? String(max(0, limit) - 1) : "-1"]))
        if let from {
            // One sender's only: their senders read first (a recipient has at most a thousand waiting).
            let senders = try pipeline(candidates.map { ["HGET", RedisTextLayout.textKey($0), "from"] })
            candidates = zip(candidates, senders).filter { $0.1.text == from }.map(\.0).prefix(max(0, limit)).map { $0 }
        }
        let mine = RedisTextLayout.claimed(candidates, replies: try pipeline(candidates.map { ["ZREM", key, String($0)] }))
        guard !mine.isEmpty else { return [] }
        let now = String(clock())
        _ = try pipeline([["ZADD", RedisTextLayout.deliveringKey] + mine.flatMap { [now, String($0)] }])
        let texts = try read(mine).filter { m in
            guard m.to == identity else {  // an id planted in another recipient's set
                log("message store: skipped direct text \(m.id) in Redis: found waiting for another recipient than its own")
                return false
            }
            return true
        }
        // Claimed but unreadable (gone, damaged, or not this recipient's): nothing to deliver, nothing to hand back.
        let lost = Set(mine).subtracting(texts.map(\.id))
        if !lost.isEmpty { _ = try pipeline(lost.map { ["ZREM", RedisTextLayout.deliveringKey, String($0)] }) }
        return texts.filter { $0.state == .stored }
    }

    public func waitingCount(for identity: String) throws(ArchiveError) -> Int {
        try count(RedisTextLayout.pendingToKey(identity))
    }

    public func waitingCount(from identity: String) throws(ArchiveError) -> Int {
        try count(RedisTextLayout.pendingFromKey(identity))
    }

    /// Members of a pending set that have not expired (expired ones are dropped on the way).
    private func count(_ key: String) throws(ArchiveError) -> Int {
        let replies = try pipeline([["ZREMRANGEBYSCORE", key, "-inf", String(clock() - 1)], ["ZCARD", key]])
        guard case .integer(let n) = replies[1] else { return 0 }
        return Int(n)
    }

    public func markDelivered(_ ids: [Int64], at: Int64) throws(ArchiveError) {
        for m in try read(ids) where m.state == .stored {
            _ = try pipeline(RedisTextLayout.finish(m, state: .delivered, at: at, mac: mac))
        }
    }

    public func returnUndelivered(_ ids: [Int64]) throws(ArchiveError) {
        let mine = RedisTextLayout.claimed(ids, replies: try pipeline(ids.map { ["ZREM", RedisTextLayout.deliveringKey, String($0)] }))
        let back = try read(mine).filter { $0.state == .stored }
        _ = try pipeline(back.map { ["ZADD", RedisTextLayout.waitingKey($0.to), String($0.id), String($0.id)] })
    }

    /// The texts from `from` held for `to`, claimed.
    private func claimHeld(from: String, to: String) throws(ArchiveError) -> [SQLiteTextArchive.DirectMessage] {
        let key = RedisTextLayout.heldKey(from: from, to: to)
        let held = RedisTextLayout.ids(try command(["ZRANGE", key, "0", "-1"]))
        return try read(RedisTextLayout.claimed(held, replies: try pipeline(held.map { ["ZREM", key, String($0)] }))).filter { m in
            guard m.from == from, m.to == to else {
                log("message store: skipped direct text \(m.id) in Redis: found held for another pair than its own")
                return false
            }
            return true
        }
    }

    public func release(from: String, to: String) throws(ArchiveError) {
        let texts = try claimHeld(from: from, to: to).filter { $0.state == .held }
        _ = try pipeline(texts.flatMap { m in
            [["MULTI"], ["HSET", RedisTextLayout.textKey(m.id)] + RedisTextLayout.stateFields(id: m.id, state: .stored, reason: m.reason, mac: mac),
             ["ZADD", RedisTextLayout.waitingKey(m.to), String(m.id), String(m.id)], ["EXEC"]]
        })
    }

    public func failHeld(from: String, to: String, reason: String) throws(ArchiveError) -> [SQLiteTextArchive.DirectMessage] {
        let texts = try claimHeld(from: from, to: to).filter { $0.state == .held }
        let now = clock()
        _ = try pipeline(texts.flatMap { RedisTextLayout.finish($0, state: .failed, reason: reason, at: now, mac: mac) })
        return texts.map { var m = $0; m.state = .failed; m.reason = reason; return m }
    }

    /// Claims older than the lease wait again; then texts whose time ran out are claimed and failed.
    public func expire(now: Int64) throws(ArchiveError) -> [SQLiteTextArchive.DirectMessage] {
        let stale = RedisTextLayout.ids(try command(["ZRANGEBYSCORE", RedisTextLayout.deliveringKey, "-inf", String(now - RedisTextLayout.claimLease),
                                                     "LIMIT", "0", "1000"]))
        try returnUndelivered(stale)
        let due = RedisTextLayout.ids(try command(["ZRANGEBYSCORE", RedisTextLayout.expiryKey, "-inf", String(now), "LIMIT", "0", "1000"]))
        let reason = "expired before it could be delivered"
        var failed: [SQLiteTextArchive.DirectMessage] = []
        let texts = try read(due)
        // Gone or unreadable: out of the expiry set, so the sweep does not meet it again.
        let unreadable = Set(due).subtracting(texts.map(\.id))
        _ = try pipeline(unreadable.map { ["ZREM", RedisTextLayout.expiryKey, String($0)] })
        for m in texts {
            switch m.state {
            case .stored, .held:
                // Taken out of its waiting (or held) set: ours to fail. Otherwise another node has it (delivering it,
                // or expiring it); a delivery handed back waits again and meets the next sweep.
                let key = m.state == .stored ? RedisTextLayout.waitingKey(m.to) : RedisTextLayout.heldKey(from: m.from, to: m.to)
                guard try command(["ZREM", key, String(m.id)]) == .integer(1) else { continue }
                _ = try pipeline(RedisTextLayout.finish(m, state: .failed, reason: reason, at: now, mac: mac))
                var f = m
                f.state = .failed
                f.reason = reason
                failed.append(f)
            case .delivered, .failed:
                _ = try command(["ZREM", RedisTextLayout.expiryKey, String(m.id)])
            }
        }
        return failed
    }

    // MARK: Chats

    public func setChat(requester: String, recipient: String, state: SQLiteTextArchive.ChatState, at: Int64) throws(ArchiveError) {
        _ = try pipeline(RedisTextLayout.setChat(.init(requester: requester, recipient: recipient, state: state), at: at,
                                                 seed: UInt64.random(in: 1..<(1 << 48)), mac: mac))
    }

    public func allChats() throws(ArchiveError) -> [SQLiteTextArchive.Chat] {
        guard case .array(let items) = try command(["HGETALL", RedisTextLayout.chatsKey]) else { return [] }
        var chats: [SQLiteTextArchive.Chat] = []
        for k in stride(from: 0, to: items.count - 1, by: 2) {
            let field = items[k].text ?? ""
            guard let c = items[k + 1].text.flatMap({ RedisTextLayout.chat(field: field, value: $0, mac: mac) }) else {
                log("message store: skipped a chat in Redis: not a value a node of this cluster wrote")
                continue
            }
            chats.append(c)
        }
        return chats
    }

    public func chatsVersion() throws(ArchiveError) -> Int64? {
        let reply = try command(["GET", RedisTextLayout.chatsVersionKey])
        return reply.text.flatMap(RedisTextLayout.number) ?? 0
    }

    /// `body` as it is: each call is one transaction of its own (MULTI/EXEC), none is undone.
    public func transaction(_ body: () throws -> Void) throws { try body() }

    public var rollsBack: Bool { false }
}
