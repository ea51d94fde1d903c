import ParleyWire
import Testing
@testable import ParleyRelayCore

/// A web page online for calls (`RelayCore+WebPresence.swift`) and a Parley client ring, answer, decline and hang up
/// on each other exactly as two clients do; the page hears of it through private events only it sees.
@Suite("Web presence: calls and direct texts between a page and a client")
struct WebPresenceTests {
    static let stream: UInt64 = 0xFEED_0001

    /// A world with `bob` as a client and `ann` as a page, both online; the events so far drained.
    func world() -> (CallWorld, FakePresenceClient) {
        let w = CallWorld()
        let bob = w.addPresence("bob")
        w.registerAll()
        #expect(w.core.messaging.openWebPresence(stream: Self.stream, identity: "ann", name: "Ann", now: w.net.now) == .ok)
        return (w, bob)
    }

    /// The page's events since the last look (every event drained must be addressed to someone or to everyone).
    func pageEvents(_ w: CallWorld, stream: UInt64 = stream) -> [RelayEvent] {
        w.core.drainEvents().filter { $0.recipient == stream }
    }

    @Test("the page is told it is online, with the stream id its requests name; the directory lists it as web")
    func online() {
        let (w, _) = world()
        let events = pageEvents(w)
        #expect(events.map(\.kind) == [.presenceOnline])
        #expect(events.first?.detail == String(Self.stream))
        let ann = w.core.presenceSnapshot().first { $0.identity == "ann" }
        #expect(ann?.transport == "web")
        #expect(w.core.presenceSnapshot().first { $0.identity == "bob" }?.transport == "parley")
    }

    @Test("a client calls the page: it rings there; the page answers and both get the call room, each its own token")
    func clientCallsPageAnswered() throws {
        let (w, bob) = world()
        _ = pageEvents(w)
        let bobID = try #require(bob.session.call("ann", now: w.net.instant))
        w.exchange()
        #expect(bob.lastStatus(bobID)?.0 == .ringing)
        let ring = try #require(pageEvents(w).first)
        #expect(ring.kind == .incomingCall)
        #expect(ring.identity == "bob")
        let callID = try #require(ring.call?.callID)

        #expect(w.core.messaging.webAnswer(stream: Self.stream, identity: "ann", callID: callID, accept: true, now: w.net.now) == .ok)
        w.exchange()
        let answered = try #require(pageEvents(w).first)
        #expect(answered.kind == .callStatus)
        #expect(answered.call?.state == "answered")
        let bobRoom = try #require(bob.answered(bobID))
        #expect(answered.room == bobRoom.room)
        #expect(answered.call?.token.isEmpty == false)
        #expect(answered.call?.token != bobRoom.token)

        // The page hangs up: bob hears who did.
        #expect(w.core.messaging.webHangUp(stream: Self.stream, identity: "ann", callID: callID, now: w.net.now) == .ok)
        w.exchange()
        #expect(bob.lastStatus(bobID)?.0 == .ended)
        #expect(bob.lastStatus(bobID)?.1 == "hung up by ann")
        #expect(w.settled)
    }

    @Test("the page declines: the caller is told; the page's stream closing while it rings ends the call for the caller")
    func declineAndStreamClosed() throws {
        let (w, bob) = world()
        _ = pageEvents(w)
        let first = try #require(bob.session.call("ann", now: w.net.instant))
        w.exchange()
        let callID = try #require(pageEvents(w).first?.call?.callID)
        #expect(w.core.messaging.webAnswer(stream: Self.stream, identity: "ann", callID: callID, accept: false, now: w.net.now) == .ok)
        w.exchange()
        #expect(bob.lastStatus(first)?.0 == .declined)

        let second = try #require(bob.session.call("ann", now: w.net.instant))
        w.exchange()
        #expect(bob.lastStatus(second)?.0 == .ringing)
        #expect(w.core.messaging.closeWebPresence(stream: Self.stream, now: w.net.now) == .ok)
        w.exchange()
        #expect(bob.lastStatus(second)?.0 == .ended)
        #expect(bob.lastStatus(second)?.1 == "connection lost")
        #expect(w.core.presenceSnapshot().map(\.identity) == ["bob"])
        #expect(w.settled)
    }

