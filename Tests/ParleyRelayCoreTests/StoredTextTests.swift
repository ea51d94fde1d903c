import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// The message store as the core sees it, in memory: takes the core's `TextLog` records and answers as
/// `ParleyRelay`'s `TextStore` does (after its commit), through the core's store API.
final class FakeTextStore {
    struct Kept { var text: KeptText; var state: String }  // "stored", "held", "delivered", "failed"
    var kept: [Kept] = []
    var roomTexts: [String] = []
    var chats: [String: TextLog.ChatState] = [:]
    var nextID: Int64 = 1
    /// Ids handed back undelivered (`notDelivered`).
    var notDelivered: [Int64] = []

    /// Takes what the core logged and answers it.
    func serve(_ core: RelayCore, now: Moment) {
        for record in core.history.take() {
            switch record {
            case .roomText(let room, let identity, _, let text, _, let images, _):
                roomTexts.append("\(room)/\(identity): \(text)" + (images.isEmpty ? "" : " " + images.joined(separator: ",")))
            case .directText(let from, let to, let text, let at, let delivered, let held, let connection, let messageID, let images):
                let t = KeptText(id: nextID, from: from, to: to, text: text, at: at, senderConnection: connection, senderMessageID: messageID,
                                 attachments: images)
                nextID += 1
                kept.append(Kept(text: t, state: delivered ? "delivered" : held ? "held" : "stored"))
                if !delivered { _ = core.messaging.textStored(from: from, connection: connection, messageID: messageID, stored: true, reason: "", now: now) }
            case .deliverWaiting(let identity, let from):
                let waiting = kept.filter { $0.state == "stored" && $0.text.to == identity && (from == nil || $0.text.from == from) }.map(\.text)
                if !waiting.isEmpty { _ = core.messaging.deliverWaiting(to: identity, texts: waiting, now: now) }
            case .delivered(let ids, _):
                for k in kept.indices where ids.contains(kept[k].text.id) { kept[k].state = "delivered" }
            case .notDelivered(let ids):
                notDelivered += ids  // they never stopped waiting here
            case .chat(let requester, let recipient, let state, _): chats["\(requester)>\(recipient)"] = state
            case .release(let from, let to):
                for k in kept.indices where kept[k].state == "held" && kept[k].text.from == from && kept[k].text.to == to { kept[k].state = "stored" }
            case .failHeld(let from, let to, let reason):
                var failed: [KeptText] = []
                for k in kept.indices where kept[k].state == "held" && kept[k].text.from == from && kept[k].text.to == to {
                    kept[k].state = "failed"
                    var t = kept[k].text
                    t.reason = reason
                    failed.append(t)
                }
                if !failed.isEmpty { _ = core.messaging.textsFailed(failed, now: now) }
            }
        }
    }

    func states(to identity: String) -> [String] { kept.filter { $0.text.to == identity }.map { "\($0.text.text):\($0.state)" } }
}

@Suite("Kept texts and chats: offline delivery, requests, accept and decline (core + a store in memory)")
struct StoredTextTests {
    /// Exchanges until the core and the store have nothing more to say to each other.
    func settle(_ w: CallWorld, _ store: FakeTextStore) {
        for _ in 0..<10 {
            w.exchange()
            if w.core.history.isEmpty { return }
            store.serve(w.core, now: w.net.now)
        }
    }

    func texts(_ p: FakePresenceClient) -> [String] {
        p.events.compactMap {
            switch $0 {
            case .text(let from, let text, _): "\(from): \(text)"
            case .keptText(let from, let text, let sentAt, let request, _): "\(from): \(text)\(sentAt > 0 ? " (kept)" : "")\(request ? " (request)" : "")"
            default: nil
            }
        }
    }

