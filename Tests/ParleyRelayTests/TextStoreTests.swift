import Foundation
import ParleyCluster
import ParleyHistory
import ParleyNet
import ParleyRelay
import ParleyRelayCore
import Synchronization
import Testing

/// The message store's thread on a real database file: what it answers worker 0, and what it does when the database
/// is locked by another process.
@Suite("Message store: answers after the commit; a locked database fails texts with why, and the store goes on")
struct TextStoreTests {
    let folder = NSTemporaryDirectory() + "parley-store-\(UInt32.random(in: 0...UInt32.max))"

    final class Answers: Sendable {
        let list = Mutex<[AdminCommand]>([])
        func wait(for count: Int, seconds: Double) -> [AdminCommand] {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                let now = list.withLock { $0 }
                if now.count >= count { return now }
                Thread.sleep(forTimeInterval: 0.02)
            }
            return list.withLock { $0 }
        }
    }

    func start() throws -> (TextStore, Answers, OSThread) {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let store = try TextStore(stateDirectory: folder, log: MemoryLogSink(threshold: .error))
        let answers = Answers()
        store.post = { c in answers.list.withLock { $0.append(c) } }
        let thread = try OSThread(name: "test-store") { store.run() }
        return (store, answers, thread)
    }

    func stored(_ text: String, to: String = "bob", id: UInt32) -> TextLog.Record {
        .directText(from: "alice", to: to, text: text, at: Int64(Date().timeIntervalSince1970 * 1000), delivered: false, held: false, senderConnection: 5, senderMessageID: id)
    }

    @Test("a kept text is answered `stored`; bob online gets what waits; a room text is kept")
    func storedThenDelivered() throws {
        let (store, answers, thread) = try start()
        store.submitForTests([stored("one", id: 1), stored("two", id: 2), .roomText(room: "r", identity: "ann", name: "Ann", text: "hi", at: 5)])
        #expect(answers.wait(for: 2, seconds: 3) == [
            .textStored(from: "alice", connection: 5, messageID: 1, stored: true, reason: ""),
            .textStored(from: "alice", connection: 5, messageID: 2, stored: true, reason: "")])
        store.submitForTests([.deliverWaiting(identity: "bob", from: nil)])
        let all = answers.wait(for: 3, seconds: 3)
        guard case .deliverWaiting("bob", let texts)? = all.last else { Issue.record("\(all)"); return }
        #expect(texts.map(\.text) == ["one", "two"] && texts.allSatisfy { $0.senderMessageID > 0 })
        #expect(try store.roomMessages(room: "r", before: nil, limit: 5).map(\.text) == ["hi"])
        store.stop()
        thread.join()
    }

    @Test("the database locked by another process: the text fails (\"busy\"), its sender told; once free, texts are kept again")
    func lockedDatabase() throws {
        let (store, answers, thread) = try start()
        let other = try SQLiteDatabase(path: store.path)
        try other.execute("BEGIN EXCLUSIVE")
        store.submitForTests([stored("while locked", id: 7)])
        let failed = answers.wait(for: 1, seconds: 8)
        #expect(failed == [.textStored(from: "alice", connection: 5, messageID: 7, stored: false, reason: "the relay's message store is busy")])
        try other.execute("COMMIT")
        store.submitForTests([stored("after", id: 8)])
        #expect(answers.wait(for: 2, seconds: 3).last == .textStored(from: "alice", connection: 5, messageID: 8, stored: true, reason: ""))
        store.stop()
        thread.join()
    }

    @Test("a text kept past its time fails (\"expired\") at the store's sweep, and its sender is told")
    func expiry() throws {
        let (store, answers, thread) = try start()
        store.submitForTests([.directText(from: "alice", to: "bob", text: "old", at: Int64(Date().timeIntervalSince1970 * 1000) - 8 * 86_400_000,
                                          delivered: false, held: false, senderConnection: 5, senderMessageID: 3)])
        let all = answers.wait(for: 2, seconds: 3)
        #expect(all.first == .textStored(from: "alice", connection: 5, messageID: 3, stored: true, reason: ""))
        guard case .textsFailed(let texts)? = all.last else { Issue.record("\(all)"); store.stop(); thread.join(); return }
        #expect(texts.map(\.text) == ["old"] && texts[0].reason == "expired before it could be delivered" && texts[0].senderMessageID == 3)
        store.stop()
        thread.join()
    }

    @Test("in a cluster with its Redis unreachable: a text to keep fails (\"unreachable\"), its sender told; the API's read says so; the store runs on")
    func redisUnreachable() throws {
        // A port nobody listens on: connecting is refused at once.
        let store = try TextStore(redis: ClusterURL("redis://127.0.0.1:1")!, nodeID: "node-a",
                                     mac: ClusterMAC(root: Array(repeating: 1, count: 32), purpose: .texts), log: MemoryLogSink(threshold: .error))
        let answers = Answers()
        store.post = { c in answers.list.withLock { $0.append(c) } }
        let thread = try OSThread(name: "test-store") { store.run() }
        store.submitForTests([stored("while away", id: 4), .roomText(room: "r", identity: "ann", name: "", text: "lost", at: 1), stored("again", id: 5)])
        #expect(answers.wait(for: 2, seconds: 3) == [
            .textStored(from: "alice", connection: 5, messageID: 4, stored: false, reason: "the relay's message store is unreachable"),
            .textStored(from: "alice", connection: 5, messageID: 5, stored: false, reason: "the relay's message store is unreachable")])
        #expect { try store.roomMessages(room: "r", before: nil, limit: 5) } throws: { StoreFailure($0) == .unreachable }
        #expect(store.path == "redis://127.0.0.1:1")
        store.stop()
        thread.join()
    }

    @Test("the store tells a member's session that its room text was not kept, through the room's worker (roomTextNotKept), and settles the request")
    func storeAnswersTheSender() throws {
        let store = try TextStore(redis: ClusterURL("redis://127.0.0.1:1")!, nodeID: "n",
                                     mac: ClusterMAC(root: Array(repeating: 1, count: 32), purpose: .texts), log: MemoryLogSink(threshold: .error))
        let answers = Answers()
        store.post = { c in answers.list.withLock { $0.append(c) } }
        let thread = try OSThread(name: "test-store") { store.run() }
        defer { store.stop(); thread.join() }
        let (id, wait) = try #require(store.keeping.expect())
        store.submitForTests([
            .roomText(room: "r", identity: "ann", name: "Ann", text: "hi", at: 1, receipt: .init(connection: 9, messageID: 4, delivered: true)),
            .roomText(room: "r", identity: "backend", name: "", text: "yo", at: 2, receipt: .init(request: id)),
        ])
        #expect(answers.wait(for: 1, seconds: 3) == [.roomTextNotKept(room: "r", identity: "ann", connection: 9, messageID: 4, delivered: true,
                                                                      reason: "the relay's message store is unreachable")])
        #expect(wait.wait(seconds: 3) == .notKept(reason: "the relay's message store is unreachable", full: false))
    }

    @Test("a damaged database file is refused by name at open (the relay then runs without history)")
    func damagedFile() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 8_192).write(to: URL(fileURLWithPath: folder + "/messages.db"))
        #expect {
            _ = try TextStore(stateDirectory: folder, log: MemoryLogSink(threshold: .error))
        } throws: { ($0 as? SQLiteError)?.description.contains("messages.db") == true }
    }
}
