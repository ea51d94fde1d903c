import ParleyWire
import Testing
@testable import ParleyRelayCore

/// A call to a `sip:` address when the relay runs a SIP gateway (`sipCallees`): the callee is a stand-in device in
/// the gateway's stream range, told of the call as a page is (with the address called), online only for that call.
@Suite("SIP stand-ins: a client calls a sip: address through the gateway")
struct SIPStandInTests {
    static let address = "sip:+4930123456@203.0.113.1"

    func world(sipCallees: Bool = true) -> (CallWorld, FakePresenceClient) {
        var config = RelayCoreConfig()
        config.sipCallees = sipCallees
        let w = CallWorld(config: config)
        let dave = w.addPresence("dave")
        w.registerAll()
        _ = w.core.drainEvents()
        return (w, dave)
    }

    /// The stand-ins' events since the last look.
    func standInEvents(_ w: CallWorld) -> [RelayEvent] {
        w.core.drainEvents().filter { $0.recipient >= CallRouter.firstStandInStream }
    }

    @Test("it rings a stand-in named by the address; the gateway answers for it; the stand-in is gone at the end")
    func answeredThenHungUp() throws {
        let (w, dave) = world()
        let daveID = try #require(dave.session.call(Self.address, now: w.net.instant))
        w.exchange()
        #expect(dave.lastStatus(daveID)?.0 == .ringing)
        let ring = try #require(standInEvents(w).first)
        #expect(ring.kind == .incomingCall && ring.identity == "dave")
        #expect(ring.call?.callee == Self.address)
        let stream = ring.recipient, callID = try #require(ring.call?.callID)
        #expect(w.core.presenceSnapshot().contains { $0.identity == Self.address })
        #expect(w.core.messaging.webAnswer(stream: stream, identity: Self.address, callID: callID, accept: true,
                                           now: w.net.now) == .ok)
        w.exchange()
        #expect(try #require(standInEvents(w).first).call?.state == "answered")
        #expect(dave.answered(daveID) != nil)
        dave.session.hangUp(daveID, now: w.net.instant)
        w.exchange()
        let ended = standInEvents(w)
        #expect(ended.first?.call?.state == "ended" && ended.first?.call?.reason == "hung up by dave", "\(ended)")
        #expect(!w.core.presenceSnapshot().contains { $0.identity == Self.address })
        // The gateway's own close of the stream comes after: nothing is left to close.
        let closed = w.core.messaging.closeWebPresence(stream: stream, now: w.net.now)
        #expect(closed == .notFound("no presence stream \(stream)"))
    }

    @Test("declined by the gateway (no trunk): the caller hears declined; a ring timeout tells the stand-in too")
    func declinedAndTimedOut() throws {
        let (w, dave) = world()
        let first = try #require(dave.session.call(Self.address, now: w.net.instant))
        w.exchange()
        let ring = try #require(standInEvents(w).first)
        #expect(w.core.messaging.webAnswer(stream: ring.recipient, identity: Self.address, callID: ring.call!.callID,
                                           accept: false, now: w.net.now) == .ok)
        w.exchange()
        #expect(dave.lastStatus(first)?.0 == .declined)
        #expect(!w.core.presenceSnapshot().contains { $0.identity == Self.address })

        let second = try #require(dave.session.call(Self.address, now: w.net.instant))
        w.exchange()
        let again = try #require(standInEvents(w).first)
        #expect(again.recipient != ring.recipient)  // a stand-in per call
        w.advance(milliseconds: 31_000)
        #expect(dave.lastStatus(second)?.0 == .noAnswer)
        let told = standInEvents(w).filter { $0.kind == .callStatus }
        #expect(told.map { $0.call?.state } == ["ended"], "\(told)")
        #expect(!w.core.presenceSnapshot().contains { $0.identity == Self.address })
        #expect(w.settled)
    }

    @Test("without a gateway a sip: address is just an identity nobody is online as")
    func noGateway() throws {
        let (w, dave) = world(sipCallees: false)
        let id = try #require(dave.session.call(Self.address, now: w.net.instant))
        w.exchange()
        #expect(dave.lastStatus(id)?.0 == .unavailable)
        #expect(standInEvents(w).isEmpty)
    }
}