    @Test("a text to someone away is stored (its sender told so), delivered when they come online (sender told), and only once")
    func offlineDelivery() throws {
        let w = CallWorld(keepsHistory: true)
        let store = FakeTextStore()
        let alice = w.addPresence("alice")
        w.registerAll()
        settle(w, store)
        let id = try #require(alice.session.sendText(to: "bob", "are you there?", now: w.net.instant))
        settle(w, store)
        #expect(alice.events.contains(.textStored(messageID: id)))
        #expect(!alice.events.contains { if case .textStatus = $0 { true } else { false } })  // no "not online" failure
        #expect(store.states(to: "bob") == ["are you there?:stored"])

        w.advance(milliseconds: 1_000)
        let bob = w.addPresence("bob")
        w.registerAll()
        settle(w, store)
        // The first text between them opens the chat: it comes flagged as a request, with when it was sent.
        #expect(texts(bob) == ["alice: are you there? (kept) (request)"])
        #expect(store.states(to: "bob") == ["are you there?:delivered"])
        #expect(alice.events.contains(.textStatus(messageID: id, delivered: true, reason: "")))
        // The store answering twice for the same texts (two registrations before it heard of the delivery): once only.
        let again = store.kept.map(\.text)
        _ = w.core.messaging.deliverWaiting(to: "bob", texts: again, now: w.net.now)
        w.exchange()
        #expect(texts(bob).count == 1)
        // A second device registering later gets nothing again.
        let bob2 = w.addPresence("bob")
        w.registerAll()
        settle(w, store)
        #expect(texts(bob2).isEmpty)
    }

    @Test("until the recipient answers, later texts wait; accepted, they follow and texts flow both ways")
    func acceptReleasesHeldTexts() throws {
        let w = CallWorld(keepsHistory: true)
        let store = FakeTextStore()
        let alice = w.addPresence("alice"), bob = w.addPresence("bob")
        w.registerAll()
        settle(w, store)
        let first = try #require(alice.session.sendText(to: "bob", "hi bob", now: w.net.instant))
        settle(w, store)
        #expect(texts(bob) == ["alice: hi bob (request)"])
        #expect(alice.events.contains(.textStatus(messageID: first, delivered: true, reason: "")))
        let second = try #require(alice.session.sendText(to: "bob", "still there?", now: w.net.instant))
        settle(w, store)
        #expect(texts(bob).count == 1)  // held
        #expect(alice.events.contains(.textStored(messageID: second)))
        #expect(store.states(to: "bob") == ["hi bob:delivered", "still there?:held"])
        // A call from alice rings as a request.
        let call = try #require(alice.session.call("bob", now: w.net.instant))
        settle(w, store)
        let incoming = try #require(bob.incoming.last)
        #expect(bob.session.isCallRequest(incoming.0))
        alice.session.hangUp(call, now: w.net.instant)
        settle(w, store)

        bob.session.answerChat("alice", accept: true, now: w.net.instant)
        settle(w, store)
        #expect(bob.events.contains(.chat(ChatStatus(identity: "alice", state: .accepted))))
        #expect(alice.events.contains(.chat(ChatStatus(identity: "bob", state: .accepted))))
        #expect(texts(bob) == ["alice: hi bob (request)", "alice: still there? (kept)"])
        #expect(alice.events.contains(.textStatus(messageID: second, delivered: true, reason: "")))
        #expect(store.chats["alice>bob"] == .accepted)
        // Now texts go straight through, and calls ring without the marker.
        _ = try #require(alice.session.sendText(to: "bob", "great", now: w.net.instant))
        settle(w, store)
        #expect(texts(bob).last == "alice: great")
        _ = try #require(alice.session.call("bob", now: w.net.instant))
        settle(w, store)
        #expect(!bob.session.isCallRequest(try #require(bob.incoming.last).0))
    }