    @Test("the page calls a client: ringing, the client declines, the page is told; calling someone offline is unavailable")
    func pageCallsClient() throws {
        let (w, bob) = world()
        _ = pageEvents(w)
        guard case .webCall(let id) = w.core.messaging.webCall(stream: Self.stream, identity: "ann", callee: "bob", now: w.net.now) else {
            Issue.record("no call placed"); return
        }
        w.exchange()
        #expect(pageEvents(w).compactMap(\.call?.state) == ["ringing"])
        let (bobID, from) = try #require(bob.incoming.last)
        #expect(from == "ann")
        w.answer(bob, bobID, accept: false)
        let declined = pageEvents(w)
        #expect(declined.map(\.call?.callID) == [id])
        #expect(declined.map(\.call?.state) == ["declined"])
        #expect(declined.first?.call?.reason == "declined by bob")

        guard case .webCall(let next) = w.core.messaging.webCall(stream: Self.stream, identity: "ann", callee: "zed", now: w.net.now) else {
            Issue.record("no call placed"); return
        }
        #expect(next != id)
        #expect(pageEvents(w).map(\.call?.state) == ["unavailable"])
        #expect(w.settled)
    }

    @Test("the page calls a client who answers: both hold tokens for one call room; the client hangs up and the page is told")
    func pageCallsClientAnswered() throws {
        let (w, bob) = world()
        _ = pageEvents(w)
        guard case .webCall(let id) = w.core.messaging.webCall(stream: Self.stream, identity: "ann", callee: "bob", now: w.net.now) else {
            Issue.record("no call placed"); return
        }
        w.exchange()
        let (bobID, _) = try #require(bob.incoming.last)
        w.answer(bob, bobID)
        let events = pageEvents(w)
        #expect(events.map(\.call?.state) == ["ringing", "answered"])
        let bobRoom = try #require(bob.answered(bobID))
        #expect(events.last?.room == bobRoom.room)
        bob.session.hangUp(bobID, now: w.net.instant)
        w.exchange()
        let ended = pageEvents(w)
        #expect(ended.map(\.call?.callID) == [id])
        #expect(ended.map(\.call?.state) == ["ended"])
        #expect(w.settled)
    }

    @Test("another identity's token cannot use the page's stream; unknown streams and calls are not found")
    func otherIdentities() {
        let (w, _) = world()
        #expect(w.core.messaging.webCall(stream: Self.stream, identity: "mallory", callee: "bob", now: w.net.now)
                == .forbidden("presence stream \(Self.stream) is not mallory's"))
        #expect(w.core.messaging.webAnswer(stream: Self.stream, identity: "mallory", callID: 1, accept: true, now: w.net.now)
                == .forbidden("presence stream \(Self.stream) is not mallory's"))
        if case .notFound = w.core.messaging.webCall(stream: 7, identity: "ann", callee: "bob", now: w.net.now) {} else { Issue.record("stream 7 found") }
        if case .notFound = w.core.messaging.webHangUp(stream: Self.stream, identity: "ann", callID: 99, now: w.net.now) {} else { Issue.record("call 99 found") }
        if case .conflict = w.core.messaging.openWebPresence(stream: Self.stream, identity: "ann", name: "", now: w.net.now) {} else {
            Issue.record("a second open of one stream was accepted")
        }
        #expect(w.core.callSnapshot().isEmpty)
    }

    @Test("past the device bound the oldest page is replaced, and told so on its own stream only")
    func replaced() {
        var config = RelayCoreConfig()
        config.maxPresenceSessionsPerIdentity = 1
        let w = CallWorld(config: config)
        #expect(w.core.messaging.openWebPresence(stream: 1, identity: "ann", name: "", now: w.net.now) == .ok)
        #expect(w.core.messaging.openWebPresence(stream: 2, identity: "ann", name: "", now: w.net.now) == .ok)
        let events = w.core.drainEvents()
        #expect(events.filter { $0.recipient == 1 }.map(\.kind) == [.presenceOnline, .presenceOffline])
        #expect(events.filter { $0.recipient == 2 }.map(\.kind) == [.presenceOnline])
        #expect(events.allSatisfy { $0.recipient != 0 })
        #expect(w.core.presenceSnapshot().count == 1)
        if case .notFound = w.core.messaging.closeWebPresence(stream: 1, now: w.net.now) {} else { Issue.record("stream 1 still online") }
    }

    @Test("direct texts: a client's text reaches the page as a private event; the page's text reaches the client")
    func directTexts() throws {
        let (w, bob) = world()
        _ = pageEvents(w)
        _ = bob.session.sendText(to: "ann", "hi ann", now: w.net.instant)
        w.exchange()
        let text = try #require(pageEvents(w).first)
        #expect(text.kind == .directText)
        #expect(text.identity == "bob")
        #expect(text.detail == "hi ann")

        #expect(w.core.messaging.webDirectText(stream: Self.stream, identity: "ann", to: "bob", text: "hi bob", now: w.net.now) == .ok)
        w.exchange()
        #expect(bob.events.contains { if case .text("ann", "hi bob", _) = $0 { true } else { false } })
        if case .notFound = w.core.messaging.webDirectText(stream: Self.stream, identity: "ann", to: "zed", text: "x", now: w.net.now) {} else {
            Issue.record("a text to someone offline was taken")
        }
    }
}
