import Foundation
import Glibc
import ParleyCluster
import ParleyHistory
import Synchronization
import Testing

/// A `redis-server` of one test's own on a free loopback port, nothing saved (Debian's, which `make test` installs).
final class ScratchRedis {
    let port: Int
    private var process: Process?

    init() throws {
        for _ in 0..<5 {
            let p = Int.random(in: 20_000...60_000)
            let process = try Self.start(port: p)
            for _ in 0..<100 {
                if (try? RedisConnection(url: ClusterURL("redis://127.0.0.1:\(p)")!)) != nil {
                    self.port = p
                    self.process = process
                    return
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            Self.kill(process)
        }
        throw ArchiveError(unreachable: true, "redis-server did not start")
    }

    /// `redis-server` on `port`, started.
    static func start(port: Int) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    func stop() {
        if let process { Self.kill(process) }
        process = nil
    }

    /// SIGKILL (a SIGTERM may find Redis's handler blocked in a test process) and the exit collected.
    static func kill(_ process: Process) {
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// A clock the test moves (Unix ms).
final class TestClock: Sendable {
    private let ms = Atomic<Int64>(1_000_000)
    var now: Int64 { ms.load(ordering: .relaxed) }
    func advance(_ by: Int64) { ms.add(by, ordering: .relaxed) }
}

/// Lines an archive logged.
final class Lines: Sendable {
    let list = Mutex<[String]>([])
    var all: [String] { list.withLock { $0 } }
    func add(_ line: String) { list.withLock { $0.append(line) } }
}

/// The Redis archive on a real Redis: the same texts and chats as the SQLite file keeps, two nodes sharing them
/// (each waiting text claimed by one), damaged values skipped, and Redis going away.
@Suite("Texts in Redis: one archive every node of a cluster reads", .serialized)
struct RedisTextArchiveTests {
    let clock = TestClock()

    func archive(_ redis: ScratchRedis, node: String = "node-a", log: Lines = Lines()) -> RedisTextArchive {
        let clock = self.clock
        return RedisTextArchive(url: ClusterURL("redis://127.0.0.1:\(redis.port)")!, nodeID: node, mac: RedisTextLayoutTests.mac,
                                clock: { clock.now }, log: { log.add($0) })
    }

    @Test("room texts page newest first, with their images; the newest are kept per room")
    func roomTexts() throws {
        let redis = try ScratchRedis()
        let a = archive(redis)
        for k in 1...25 {
            try a.addRoomText(room: k % 5 == 0 ? "other" : "lobby", identity: "alice", name: "Alice", text: "text \(k)", at: Int64(k),
                              attachments: k == 24 ? [RedisTextLayoutTests.image] : [])
        }
        let first = try a.roomMessages(room: "lobby", before: nil, limit: 10)
        #expect(first.map(\.text) == [24, 23, 22, 21, 19, 18, 17, 16, 14, 13].map { "text \($0)" })
        #expect(first[0].attachments == [RedisTextLayoutTests.image] && first[0].room == "lobby" && first[0].at == 24)
        let next = try a.roomMessages(room: "lobby", before: first.last!.id, limit: 10)
        #expect(next.map(\.text) == [12, 11, 9, 8, 7, 6, 4, 3, 2, 1].map { "text \($0)" })
        #expect(try a.roomMessages(room: "lobby", before: next.last!.id, limit: 10).isEmpty)
        #expect(try a.roomMessages(room: "nobody", before: nil, limit: 10).isEmpty)
    }

    @Test("a text waiting for bob is claimed by one node only; the other gets nothing, and neither gets it again once delivered")
    func claimedOnce() throws {
        let redis = try ScratchRedis()
        let a = archive(redis, node: "node-a"), b = archive(redis, node: "node-b")
        let one = try a.addDirectText(from: "alice", to: "bob", text: "1", at: 10, state: .stored, expiresAt: 2_000_000, senderConnection: 5,
                                      senderMessageID: 1, attachments: [])
        let two = try a.addDirectText(from: "carol", to: "bob", text: "2", at: 11, state: .stored, expiresAt: 2_000_000, senderConnection: 6,
                                      senderMessageID: 2, attachments: [RedisTextLayoutTests.image])
        #expect(try b.waitingCount(for: "bob") == 2 && b.waitingCount(from: "alice") == 1)
        let onB = try b.claimWaiting(for: "bob", from: "carol", limit: 500)
        #expect(onB.map(\.id) == [two] && onB[0].attachments == [RedisTextLayoutTests.image])
        #expect(onB[0].senderConnection == 0 && onB[0].senderMessageID == 2)  // sent on node-a: no notice from node-b
        #expect(try a.claimWaiting(for: "bob", from: "carol", limit: 500).isEmpty)
        let onA = try a.claimWaiting(for: "bob", from: nil, limit: 500)
        #expect(onA.map(\.id) == [one] && onA[0].senderConnection == 5 && onA[0].at == 10)
        #expect(try b.claimWaiting(for: "bob", from: nil, limit: 500).isEmpty)
        try a.markDelivered([one], at: 20)
        try b.markDelivered([two], at: 21)
        try b.markDelivered([two], at: 22)  // twice: nothing more
        #expect(try a.waitingCount(for: "bob") == 0 && a.waitingCount(from: "carol") == 0)
        #expect(try a.expire(now: 3_000_000).isEmpty)  // delivered texts never expire
    }

    @Test("a claimed text no device took waits again: handed back at once, or after the lease when its node died")
    func handedBack() throws {
        let redis = try ScratchRedis()
        let a = archive(redis, node: "node-a"), b = archive(redis, node: "node-b")
        let id = try a.addDirectText(from: "alice", to: "bob", text: "x", at: 10, state: .stored, expiresAt: 9_000_000, senderConnection: 5,
                                     senderMessageID: 1, attachments: [])
        #expect(try a.claimWaiting(for: "bob", from: nil, limit: 500).map(\.id) == [id])
        try a.returnUndelivered([id])
        try b.returnUndelivered([id])  // not b's: nothing
        #expect(try b.claimWaiting(for: "bob", from: nil, limit: 500).map(\.id) == [id])
        // b dies holding it: before the lease nobody has it, after it the next sweep puts it back.
        #expect(try a.expire(now: clock.now + RedisTextLayout.claimLease - 1).isEmpty)
        #expect(try a.claimWaiting(for: "bob", from: nil, limit: 500).isEmpty)
        #expect(try a.expire(now: clock.now + RedisTextLayout.claimLease).isEmpty)
        #expect(try a.claimWaiting(for: "bob", from: nil, limit: 500).map(\.id) == [id])
    }

    @Test("held texts wait for the answer: accepted they wait like any other, declined they fail once; time runs out for the rest")
    func heldReleasedFailedExpired() throws {
        let redis = try ScratchRedis()
        let a = archive(redis, node: "node-a"), b = archive(redis, node: "node-b")
        func add(_ from: String, _ text: String, _ state: SQLiteTextArchive.DirectState, expires: Int64 = 9_000_000) throws -> Int64 {
            try a.addDirectText(from: from, to: "bob", text: text, at: 1, state: state, expiresAt: expires, senderConnection: 1, senderMessageID: 1,
                                attachments: [])
        }
        let held = try add("alice", "held", .held)
        let declined = try add("dave", "declined", .held)
        let old = try add("erin", "old", .stored, expires: 50)
        let oldHeld = try add("frank", "old held", .held, expires: 50)
        #expect(try b.claimWaiting(for: "bob", from: nil, limit: 500).map(\.id) == [old])  // held ones do not wait yet
        try b.returnUndelivered([old])
        #expect(try b.waitingCount(for: "bob") == 2)  // the two that expire at 50 are not counted at the clock's time

        try b.release(from: "alice", to: "bob")
        try a.release(from: "alice", to: "bob")  // released already: nothing
        #expect(try a.claimWaiting(for: "bob", from: "alice", limit: 500).map(\.id) == [held])
        let failed = try b.failHeld(from: "dave", to: "bob", reason: "bob declined your chat request")
        #expect(failed.map(\.id) == [declined] && failed[0].state == .failed && failed[0].reason == "bob declined your chat request")
        #expect(try a.failHeld(from: "dave", to: "bob", reason: "again").isEmpty)

        let expiredA = try a.expire(now: 60), expiredB = try b.expire(now: 60)
        #expect(Set((expiredA + expiredB).map(\.id)) == [old, oldHeld] && expiredA.count + expiredB.count == 2)
        #expect((expiredA + expiredB).allSatisfy { $0.state == .failed && $0.reason == "expired before it could be delivered" })
        #expect(try a.claimWaiting(for: "bob", from: nil, limit: 500).isEmpty)
    }

    @Test("chats: one per pair whoever asked, read back by every node, each change moving the version")
    func chats() throws {
        let redis = try ScratchRedis()
        let a = archive(redis, node: "node-a"), b = archive(redis, node: "node-b")
        #expect(try b.chatsVersion() == 0 && b.allChats().isEmpty)
        try a.setChat(requester: "bob", recipient: "alice", state: .requested, at: 1)
        let v1 = try b.chatsVersion()
        #expect(try b.allChats() == [.init(requester: "bob", recipient: "alice", state: .requested)])
        try b.setChat(requester: "bob", recipient: "alice", state: .declined, at: 2)
        #expect(try a.chatsVersion() != v1)
        #expect(try a.allChats() == [.init(requester: "bob", recipient: "alice", state: .declined)])
    }

    @Test("a damaged or foreign value is skipped with a log line, never a crash")
    func hostileValues() throws {
        let redis = try ScratchRedis()
        let lines = Lines()
        let a = archive(redis, log: lines)
        let raw = try RedisConnection(url: ClusterURL("redis://127.0.0.1:\(redis.port)")!)
        try a.addRoomText(room: "r", identity: "ann", name: "", text: "good", at: 1, attachments: [])
        _ = try raw.command(["ZADD", RedisTextLayout.roomKey("r"), "99", "999999:oops"])
        _ = try raw.command(["ZADD", RedisTextLayout.roomKey("r"), "100", String(repeating: "\u{1}", count: 5)])
        #expect(try a.roomMessages(room: "r", before: nil, limit: 10).map(\.text) == ["good"])
        _ = try raw.command(["HSET", RedisTextLayout.chatsKey, "garbage", "3:abc"])
        #expect(try a.allChats().isEmpty)
        // A waiting text whose hash was overwritten: claimed, skipped, not handed out again.
        let id = try a.addDirectText(from: "alice", to: "bob", text: "x", at: 1, state: .stored, expiresAt: 50, senderConnection: 1,
                                     senderMessageID: 1, attachments: [])
        _ = try raw.command(["HSET", RedisTextLayout.textKey(id), "state", "7"])
        #expect(try a.claimWaiting(for: "bob", from: nil, limit: 500).isEmpty)
        #expect(try a.expire(now: 60).isEmpty)
        _ = try raw.command(["SET", RedisTextLayout.idKey, "not a number"])
        #expect(throws: ArchiveError.self) { try a.addRoomText(room: "r", identity: "ann", name: "", text: "t", at: 2, attachments: []) }
        #expect(lines.all.filter { $0.contains("skipped") }.count >= 5, "\(lines.all)")
    }

    @Test("issue 33: texts and chats written straight into Redis are never listed or delivered; a genuine text's id planted in another recipient's set reaches only its own")
    func plantedTexts() throws {
        let redis = try ScratchRedis()
        let lines = Lines()
        let a = archive(redis, log: lines)
        let raw = try RedisConnection(url: ClusterURL("redis://127.0.0.1:\(redis.port)")!)
        // A room text "from ceo", packed as the relay packs them (with and without a made-up MAC).
        let fields = ["999999", "ceo", "CEO", "wire the money", "1", ""]
        _ = try raw.command(["ZADD", RedisTextLayout.roomKey("board"), "999999", RedisTextLayout.pack(fields)])
        _ = try raw.command(["ZADD", RedisTextLayout.roomKey("board"), "999998", RedisTextLayout.pack(fields + [String(repeating: "A", count: 43)])])
        try a.addRoomText(room: "board", identity: "alice", name: "", text: "genuine", at: 2, attachments: [])
        #expect(try a.roomMessages(room: "board", before: nil, limit: 10).map(\.text) == ["genuine"])
        // A direct text "from ceo" waiting for bob, and a genuine one to bob whose id is also planted in mallory's set.
        _ = try raw.command(["HSET", RedisTextLayout.textKey(888_888), "from", "ceo", "to", "bob", "body", "forged direct text", "at", "1",
                             "state", "0", "expires_at", "50", "conn", "0", "mid", "0", "node", "evil", "reason", "", "attachments", ""])
        _ = try raw.command(["ZADD", RedisTextLayout.waitingKey("bob"), "888888", "888888"])
        let id = try a.addDirectText(from: "alice", to: "bob", text: "for bob only", at: 1, state: .stored, expiresAt: 50, senderConnection: 1,
                                     senderMessageID: 1, attachments: [])
        _ = try raw.command(["ZADD", RedisTextLayout.waitingKey("mallory"), String(id), String(id)])
        #expect(try a.claimWaiting(for: "mallory", from: nil, limit: 10).isEmpty)
        #expect(try a.claimWaiting(for: "bob", from: nil, limit: 10).map(\.text) == ["for bob only"])
        // A chat accepted for bob by nobody: the spam brake holds.
        _ = try raw.command(["HSET", RedisTextLayout.chatsKey, RedisTextLayout.chatField("bob", "alice"), RedisTextLayout.pack(["bob", "alice", "1", "1"])])
        #expect(try a.allChats().isEmpty)
        #expect(lines.all.filter { $0.contains("skipped") }.count >= 5, "\(lines.all)")
    }

    @Test("Redis away: every call fails at once as unreachable; back, the archive connects again by itself")
    func unreachable() throws {
        let redis = try ScratchRedis()
        let lines = Lines()
        let a = archive(redis, log: lines)
        try a.addRoomText(room: "r", identity: "ann", name: "", text: "before", at: 1, attachments: [])
        let port = redis.port
        redis.stop()
        #expect { try a.addRoomText(room: "r", identity: "ann", name: "", text: "lost", at: 2, attachments: []) } throws: {
            StoreFailure($0) == .unreachable && StoreFailure($0).reason == "the relay's message store is unreachable"
        }
        #expect { try a.chatsVersion() } throws: { StoreFailure($0) == .unreachable }
        // Back on the same port (nothing was saved): the next call a second later connects again.
        let again = try ScratchRedis.start(port: port)
        defer { ScratchRedis.kill(again) }
        clock.advance(1_000)
        var back = false
        for _ in 0..<100 where !back {
            back = (try? a.chatsVersion()) != nil
            if !back { Thread.sleep(forTimeInterval: 0.05); clock.advance(1_000) }
        }
        #expect(back)
        try a.addRoomText(room: "r", identity: "ann", name: "", text: "after", at: 3, attachments: [])
        #expect(try a.roomMessages(room: "r", before: nil, limit: 5).map(\.text) == ["after"])
        #expect(lines.all.contains { $0.contains("is back") }, "\(lines.all)")
    }
}