    @Test("declined: held texts fail with why, later ones fail at once; a reply from the recipient asks afresh")
    func declineStopsTexts() throws {
        let w = CallWorld(keepsHistory: true)
        let store = FakeTextStore()
        let carol = w.addPresence("carol"), dave = w.addPresence("dave")
        w.registerAll()
        settle(w, store)
        _ = carol.session.sendText(to: "dave", "hello", now: w.net.instant)
        let held = try #require(carol.session.sendText(to: "dave", "hello??", now: w.net.instant))
        settle(w, store)
        dave.session.answerChat("carol", accept: false, now: w.net.instant)
        settle(w, store)
        #expect(carol.events.contains(.chat(ChatStatus(identity: "dave", state: .declined))))
        #expect(carol.events.contains(.textStatus(messageID: held, delivered: false, reason: "dave declined your chat request")))
        let later = try #require(carol.session.sendText(to: "dave", "please", now: w.net.instant))
        settle(w, store)
        #expect(carol.events.contains(.textStatus(messageID: later, delivered: false, reason: "dave declined your chat request")))
        #expect(texts(dave) == ["carol: hello (request)"])
        #expect(store.states(to: "dave") == ["hello:delivered", "hello??:failed"])
        // Answering a request nobody made changes nothing.
        dave.session.answerChat("nobody", accept: true, now: w.net.instant)
        settle(w, store)
        #expect(store.chats.count == 1)
        // dave writes to carol: that asks afresh, from dave.
        _ = dave.session.sendText(to: "carol", "sorry, hi", now: w.net.instant)
        settle(w, store)
        #expect(texts(carol) == ["dave: sorry, hi (request)"])
        #expect(store.chats["dave>carol"] == .requested)
    }

    @Test("a store other nodes share: texts handed over for someone gone again are handed back; chats changed elsewhere decide the next texts")
    func sharedStore() throws {
        let w = CallWorld(keepsHistory: true)
        let store = FakeTextStore()
        let alice = w.addPresence("alice")
        w.registerAll()
        settle(w, store)
        // The store answers for bob, who is not (or no longer) online here: every text is handed back to wait again.
        let kept = KeptText(id: 41, from: "carol", to: "bob", text: "kept elsewhere", at: 5, senderConnection: 0, senderMessageID: 3)
        _ = w.core.messaging.deliverWaiting(to: "bob", texts: [kept], now: w.net.now)
        #expect(w.core.history.take() == [.notDelivered(ids: [41])])

        // Another node's bob declined alice's request: the store's list replaces what this node knew of the pair, and
        // keeps what it does not list (a chat opened here, not written yet).
        _ = try #require(alice.session.sendText(to: "dave", "hi dave", now: w.net.instant))
        settle(w, store)
        _ = w.core.messaging.replaceChats([ChatBook.Chat(requester: "alice", recipient: "bob", state: .declined)])
        let refused = try #require(alice.session.sendText(to: "bob", "hello?", now: w.net.instant))
        w.exchange()
        #expect(alice.events.contains(.textStatus(messageID: refused, delivered: false, reason: "bob declined your chat request")))
        #expect(w.core.history.take().isEmpty)  // refused at once: nothing for the store
        let held = try #require(alice.session.sendText(to: "dave", "still there?", now: w.net.instant))
        settle(w, store)
        #expect(alice.events.contains(.textStored(messageID: held)))
        #expect(store.states(to: "dave").last == "still there?:held")
        // dave declines on another node: the text held here fails, and alice is told why.
        _ = w.core.messaging.replaceChats([ChatBook.Chat(requester: "alice", recipient: "dave", state: .declined)])
        settle(w, store)
        #expect(store.states(to: "dave") == ["hi dave:stored", "still there?:failed"])
        #expect(alice.events.contains(.textStatus(messageID: held, delivered: false, reason: "dave declined your chat request")))
        // The same list again changes nothing.
        _ = w.core.messaging.replaceChats([ChatBook.Chat(requester: "alice", recipient: "dave", state: .declined)])
        #expect(w.core.history.isEmpty)
    }

