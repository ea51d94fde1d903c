import Foundation
import ParleyHistory
import Testing

/// The message history on a real SQLite file in a temporary folder.
struct SQLiteTextArchiveTests {
    let folder = NSTemporaryDirectory() + "parley-history-\(UInt32.random(in: 0...UInt32.max))"
    var path: String { folder + "/messages.db" }

    init() throws { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }

    @Test func roomTextsPageNewestFirst() throws {
        let h = try SQLiteTextArchive(path: path)
        for k in 1...25 { try h.addRoomText(room: k % 5 == 0 ? "other" : "lobby", identity: "alice", name: "Alice", text: "text \(k)", at: Int64(k)) }
        let first = try h.roomMessages(room: "lobby", limit: 10)
        #expect(first.map(\.text) == [24, 23, 22, 21, 19, 18, 17, 16, 14, 13].map { "text \($0)" })
        let next = try h.roomMessages(room: "lobby", before: first.last!.id, limit: 10)
        #expect(next.map(\.text) == [12, 11, 9, 8, 7, 6, 4, 3, 2, 1].map { "text \($0)" })
        #expect(try h.roomMessages(room: "lobby", before: next.last!.id, limit: 10).isEmpty)
        #expect(try h.roomMessages(room: "nobody", limit: 10).isEmpty)
    }

    @Test func textsAreKeptAcrossReopeningAndReadersSeeCommittedWrites() throws {
        do {
            let h = try SQLiteTextArchive(path: path)
            try h.addRoomText(room: "r", identity: "a", name: "", text: "kept: ünïcødé and 'quotes'; DROP TABLE x;--", at: 1)
            try h.addDirectText(from: "a", to: "b", text: "later", at: 2, state: .stored, expiresAt: 100, senderConnection: 7, senderMessageID: 9)
        }
        let reader = try SQLiteTextArchive(path: path, readOnly: true)
        #expect(try reader.roomMessages(room: "r", limit: 5).map(\.text) == ["kept: ünïcødé and 'quotes'; DROP TABLE x;--"])
        let again = try SQLiteTextArchive(path: path)
        let waiting = try again.waiting(for: "b")
        #expect(waiting.map(\.text) == ["later"] && waiting[0].senderConnection == 7 && waiting[0].senderMessageID == 9)
    }

    @Test func waitingTextsAreDeliveredOnceOrExpire() throws {
        let h = try SQLiteTextArchive(path: path)
        let a = try h.addDirectText(from: "alice", to: "bob", text: "1", at: 10, state: .stored, expiresAt: 1_000, senderConnection: 1, senderMessageID: 1)
        let b = try h.addDirectText(from: "carol", to: "bob", text: "2", at: 11, state: .stored, expiresAt: 50, senderConnection: 2, senderMessageID: 5)
        try h.addDirectText(from: "alice", to: "bob", text: "live", at: 12, state: .delivered, expiresAt: 1_000, senderConnection: 1, senderMessageID: 2)
        #expect(try h.waiting(for: "bob").map(\.id) == [a, b])
        #expect(try h.waiting(for: "bob", from: "carol").map(\.id) == [b])
        #expect(try h.waitingCount(for: "bob") == 2)
        let expired = try h.expire(now: 60)
        #expect(expired.map(\.id) == [b] && expired[0].state == .failed && expired[0].reason.contains("expired"))
        try h.markDelivered([a], at: 70)
        try h.markDelivered([a], at: 80)  // twice: nothing more
        #expect(try h.waiting(for: "bob").isEmpty)
        #expect(try h.markFailed([a], reason: "late").isEmpty)  // delivered stays delivered
        let chat = try h.directMessages(between: "bob", and: "alice", limit: 10)
        #expect(chat.map(\.text) == ["live", "1"] && chat.allSatisfy { $0.state == .delivered })
    }

    @Test func chatsArePerPairWhoeverAsked() throws {
        let h = try SQLiteTextArchive(path: path)
        #expect(try h.chat("alice", "bob") == nil)
        try h.setChat(requester: "bob", recipient: "alice", state: .requested, at: 1)
        #expect(try h.chat("alice", "bob") == .init(requester: "bob", recipient: "alice", state: .requested))
        try h.setChat(requester: "bob", recipient: "alice", state: .accepted, at: 2)
        #expect(try h.chat("bob", "alice")?.state == .accepted)
        try h.setChat(requester: "carol", recipient: "alice", state: .declined, at: 3)
        #expect(Set(try h.allChats().map { "\($0.requester)>\($0.recipient):\($0.state)" }) == ["bob>alice:accepted", "carol>alice:declined"])
    }

