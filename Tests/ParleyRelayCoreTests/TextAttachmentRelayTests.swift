import ParleyWire
import Testing
@testable import ParleyRelayCore

/// Image ids on texts go through the relay as they came: to every member of a room, to every device of a direct
/// text's recipient, to a web page's events, across a cluster's link. The relay never reads the images here.
@Suite("Texts with image attachments through the relay")
struct TextAttachmentRelayTests {
    static let ids = ["fUNQLHuQBWMBiIYr16lWVg", "AAAAAAAAAAAAAAAAAAAAAA", "-_-_abcdefghij0123456w", "zyxwvutsrqponmlkjihgfw"]

    @Test("a room text's ids reach every other member unchanged, also on a 4,096-byte text; the room's event carries them")
    func roomText() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob"), carol = net.addClient("carol")
        net.joinAll()
        _ = net.core.drainEvents()
        let long = String(repeating: "é", count: 2048)  // 4096 UTF-8 bytes
        let first = try #require(alice.session.sendText("look", attachments: [Self.ids[0], Self.ids[1]], now: net.instant))
        let second = try #require(alice.session.sendText(long, attachments: Self.ids, now: net.instant))
        net.exchange()
        for member in [bob, carol] {
            #expect(member.events.contains(.text(from: "alice", direct: false, text: "look", attachments: [Self.ids[0], Self.ids[1]])))
            #expect(member.events.contains(.text(from: "alice", direct: false, text: long, attachments: Self.ids)))
        }
        #expect(!alice.events.contains { if case .text = $0 { true } else { false } })
        #expect(alice.events.contains(.textStatus(messageID: first, delivered: true, reason: "")))
        #expect(alice.events.contains(.textStatus(messageID: second, delivered: true, reason: "")))
        let texts = net.core.drainEvents().filter { $0.kind == .text }
        #expect(texts.map(\.attachments) == [[Self.ids[0], Self.ids[1]], Self.ids])
        #expect(net.sent.allSatisfy { $0.bytes.count <= Signalling.maxDatagramSize })
    }

    @Test("an image-only text, to the room and to one member: delivered with empty text")
    func imageOnly() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob"), carol = net.addClient("carol")
        net.joinAll()
        _ = try #require(alice.session.sendText("", attachments: [Self.ids[2]], now: net.instant))
        _ = try #require(alice.session.sendText("", attachments: [Self.ids[3]], to: "bob", now: net.instant))
        #expect(alice.session.sendText("", now: net.instant) == nil, "empty without an image")
        #expect(alice.session.sendText("x", attachments: Self.ids + [Self.ids[0]], now: net.instant) == nil, "five ids")
        #expect(alice.session.sendText("x", attachments: ["../relay-key"], now: net.instant) == nil, "not an id")
        net.exchange()
        #expect(bob.events.contains(.text(from: "alice", direct: false, text: "", attachments: [Self.ids[2]])))
        #expect(bob.events.contains(.text(from: "alice", direct: true, text: "", attachments: [Self.ids[3]])))
        #expect(carol.events.contains(.text(from: "alice", direct: false, text: "", attachments: [Self.ids[2]])))
        #expect(!carol.events.contains(.text(from: "alice", direct: true, text: "", attachments: [Self.ids[3]])))
    }

    @Test("a direct text's ids reach every device of the recipient unchanged")
    func directText() throws {
        let world = CallWorld()
        let pat = world.addPresence("pat")
        let laptop = world.addPresence("quinn", token: world.token("quinn", expiresIn: 3601))
        let phone = world.addPresence("quinn", token: world.token("quinn", expiresIn: 3602))
        world.registerAll()
        let mid = try #require(pat.session.sendText(to: "quinn", "a photo", attachments: [Self.ids[0]], now: world.net.instant))
        let only = try #require(pat.session.sendText(to: "quinn", "", attachments: Self.ids, now: world.net.instant))
        world.exchange()
        for device in [laptop, phone] {
            #expect(device.events.contains(.text(from: "pat", text: "a photo", attachments: [Self.ids[0]])))
            #expect(device.events.contains(.text(from: "pat", text: "", attachments: Self.ids)))
        }
        #expect(pat.events.contains(.textStatus(messageID: mid, delivered: true, reason: "")))
        #expect(pat.events.contains(.textStatus(messageID: only, delivered: true, reason: "")))
    }

    @Test("a direct text with ids to a web page: its private direct_text event carries them")
    func directTextToPage() throws {
        let world = CallWorld()
        let bob = world.addPresence("bob")
        world.registerAll()
        let stream: UInt64 = 0xFEED_0002
        #expect(world.core.messaging.openWebPresence(stream: stream, identity: "ann", name: "Ann", now: world.net.now) == .ok)
        _ = world.core.drainEvents()
        _ = try #require(bob.session.sendText(to: "ann", "see", attachments: [Self.ids[1]], now: world.net.instant))
        world.exchange()
        let event = try #require(world.core.drainEvents().first { $0.recipient == stream && $0.kind == .directText })
        #expect(event.identity == "bob" && event.detail == "see" && event.attachments == [Self.ids[1]])
    }

    @Test("the backend's text (the API) carries ids to every member; bad ids are refused before anything is sent")
    func apiText() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        _ = net.core.drainEvents()
        #expect(net.core.sendText(room: "lobby", text: "", attachments: [Self.ids[0]], now: net.now) == .ok)
        #expect(net.core.sendText(room: "lobby", text: "from ann", attachments: [Self.ids[1]], fromIdentity: "alice", asMember: true,
                                  now: net.now) == .ok)
        if case .conflict = net.core.sendText(room: "lobby", text: "x", attachments: ["nope"], now: net.now) {} else { Issue.record("a bad id was taken") }
        if case .conflict = net.core.sendText(room: "lobby", text: "", now: net.now) {} else { Issue.record("an empty text was taken") }
        net.exchange()
        for member in [alice, bob] {
            #expect(member.events.contains(.text(from: "backend", direct: false, text: "", attachments: [Self.ids[0]])))
        }
        #expect(bob.events.contains(.text(from: "alice", direct: false, text: "from ann", attachments: [Self.ids[1]])))
        #expect(net.core.drainEvents().filter { $0.kind == .text }.map(\.attachments) == [[Self.ids[0]], [Self.ids[1]]])
    }

    @Test("a room text's ids cross the cluster's link to a member of the other node")
    func acrossTheLink() {
        let (a, b) = CascadeTests.cluster()
        let ann = a.addClient("ann")
        let bob = b.addClient("bob")
        a.joinAll()
        b.joinAll()
        CascadeTests.advance([a, b], milliseconds: 1_200)
        _ = ann.session.sendText("from a", attachments: Self.ids, now: a.instant)
        CascadeTests.advance([a, b], milliseconds: 200)
        #expect(bob.events.contains(.text(from: "ann", direct: false, text: "from a", attachments: Self.ids)))
    }

    @Test("the link's text bodies: ids flagged by the count's top bit after the bytes; a text without ids is as before")
    func linkBodies() throws {
        let plain = CascadeMessage.text(room: "r", from: 3, to: "", fragment: TextFragment(messageID: 4, index: 0, count: 1, chunk: [0x68]))
        #expect(plain.bytes == [
            4, 1, 0x72,               // kind text, room "r"
            0, 0, 0, 3, 0,            // from 3, to "" (the room)
            0, 0, 0, 4, 0, 1,         // message id 4, index 0, count 1
            0, 1, 0x68,               // 1 byte: "h"
        ])
        let fragment = TextFragment(messageID: 4, index: 0, count: 1, chunk: [0x68], attachments: [Self.ids[1]])
        let withIDs = CascadeMessage.directText(from: "a", to: "b", fragment: fragment)
        #expect(withIDs.bytes == [
            8, 0,                     // kind direct text, room ""
            1, 0x61, 1, 0x62,         // from "a", to "b"
            0, 0, 0, 4, 0, 0x81,      // message id 4, index 0, count 1 | ids follow
            0, 1, 0x68,               // 1 byte: "h"
            1,                        // one id
        ] + Array(Self.ids[1].utf8))
        for message in [withIDs, CascadeMessage.text(room: "lobby", from: 3, to: "bob",
                                                     fragment: TextFragment(messageID: 9, index: 0, count: 2, chunk: [], attachments: Self.ids))] {
            let bytes = message.bytes
            #expect(bytes.withUnsafeBytes { CascadeMessage(parsing: $0) } == message)
            for cut in 0..<bytes.count {
                #expect(Array(bytes.prefix(cut)).withUnsafeBytes { CascadeMessage(parsing: $0) } == nil, "cut at \(cut)")
            }
        }
        // Refused: ids on a later fragment, five ids, an id that is not one, the flag without ids.
        var later = withIDs.bytes
        later[10] = 1; later[11] = 0x82
        var five = withIDs.bytes
        five[15] = 5
        five += Array(Self.ids[0].utf8) + Array(Self.ids[0].utf8) + Array(Self.ids[0].utf8) + Array(Self.ids[0].utf8)
        var bad = withIDs.bytes
        bad[bad.count - 1] = UInt8(ascii: "B")
        var flagOnly = plain.bytes
        flagOnly[13] = 0x81
        for body in [later, five, bad, flagOnly] {
            #expect(body.withUnsafeBytes { CascadeMessage(parsing: $0) } == nil, "\(body)")
        }
    }
}