    @Test("without a store nothing changes: a text to someone away fails, no chat requests, calls ring as before")
    func withoutAStore() throws {
        let w = CallWorld()
        let alice = w.addPresence("alice"), bob = w.addPresence("bob")
        w.registerAll()
        let id = try #require(alice.session.sendText(to: "zoe", "hi", now: w.net.instant))
        w.exchange()
        #expect(alice.events.contains(.textStatus(messageID: id, delivered: false, reason: "zoe is not online")))
        _ = alice.session.sendText(to: "bob", "hi bob", now: w.net.instant)
        _ = alice.session.sendText(to: "bob", "again", now: w.net.instant)
        w.exchange()
        #expect(texts(bob) == ["alice: hi bob", "alice: again"])
        _ = try #require(alice.session.call("bob", now: w.net.instant))
        w.exchange()
        #expect(!bob.session.isCallRequest(try #require(bob.incoming.last).0))
        #expect(w.core.history.isEmpty)
    }

    @Test("a room text the store could not keep: its sender hears a second status saying why, with the delivery the first said; nobody else does")
    func roomTextNotKept() throws {
        let net = FakeNetwork(keepsHistory: true)
        let a = net.addClient("ann", room: "r"), b = net.addClient("ben", room: "r")
        net.joinAll()
        let id = try #require(a.session.sendText("hello all", now: net.instant))
        net.exchange()
        let records = net.core.history.take()
        guard case .roomText("r", "ann", _, "hello all", _, _, let receipt?)? = records.first else { Issue.record("\(records)"); return }
        #expect(receipt.messageID == id && receipt.delivered && receipt.connection != 0 && receipt.request == 0)
        let statuses = { (c: FakeClient) in c.events.compactMap { e -> String? in
            if case .textStatus(let m, let delivered, let reason) = e { return "\(m) \(delivered) \(reason)" }
            return nil
        } }
        #expect(statuses(a) == ["\(id) true "])
        // Another session's connection id, or another identity: nothing.
        _ = net.core.messaging.roomTextNotKept(room: "r", identity: "ann", connection: receipt.connection &+ 1, messageID: id, delivered: true,
                                     reason: "the relay's disk is full", now: net.now)
        _ = net.core.messaging.roomTextNotKept(room: "r", identity: "ben", connection: receipt.connection, messageID: id, delivered: true,
                                     reason: "the relay's disk is full", now: net.now)
        _ = net.core.messaging.roomTextNotKept(room: "r", identity: "ann", connection: receipt.connection, messageID: id, delivered: receipt.delivered,
                                     reason: "the relay's disk is full", now: net.now)
        net.exchange()
        #expect(statuses(a) == ["\(id) true ", "\(id) true not kept in the room's history: the relay's disk is full"])
        #expect(statuses(b).isEmpty)
    }

    @Test("a room text nobody else is there to take: said as kept when the room keeps texts, else that nobody is there",
          arguments: [true, false])
    func loneMembersText(keepsHistory: Bool) throws {
        let net = FakeNetwork(keepsHistory: keepsHistory)
        let a = net.addClient("ann", room: "r")
        net.joinAll()
        let id = try #require(a.session.sendText("anyone?", now: net.instant))
        net.exchange()
        let reason = keepsHistory ? "kept in the room's history; nobody else is here now" : "nobody else is in the room"
        #expect(a.events.contains(.textStatus(messageID: id, delivered: false, reason: reason)), "\(a.events)")
        #expect(RoomTextKept.reason == "kept in the room's history; nobody else is here now")
    }

    @Test("room texts are kept: a member's and the backend's, not a text to one member")
    func roomTextsAreKept() throws {
        let net = FakeNetwork(keepsHistory: true)
        let a = net.addClient("ann", room: "r"), b = net.addClient("ben", room: "r")
        net.joinAll()
        _ = a.session.sendText("hello all", now: net.instant)
        _ = a.session.sendText("psst", to: "ben", now: net.instant)
        net.exchange()
        _ = net.core.sendText(room: "r", text: "from the backend", now: net.now)
        let store = FakeTextStore()
        store.serve(net.core, now: net.now)
        #expect(store.roomTexts == ["r/ann: hello all", "r/backend: from the backend"])
        #expect(b.events.contains { if case .text(_, _, "psst", _) = $0 { true } else { false } })
    }
}