    @Test func aFileThatIsNotADatabaseIsRefusedByName() throws {
        try Data("this is not a database, just text that happens to be here".utf8).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try SQLiteTextArchive(path: path)
        } throws: { error in
            guard let e = error as? SQLiteError else { return false }
            return e.isCorrupt && e.description.contains(path)
        }
    }

    @Test func aWriterLockedOutWaitsThenSaysBusy() throws {
        let h = try SQLiteTextArchive(path: path)
        let other = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 50)
        try h.db.execute("BEGIN IMMEDIATE")
        #expect {
            try other.run("INSERT INTO room_messages(room, sender, name, body, at) VALUES ('r', 'a', '', 'x', 1)")
        } throws: { ($0 as? SQLiteError)?.isBusy == true }
        try h.db.execute("COMMIT")
        try other.run("INSERT INTO room_messages(room, sender, name, body, at) VALUES ('r', 'a', '', 'x', 1)")
        #expect(try h.roomMessages(room: "r", limit: 5).count == 1)
    }
}

extension SQLiteTextArchiveTests {
    static let ids = ["fUNQLHuQBWMBiIYr16lWVg", "AAAAAAAAAAAAAAAAAAAAAA"]

    @Test func imagesAreKeptWithTheirTexts() throws {
        let h = try SQLiteTextArchive(path: path)
        try h.addRoomText(room: "r", identity: "a", name: "", text: "", at: 1, attachments: Self.ids)
        try h.addRoomText(room: "r", identity: "a", name: "", text: "plain", at: 2)
        #expect(try h.roomMessages(room: "r", limit: 5).map(\.attachments) == [[], Self.ids])
        try h.addDirectText(from: "a", to: "b", text: "look", at: 3, state: .stored, expiresAt: 100, senderConnection: 1, senderMessageID: 1,
                            attachments: [Self.ids[1]])
        #expect(try h.waiting(for: "b").map(\.attachments) == [[Self.ids[1]]])
        #expect(try h.expire(now: 200).map(\.attachments) == [[Self.ids[1]]])
    }

    @Test func aFileFromBeforeImagesGetsTheColumn() throws {
        do {
            // The tables as the first kept-texts release made them.
            let old = try SQLiteDatabase(path: path)
            try old.execute("""
                CREATE TABLE room_messages(id INTEGER PRIMARY KEY, room TEXT NOT NULL, sender TEXT NOT NULL,
                    name TEXT NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL);
                CREATE TABLE direct_messages(id INTEGER PRIMARY KEY, sender TEXT NOT NULL, recipient TEXT NOT NULL,
                    body TEXT NOT NULL, at INTEGER NOT NULL, state INTEGER NOT NULL, delivered_at INTEGER, expires_at INTEGER NOT NULL,
                    sender_connection INTEGER NOT NULL, sender_message_id INTEGER NOT NULL, reason TEXT NOT NULL DEFAULT '');
                INSERT INTO room_messages(room, sender, name, body, at) VALUES ('r', 'a', '', 'before', 1);
                INSERT INTO direct_messages(sender, recipient, body, at, state, expires_at, sender_connection, sender_message_id)
                    VALUES ('a', 'b', 'waiting', 1, 0, 100, 1, 1);
                """)
        }
        let h = try SQLiteTextArchive(path: path)
        #expect(try h.roomMessages(room: "r", limit: 5).map(\.text) == ["before"])
        #expect(try h.waiting(for: "b").map(\.attachments) == [[]])
        try h.addRoomText(room: "r", identity: "a", name: "", text: "after", at: 2, attachments: [Self.ids[0]])
        #expect(try SQLiteTextArchive(path: path, readOnly: true).roomMessages(room: "r", limit: 5).map(\.attachments) == [[Self.ids[0]], []])
        _ = try SQLiteTextArchive(path: path)  // opened again: the column is there, nothing to add
    }
}
