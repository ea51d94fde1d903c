import ParleyCluster
import ParleyHistory
import ParleyNet
import ParleyRelayCore
import ParleyWire
import Synchronization

/// The relay's message store on a thread of its own, over one `TextArchive`: `<state_dir>/messages.db` (SQLite,
/// `SQLiteTextArchive`) for a relay on its own, the cluster's Redis (`RedisTextArchive`) for a node of a cluster. Workers
/// hand it what their cores logged (`TextLog`: room texts, direct texts, chats, deliveries) after each batch; it
/// writes them (one transaction per batch where the archive has them) and answers worker 0 through its inbox
/// (`AdminCommand.textStored`, `.deliverWaiting`, `.textsFailed`) once they are kept — a sender hears `stored` only for
/// a committed text. Every minute, texts kept past `keepFor` fail ("expired"). In a cluster it also follows the chats
/// other nodes change: every second it reads the chats' version, and when it moved, hands worker 0 the whole list
/// (`AdminCommand.replaceChats`). The HTTP API reads history through a connection of its own (`roomMessages`), never
/// waiting for the writer. An archive that is locked, full, damaged or unreachable costs the texts it could not keep
/// (their senders are told why), never the relay.
public final class TextStore: @unchecked Sendable {
    // Invariant: `writer` is used only by the store thread (`run`); `reader` only under its mutex; `inbound` under its own.
    /// Where texts are kept: the database file, or the cluster's Redis (`redis://HOST:PORT`).
    public let path: String
    private let writer: any TextArchive
    private let reader: Mutex<(any TextArchive)?>
    private let inbound = Mutex<[TextLog.Record]>([])
    private let wakeup: WakeupSignal
    private let stopping = Atomic<Bool>(false)
    private let log: LogSink
    /// Where answers go (their workers: worker 0 for presence, a room's own for its texts); set once the API exists,
    /// before the threads start.
    nonisolated(unsafe) public var post: (@Sendable (AdminCommand) -> Void)?
    /// How long a text waits for its recipient before it fails (milliseconds).
    public let keepFor: Int64
    /// Most texts kept for one recipient; more fail ("… has too many texts waiting").
    public static let maxWaitingPerRecipient = 1_000
    /// Most texts one sender may have waiting, for everyone; more fail ("you have too many texts waiting …").
    public static let maxWaitingPerSender = 1_000
    /// Records handed over and not yet written, at most (a stalled disk costs texts, not memory).
    static let maxInbound = 100_000
    /// How often the store looks whether another node changed the chats (milliseconds).
    static let chatsCheckInterval: Int64 = 1_000
    /// Records refused because the store fell behind.
    public let droppedRecords = Atomic<UInt64>(0)
    /// HTTP requests waiting to hear whether their room text was kept.
    public let keeping = KeepWaits()
    /// Why a record the store fell behind on was not kept.
    static let behind = "the relay's message store is behind"

    /// Opens (or makes) the store in `stateDirectory`; throws with the file's name when it cannot (locked, damaged).
    public convenience init(stateDirectory: String, keepFor: Int64 = 7 * 86_400_000, log: LogSink) throws(SQLiteError) {
        let path = stateDirectory + "/messages.db"
        let writer = try SQLiteTextArchive(path: path)
        let reader = try SQLiteTextArchive(path: path, readOnly: true)
        let wakeup: WakeupSignal
        do { wakeup = try WakeupSignal() } catch { throw SQLiteError(operation: "eventfd", code: 1, message: "\(error)") }
        self.init(path: path, writer: writer, reader: reader, wakeup: wakeup, keepFor: keepFor, log: log)
    }

    /// The store of node `nodeID` of a cluster, in the cluster's Redis at `url`, its texts' MACs made and checked with
    /// `mac` (`ClusterMAC.Purpose.texts`): nothing is connected yet (the store thread and the API's reader connect at
    /// their first call, and again whenever Redis comes back).
    public convenience init(redis url: ClusterURL, nodeID: String, mac: ClusterMAC, keepFor: Int64 = 7 * 86_400_000, log: LogSink) throws(SystemError) {
        let clock: @Sendable () -> Int64 = { Int64(Clock.unixMilliseconds()) }
        let writer = RedisTextArchive(url: url, nodeID: nodeID, mac: mac, clock: clock, log: { log.write(.warning, $0) })
        let reader = RedisTextArchive(url: url, nodeID: nodeID, mac: mac, clock: clock, log: { log.write(.warning, "(reader) " + $0) })
        self.init(path: url.description, writer: writer, reader: reader, wakeup: try WakeupSignal(), keepFor: keepFor, log: log)
    }

