import ParleyClientCore
import ParleyCrypto
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// The room's downstream key changes when a member who held it leaves (`RelayCore+RoomKeys.swift`): the review's
/// attack (issue 33, finding 5) was a member kicked by the backend that decrypted 250 of the 250 packets the relay sent
/// bob over the next 5 s, with the key it kept.
@Suite("Room keys: a member who leaves takes no key to the room's audio")
struct RoomKeyChangeTests {
    /// The RTP the relay sent `to` from `index` on in `net.sent`.
    static func media(_ net: FakeNetwork, to: PeerAddress, from index: Int) -> [[UInt8]] {
        net.sent[index...].filter { $0.to == to && $0.bytes[0] & 0xC0 == 0x80 && !$0.bytes.withUnsafeBytes { isRTCP($0) } }.map(\.bytes)
    }

    /// How many of `packets` `crypto` opens (a member's copy of the keys it was given).
    static func opened(_ packets: [[UInt8]], with crypto: MediaCrypto) -> Int {
        packets.filter { p in
            var out = [UInt8](repeating: 0, count: p.count)
            return p.withUnsafeBytes { raw in out.withUnsafeMutableBytes { crypto.unprotect(raw, into: $0) } } != nil
        }.count
    }

    @Test("kicked: what the relay sends bob from 200 ms after the kick on is unreadable with the key mallory kept; bob hears every packet across the change", arguments: ["kick", "leave", "timeout"])
    func departedMemberReadsNothing(how: String) throws {
        let net = FakeNetwork(encrypted: true)
        let alice = net.addClient("alice"), bob = net.addClient("bob"), mallory = net.addClient("mallory")
        net.joinAll()
        net.advance(milliseconds: 1_000) { alice.speak(level: 20) }
        let kept = try #require(mallory.crypto)
        #expect(try #require(bob.media[alice.ssrc]).count == 50)
        let start = net.sent.count
        switch how {
        case "kick": #expect(net.core.kick(room: "lobby", identity: "mallory", now: net.now) == .ok)
        case "leave":
            _ = mallory.session.leave(now: net.instant)
            net.exchange()
        default: mallory.online = false  // silent: the relay times it out
        }
        if how == "timeout" {
            net.advance(milliseconds: net.core.config.memberTimeout.milliseconds + 1_000, stepMilliseconds: 20) { alice.speak(level: 20) }
        }
        #expect(net.core.member(identity: "mallory") == nil, "mallory is still a member")
        net.advance(milliseconds: 200, stepMilliseconds: 20) { alice.speak(level: 20) }
        let afterChange = net.sent.count
        net.advance(milliseconds: 5_000, stepMilliseconds: 20) { alice.speak(level: 20) }
        let late = Self.media(net, to: bob.address, from: afterChange)
        #expect(late.count == 250)
        #expect(Self.opened(late, with: kept) == 0, "mallory read what bob was sent after the key changed")
        _ = start
        // Bob lost nothing across the change: every packet alice sent since the start reached him and opened.
        #expect(bob.rejectedMedia == 0)
        let sent = alice.sentMedia.count
        #expect(bob.media[alice.ssrc]?.count == sent, "bob heard \(bob.media[alice.ssrc]?.count ?? 0) of \(sent)")
        #expect(net.core.rooms["lobby"]?.downstreamKeyID == 1)
    }

    @Test("departures close together share one change; one a second later makes another; a joiner during a change gets both keys and hears everything")
    func departuresAndJoiners() throws {
        let net = FakeNetwork(encrypted: true)
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        let leavers = (0..<5).map { net.addClient("leaver-\($0)") }
        net.joinAll()
        net.advance(milliseconds: 200) { alice.speak(level: 20) }
        for l in leavers.prefix(3) { _ = l.session.leave(now: net.instant) }
        net.exchange()
        net.advance(milliseconds: 300) { alice.speak(level: 20) }
        #expect(net.core.rooms["lobby"]?.downstreamKeyID == 1, "three departures at once: one change")
        // Two more leave within the second: they wait for the spacing, then one change for both.
        for l in leavers.dropFirst(3) { _ = l.session.leave(now: net.instant) }
        net.exchange()
        net.advance(milliseconds: 300) { alice.speak(level: 20) }
        #expect(net.core.rooms["lobby"]?.downstreamKeyID == 1)
        net.advance(milliseconds: 1_000) { alice.speak(level: 20) }
        #expect(net.core.rooms["lobby"]?.downstreamKeyID == 2)
        #expect(bob.rejectedMedia == 0 && bob.media[alice.ssrc]?.count == alice.sentMedia.count)

        // A joiner while a change is under way: bob's acknowledgement is held back, so the change waits for it.
        let carol = net.addClient("carol")
        net.joinAll()
        bob.dropOutgoing = true
        let dave = net.addClient("dave")
        net.joinAll()
        _ = dave.session.leave(now: net.instant)
        net.exchange()
        net.advance(milliseconds: 1_100) { alice.speak(level: 20) }
        #expect(net.core.rooms["lobby"]?.keyChange?.next != nil && net.core.rooms["lobby"]?.downstreamKeyID == 2,
                "the next key went out and waits for bob")
        let frank = net.addClient("frank")
        net.joinAll()
        #expect(frank.events.contains { if case .roomKey = $0 { true } else { false } }, "the joiner was not given the next key")
        bob.dropOutgoing = false
        net.advance(milliseconds: 3_000) { alice.speak(level: 20) }
        #expect(net.core.rooms["lobby"]?.downstreamKeyID == 3)
        for listener in [carol, frank] {
            #expect(listener.rejectedMedia == 0, "\(listener.identity) could not open \(listener.rejectedMedia) packets")
        }
        #expect((frank.media[alice.ssrc]?.count ?? 0) >= 145, "frank heard \(frank.media[alice.ssrc]?.count ?? 0) of 150")
    }

    @Test("a mix room has no shared key: departures change nothing")
    func mixRoomHasNoKey() throws {
        let net = FakeNetwork(encrypted: true)
        #expect(net.core.createRoom(name: "mixed", mode: .mix, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        let alice = net.addClient("alice", room: "mixed"), bob = net.addClient("bob", room: "mixed")
        net.joinAll()
        _ = bob.session.leave(now: net.instant)
        net.advance(milliseconds: 2_000) { alice.speak(level: 20) }
        #expect(net.core.rooms["mixed"]?.downstreamKeyID == 0 && net.core.roomKeys.changing.isEmpty)
    }
}