/// With a message store: images on kept texts are kept with them and come with them later.
@Suite("Texts with image attachments kept by the store")
struct KeptTextAttachmentTests {
    static let ids = TextAttachmentRelayTests.ids

    @Test("an image-only text to someone away is stored with its ids and delivered with them, as a kept text, when they come online")
    func keptImageOnly() throws {
        let w = CallWorld(keepsHistory: true)
        let store = FakeTextStore()
        let alice = w.addPresence("alice")
        w.registerAll()
        StoredTextTests().settle(w, store)
        let id = try #require(alice.session.sendText(to: "bob", "", attachments: [Self.ids[0], Self.ids[1]], now: w.net.instant))
        StoredTextTests().settle(w, store)
        #expect(alice.events.contains(.textStored(messageID: id)))
        #expect(store.kept.map(\.text.attachments) == [[Self.ids[0], Self.ids[1]]])

        w.advance(milliseconds: 1_000)
        let bob = w.addPresence("bob")
        w.registerAll()
        StoredTextTests().settle(w, store)
        let kept = bob.events.compactMap { e -> [String]? in
            if case .keptText("alice", "", let sentAt, _, let images) = e, sentAt > 0 { images } else { nil }
        }
        #expect(kept == [[Self.ids[0], Self.ids[1]]], "\(bob.events)")
        #expect(alice.events.contains(.textStatus(messageID: id, delivered: true, reason: "")))
    }