    private init(path: String, writer: any TextArchive, reader: sending any TextArchive, wakeup: WakeupSignal, keepFor: Int64, log: LogSink) {
        self.path = path
        self.writer = writer
        self.reader = Mutex(reader)
        self.wakeup = wakeup
        self.keepFor = keepFor
        self.log = log
    }

    /// The chats the store holds (at start: worker 0's `ChatBook` begins with them).
    public func chats() throws -> [ChatBook.Chat] {
        try writer.allChats().map(Self.chat)
    }

    static func chat(_ c: SQLiteTextArchive.Chat) -> ChatBook.Chat {
        ChatBook.Chat(requester: c.requester, recipient: c.recipient, state: state(c.state))
    }

    /// A page of `room`'s texts, newest first (the API's threads). Throws the archive's error (`StoreFailure` says
    /// which kind).
    public func roomMessages(room: String, before: Int64?, limit: Int) throws -> [SQLiteTextArchive.RoomMessage] {
        try reader.withLock { (r: inout (any TextArchive)?) throws -> [SQLiteTextArchive.RoomMessage] in
            guard let r else { throw SQLiteError(operation: "read", code: 1, message: "no reader") }
            return try r.roomMessages(room: room, before: before, limit: limit)
        }
    }

    /// `submit`, for tests driving the store without workers.
    public func submitForTests(_ records: [TextLog.Record]) { submit(records) }

    /// Takes a worker's records (after a batch).
    func submit(_ records: [TextLog.Record]) {
        let accepted = inbound.withLock { pending -> Bool in
            guard pending.count + records.count <= Self.maxInbound else { return false }
            pending.append(contentsOf: records)
            return true
        }
        if accepted {
            wakeup.signal()
            return
        }
        droppedRecords.add(UInt64(records.count), ordering: .relaxed)
        // Their senders are told, as if a write had failed.
        var outcomes = Outcomes()
        for r in records { outcomes.notKept(r, reason: Self.behind, full: false) }
        outcomes.deliver(to: self)
    }

    /// What a batch's writes tell: answers for the workers, and the room texts' outcomes for those waiting on them.
    struct Outcomes {
        var answers: [AdminCommand] = []
        var settled: [(UInt64, KeepWaits.Outcome)] = []

        /// `record` was not kept: its sender (a direct text's, a room text's session or HTTP request) is told why.
        mutating func notKept(_ record: TextLog.Record, reason: String, full: Bool) {
            switch record {
            case .directText(let from, _, _, _, false, _, let connection, let messageID, _):
                answers.append(.textStored(from: from, connection: connection, messageID: messageID, stored: false, reason: reason))
            case .roomText(let room, let identity, _, _, _, _, let receipt?):
                if receipt.connection != 0 {
                    answers.append(.roomTextNotKept(room: room, identity: identity, connection: receipt.connection, messageID: receipt.messageID,
                                                    delivered: receipt.delivered, reason: reason))
                }
                if receipt.request != 0 { settled.append((receipt.request, .notKept(reason: reason, full: full))) }
            default:
                break
            }
        }

        /// Posts the answers, settles the waits.
        func deliver(to store: TextStore) {
            for a in answers { store.post?(a) }
            for (id, outcome) in settled { store.keeping.settle(id, outcome) }
        }
    }

    /// Ends the thread once everything handed over is written (call after the workers stopped).
    public func stop() {
        stopping.store(true, ordering: .releasing)
        wakeup.signal()
    }

    /// The store thread.
    public func run() {
        let poller = Poller([wakeup.fd])
        var lastExpiry = Int64(0), lastChatsCheck = Int64(0)
        var chatsVersion: Int64?
        var followsChats = true
        while true {
            poller.wait(timeoutMilliseconds: 1_000)
            wakeup.drain()
            let last = stopping.load(ordering: .acquiring)
            let records = inbound.withLock { q in defer { q = [] }; return q }
            if !records.isEmpty { write(records) }
            let now = Int64(Clock.unixMilliseconds())
            if now - lastExpiry >= 60_000 {
                lastExpiry = now
                expire(now: now)
            }
            if followsChats, now - lastChatsCheck >= Self.chatsCheckInterval {
                lastChatsCheck = now
                followsChats = refreshChats(&chatsVersion)
            }
            if last { return }
        }
    }

    private func expire(now: Int64) {
        do {
            let failed = try writer.expire(now: now)
            if !failed.isEmpty { post?(.textsFailed(failed.map(Self.kept))) }
        } catch {
            if StoreFailure(error) != .unreachable { log.write(.error, "message store: cannot expire kept texts: \(error)") }
        }
    }