    @Test("a kept text of several fragments keeps its sent-at, request flag and ids, which ride on its first fragment")
    func keptLongText() throws {
        let w = CallWorld(keepsHistory: true)
        let store = FakeTextStore()
        let alice = w.addPresence("alice")
        w.registerAll()
        StoredTextTests().settle(w, store)
        let long = String(repeating: "x", count: 2_000)
        _ = try #require(alice.session.sendText(to: "bob", long, attachments: [Self.ids[2]], now: w.net.instant))
        StoredTextTests().settle(w, store)
        let bob = w.addPresence("bob")
        w.registerAll()
        StoredTextTests().settle(w, store)
        #expect(bob.events.contains { if case .keptText("alice", long, let at, true, [Self.ids[2]]) = $0 { at > 0 } else { false } },
                "\(bob.events.map { "\($0)".prefix(80) })")
    }

    @Test("room texts are kept with their ids (a member's and the backend's)")
    func roomTextsKept() throws {
        let net = FakeNetwork(keepsHistory: true)
        let a = net.addClient("ann", room: "r"), _ = net.addClient("ben", room: "r")
        net.joinAll()
        _ = a.session.sendText("look", attachments: [Self.ids[3]], now: net.instant)
        net.exchange()
        _ = net.core.sendText(room: "r", text: "", attachments: [Self.ids[0]], now: net.now)
        let store = FakeTextStore()
        store.serve(net.core, now: net.now)
        #expect(store.roomTexts == ["r/ann: look \(Self.ids[3])", "r/backend:  \(Self.ids[0])"])
    }
}