    /// Hands worker 0 every chat when their version moved since `version` (another node changed one, or this one did);
    /// false when the archive's chats change only through this relay (nothing to follow).
    private func refreshChats(_ version: inout Int64?) -> Bool {
        do {
            guard let now = try writer.chatsVersion() else { return false }
            guard now != version else { return true }
            let chats = try writer.allChats().map(Self.chat)
            version = now
            post?(.replaceChats(chats))
        } catch {
            if StoreFailure(error) != .unreachable { log.write(.error, "message store: cannot read the chats: \(error)") }
        }
        return true
    }

    static func state(_ s: SQLiteTextArchive.ChatState) -> ChatBook.State {
        switch s {
        case .requested: .requested
        case .accepted: .accepted
        case .declined: .declined
        }
    }

    static func state(_ s: ChatBook.State) -> SQLiteTextArchive.ChatState {
        switch s {
        case .requested: .requested
        case .accepted: .accepted
        case .declined: .declined
        }
    }

    static func kept(_ m: SQLiteTextArchive.DirectMessage) -> KeptText {
        KeptText(id: m.id, from: m.from, to: m.to, text: m.text, at: m.at, senderConnection: m.senderConnection,
                 senderMessageID: m.senderMessageID, reason: m.reason, attachments: m.attachments)
    }

    /// Writes a batch in one transaction; when that fails, record by record from where it failed (from the start when
    /// the archive rolled the batch back), so only what cannot be written is lost (and its senders told). Answers go
    /// out after the commit.
    private func write(_ records: [TextLog.Record]) {
        var outcomes = Outcomes()
        var done = 0
        do {
            try writer.transaction {
                for r in records {
                    try apply(r, &outcomes)
                    done += 1
                }
            }
        } catch {
            if StoreFailure(error) != .unreachable {
                log.write(.error, "message store: a batch of \(records.count) failed (\(error)); writing them one by one")
            }
            if writer.rollsBack {
                outcomes = Outcomes()
                done = 0
            }
            for r in records[done...] {
                var one = Outcomes()
                do {
                    try writer.transaction { try apply(r, &one) }
                    outcomes.answers += one.answers
                    outcomes.settled += one.settled
                } catch {
                    let failure = StoreFailure(error)
                    if failure != .unreachable { log.write(.error, "message store: \(error)") }
                    outcomes.notKept(r, reason: failure.reason, full: failure == .full)
                }
            }
        }
        outcomes.deliver(to: self)
    }

    private func apply(_ record: TextLog.Record, _ outcomes: inout Outcomes) throws {
        switch record {
        case .roomText(let room, let identity, let name, let text, let at, let images, let receipt):
            try writer.addRoomText(room: room, identity: identity, name: name, text: text, at: at, attachments: images)
            if let request = receipt?.request, request != 0 { outcomes.settled.append((request, .kept)) }
        case .directText(let from, let to, let text, let at, let delivered, let held, let connection, let messageID, let images):
            if delivered {
                try writer.addDirectText(from: from, to: to, text: text, at: at, state: .delivered, expiresAt: at,
                                         senderConnection: connection, senderMessageID: messageID, attachments: images)
                return
            }
            if try writer.waitingCount(for: to) >= Self.maxWaitingPerRecipient {
                outcomes.answers.append(.textStored(from: from, connection: connection, messageID: messageID, stored: false,
                                                    reason: "\(to) has too many texts waiting"))
                return
            }
            // One sender cannot fill the disk by writing to many names nobody uses.
            if try writer.waitingCount(from: from) >= Self.maxWaitingPerSender {
                outcomes.answers.append(.textStored(from: from, connection: connection, messageID: messageID, stored: false,
                                                    reason: "you have too many texts waiting to be delivered"))
                return
            }
            try writer.addDirectText(from: from, to: to, text: text, at: at, state: held ? .held : .stored, expiresAt: at + keepFor,
                                     senderConnection: connection, senderMessageID: messageID, attachments: images)
            outcomes.answers.append(.textStored(from: from, connection: connection, messageID: messageID, stored: true, reason: ""))
        case .deliverWaiting(let identity, let from):
            let waiting = try writer.claimWaiting(for: identity, from: from, limit: 500)
            if !waiting.isEmpty { outcomes.answers.append(.deliverWaiting(identity: identity, texts: waiting.map(Self.kept))) }
        case .delivered(let ids, let at):
            try writer.markDelivered(ids, at: at)
        case .notDelivered(let ids):
            try writer.returnUndelivered(ids)
        case .chat(let requester, let recipient, let state, let at):
            try writer.setChat(requester: requester, recipient: recipient, state: Self.state(state), at: at)
        case .release(let from, let to):
            try writer.release(from: from, to: to)
        case .failHeld(let from, let to, let reason):
            let failed = try writer.failHeld(from: from, to: to, reason: reason)
            if !failed.isEmpty { outcomes.answers.append(.textsFailed(failed.map(Self.kept))) }
        }
    }
}
