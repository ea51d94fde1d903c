import ParleyAuth
import ParleyClientCore
import ParleyCrypto
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// The encrypted protocol through the core (issue 15): handshake, sealed signalling, SRTP both ways, and each attack
/// the issue names — a wrong relay key, tampered and replayed datagrams, an old cleartext client — dropped, counted,
/// and answered with no more bytes than it carried.
@Suite("Encryption: Noise handshake, sealed signalling, SRTP")
struct EncryptionTests {
    /// Whether `needle` occurs in `haystack`.
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return true }
        }
        return false
    }

    /// Every datagram both ways so far (what a capture on the path holds).
    static func wire(_ net: FakeNetwork) -> [[UInt8]] {
        net.sent.map(\.bytes) + net.clients.flatMap(\.sentToRelay) + net.clients.flatMap(\.sentMedia)
    }

    @Test("members join, talk and text through sealed signalling and SRTP; the path sees no token, name, text or payload")
    func nothingReadableOnThePath() throws {
        let net = FakeNetwork(encrypted: true)
        let alice = net.addClient("alice", room: "secret-garden"), bob = net.addClient("bob", room: "secret-garden")
        net.joinAll()
        #expect(alice.session.state == .joined && bob.session.state == .joined)
        #expect(alice.crypto != nil && bob.crypto != nil)
        #expect(net.core.counters.handshakes == 2)
        for _ in 0..<10 { alice.speak(level: 20); net.advance(milliseconds: 20) }
        #expect(bob.media[alice.ssrc]?.count == 10)
        #expect(bob.rejectedMedia == 0)
        // What bob decrypted is what alice sent before SRTP: the payload pattern `rtp(level:)` writes.
        let heard = try #require(bob.received.last)
        let view = try heard.withUnsafeBytes { try RTPPacketView(parsing: $0) }
        #expect(view.payloadCount == 60)
        let text = "meet at the old mill at nine"
        _ = alice.session.sendText(text, now: net.instant)
        net.advance(milliseconds: 100)
        #expect(bob.events.contains(.text(from: "alice", direct: false, text: text)))

        let wire = Self.wire(net)
        let token = net.token("alice", room: "secret-garden")
        let secrets: [(String, [UInt8])] = [("the token's signature", Array(token.split(separator: ".").last!.utf8)),
                                            ("the room name", Array("secret-garden".utf8)), ("an identity", Array("alice".utf8)),
                                            ("the text", Array(text.utf8))]
        for (what, bytes) in secrets {
            #expect(!wire.contains { Self.contains($0, bytes) }, "\(what) is readable on the path")
        }
        // The payload pattern (bytes 12… of the plaintext, `UInt8(truncatingIfNeeded: i)`) never appears.
        let pattern = (40..<56).map { UInt8(truncatingIfNeeded: $0) }
        #expect(!wire.contains { Self.contains($0, pattern) }, "an RTP payload is readable on the path")
    }

    @Test("an old cleartext client is told encryption is required, in no more bytes than it sent; nothing else is answered")
    func cleartextIsRefused() throws {
        let net = FakeNetwork(encrypted: true)
        let join = try SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: .join(JoinRequest(
            token: net.token("mallory"), room: "lobby", nonce: [UInt8](repeating: 1, count: 16)))).serialized()
        let from = PeerAddress(ipv4: 203, 0, 113, 5, port: 4000)
        net.deliverToRelay(join, from: from, port: 7400)
        let answers = net.inFlight.filter { $0.to == from }
        let answer = try #require(answers.first)
        #expect(answers.count == 1 && answer.bytes.count <= join.count)
        let refusal = try SignalDatagram(parsing: answer.bytes)
        guard case .refused(.encryptionRequired, _) = refusal.message else { Issue.record("not refused: \(refusal.message)"); return }
        #expect(net.core.counters.drops(.cleartext) == 1)
        #expect(net.core.memberCount == 0)
        // A cleartext ping naming a session is dropped unanswered.
        let ping = try SignalDatagram(connectionID: 7, sequence: 0, ack: 0, message: .ping(timestamp: 1)).serialized()
        net.inFlight.removeAll()
        net.deliverToRelay(ping, from: from, port: 7400)
        #expect(net.inFlight.isEmpty)
        #expect(net.core.counters.drops(.cleartext) == 2)
    }

    @Test("a client pinned to another relay key refuses the relay (and sends it no token)")
    func wrongRelayKey() throws {
        let net = FakeNetwork(encrypted: true)
        let other = X25519KeyPair()
        let session = ClientSession(server: net.publicAddress, token: net.token("alice"), room: "lobby",
                                    security: .encrypted(relayKey: other.publicKey), now: net.instant,
                                    unixMilliseconds: { net.now.unixMilliseconds })
        let client = FakeClient(identity: "alice", address: PeerAddress(ipv4: 192, 168, 9, 9, port: 9999), session: session)
        net.clients.append(client)
        net.joinAll()
        guard case .ended(let reason) = session.state else { Issue.record("still \(session.state)"); return }
        #expect(reason.contains(Base64URL.encode(other.publicKey)))
        #expect(client.events.contains { if case .relayUnproven = $0 { true } else { false } })
        // It sent a hello and nothing else: no initiation, so the token never left.
        #expect(client.sentToRelay.count == 1 && client.sentToRelay[0].count == SignallingEnvelope.helloSize)
        #expect(net.core.counters.handshakes == 0)
    }

    @Test("an initiation replayed from another address gets only a cookie; repeated from its own, the cached response")
    func initiationReplay() throws {
        let net = FakeNetwork(encrypted: true)
        let alice = net.addClient("alice")
        net.joinAll()
        let initiation = try #require(alice.sentToRelay.first { $0.count > 2 && $0[1] == 2 && $0[2] == SignallingEnvelope.Kind.initiation.rawValue })
        // From another address: the cookie is not for it.
        let mallory = PeerAddress(ipv4: 203, 0, 113, 7, port: 5000)
        net.inFlight.removeAll()
        net.deliverToRelay(initiation, from: mallory, port: 7400)
        let answers = net.inFlight.filter { $0.to == mallory }
        #expect(answers.count == 1 && answers[0].bytes.count <= initiation.count)
        #expect(answers[0].bytes[2] == SignallingEnvelope.Kind.cookie.rawValue)
        #expect(net.core.counters.handshakes == 1)
        #expect(net.core.memberCount == 1)
        // From alice's address (her response was lost): the same response, no second Diffie-Hellman, no new session.
        let response = try #require(net.sent.first { $0.to == alice.address && $0.bytes[2] == SignallingEnvelope.Kind.response.rawValue })
        net.inFlight.removeAll()
        net.deliverToRelay(initiation, from: alice.address, port: 7400)
        #expect(net.inFlight.map(\.bytes) == [response.bytes])
        #expect(net.core.counters.handshakes == 1)
        #expect(alice.session.state == .joined)
        // Once the response is forgotten, a replay from her address costs a handshake but cannot replace her session.
        net.core.admission.handshakeResponses.removeAll()
        let member = try #require(net.core.member(identity: "alice"))
        net.inFlight.removeAll()
        net.deliverToRelay(initiation, from: alice.address, port: 7400)
        #expect(net.core.counters.drops(.sealedReplayed) == 1)
        #expect(net.core.member(identity: "alice") === member)
        net.exchange()
        net.advance(milliseconds: 200)
        #expect(alice.session.state == .joined)
    }

    @Test("tampered and replayed sealed signalling is dropped and counted; the session is untouched")
    func sealedTamperAndReplay() throws {
        let net = FakeNetwork(encrypted: true)
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        alice.dropOutgoing = true  // the text is captured on its way, not delivered
        _ = alice.session.sendText("hello", now: net.instant)
        net.exchange()
        alice.dropOutgoing = false
        let sealed = try #require(alice.sentToRelay.last { $0[1] == 2 && $0[2] == SignallingEnvelope.Kind.sealed.rawValue })
        var tampered = sealed
        tampered[tampered.count - 20] ^= 0x01
        net.deliverToRelay(tampered, from: alice.address, port: alice.session.destination.port)
        #expect(net.core.counters.drops(.sealedRejected) == 1)
        net.deliverToRelay(sealed, from: alice.address, port: alice.session.destination.port)  // the original: taken
        net.deliverToRelay(sealed, from: alice.address, port: alice.session.destination.port)  // again: a replay
        #expect(net.core.counters.drops(.sealedReplayed) == 1)
        // Alice's session lives on and bob got the text once.
        net.advance(milliseconds: 100)
        #expect(bob.events.filter { $0 == .text(from: "alice", direct: false, text: "hello") }.count == 1)
        #expect(alice.session.state == .joined)
    }

    @Test("tampered and replayed SRTP is dropped and counted before it counts as heard or is forwarded")
    func srtpTamperAndReplay() throws {
        let net = FakeNetwork(encrypted: true)
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let packet = alice.rtp(level: 20)
        var tampered = packet
        tampered[tampered.count - 1] ^= 0x80
        let port = alice.session.destination.port
        let member = try #require(net.core.member(identity: "alice"))
        net.deliverToRelay(tampered, from: alice.address, port: port)
        #expect(net.core.counters.drops(.srtpRejected) == 1)
        #expect(member.stats.packetsIn == 0)
        net.deliverToRelay(packet, from: alice.address, port: port)
        net.deliverToRelay(packet, from: alice.address, port: port)
        #expect(net.core.counters.drops(.srtpReplayed) == 1)
        net.exchange()
        #expect(bob.media[alice.ssrc]?.count == 1)
        // A cleartext packet with alice's SSRC from her address does not authenticate either.
        var clear = alice.rtp(level: 20)  // a fresh index, so the replay check does not decide
        clear.removeLast(MediaCrypto.rtpOverhead)
        net.deliverToRelay(clear, from: alice.address, port: port)
        #expect(net.core.counters.drops(.srtpRejected) == 2)
    }

    @Test("a forwarded packet notes the speaker's state for the worker's next prefetch; a dropped one notes nothing")
    func forwardedPacketsNoteHotLines() throws {
        let net = FakeNetwork(encrypted: true)
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let port = alice.session.destination.port
        let member = try #require(net.core.member(identity: "alice"))
        let packet = alice.rtp(level: 20)
        var tampered = packet
        tampered[tampered.count - 1] ^= 0x80
        net.core.hotLines.clear()
        net.deliverToRelay(tampered, from: alice.address, port: port)
        #expect(net.core.hotLines.count == 0)
        net.deliverToRelay(packet, from: alice.address, port: port)
        let perPacket = net.core.hotLines.count
        #expect(perPacket > 20, "the speaker, its SRTP context, the room, its table and key: \(perPacket) lines")
        let speaker = UInt(bitPattern: Unmanaged.passUnretained(member).toOpaque()) & ~63
        #expect((0..<perPacket).contains { net.core.hotLines.lines[$0] == UnsafeRawPointer(bitPattern: speaker) })
        net.deliverToRelay(packet, from: alice.address, port: port)  // replayed: dropped
        #expect(net.core.hotLines.count == perPacket)
        net.deliverToRelay(alice.rtp(level: 20), from: alice.address, port: port)
        // As many again, give or take a line where the next history slot's bytes start in another line.
        #expect(abs(net.core.hotLines.count - 2 * perPacket) <= 2, "\(net.core.hotLines.count) after \(perPacket)")
        net.exchange()
        #expect(bob.media[alice.ssrc]?.count == 2)
    }

    @Test("a mix room encrypts each listener's mix with that listener's own key")
    func mixIsEncryptedPerListener() throws {
        let net = FakeNetwork(encrypted: true)
        let alice = net.addClient("alice", room: "mixroom", token: net.token("alice", room: "mixroom", mode: "mix"))
        let carol = net.addClient("carol", room: "mixroom", token: net.token("carol", room: "mixroom", grants: Grants(publish: false), mode: "mix"))
        net.joinAll()
        #expect(carol.session.welcome?.roomMediaKey.isEmpty == true)
        let tone = try ToneMember(alice, frequency: 440)
        net.advance(milliseconds: 600, stepMilliseconds: 20) { try? tone.send() }
        let listener = try ToneMember(carol, frequency: 440)
        #expect(carol.rejectedMedia == 0)
        try listener.decodeReceived(carol.received)
        #expect(listener.heard.count >= 960 * 10)
        #expect(toneShare(Array(listener.heard.suffix(960 * 10)), frequency: 440) > 0.5)
    }

    @Test("a member resumes from a new address with sealed datagrams, through the challenge")
    func sealedResume() throws {
        let net = FakeNetwork(encrypted: true)
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        for _ in 0..<5 { alice.speak(level: 20); net.advance(milliseconds: 20) }
        alice.address = PeerAddress(ipv4: 198, 51, 100, 9, port: 40_123)
        for _ in 0..<10 { alice.speak(level: 20); net.advance(milliseconds: 20) }
        #expect(net.core.counters.resumes == 1)
        #expect(bob.media[alice.ssrc]?.count == 14)
        #expect(alice.session.state == .joined)
    }

    @Test("a long-lived room forwards any number of speakers over time under its one key: a leaver's stream is retired")
    func downstreamStreamsAreRetired() throws {
        var config = RelayCoreConfig()
        config.maxMembersPerRoom = 3  // the room's key tracks at most 16 streams at once
        let net = FakeNetwork(config: config, encrypted: true)
        let listener = net.addClient("listener")
        net.joinAll()
        for k in 0..<24 {
            let speaker = net.addClient("speaker\(k)")
            net.joinAll()
            speaker.speak(level: 20)
            speaker.speak(level: 20)
            net.advance(milliseconds: 20)
            #expect(listener.media[speaker.ssrc]?.count == 2, "speaker \(k)")
            speaker.session.leave(now: net.instant)
            net.exchange()
            speaker.online = false
        }
        #expect(net.core.counters.drops(.srtpReplayed) == 0)
        let room = try #require(net.core.rooms["lobby"])
        #expect(room.downstream?.retired.count == 24)
    }

    @Test("a listener who joins after a speaker's sequence numbers wrapped decrypts it: the welcome tells where each stream stands (RFC 3711 §3.3.1 rollover counter)")
    func lateJoinerAfterTheWrap() throws {
        let net = FakeNetwork(encrypted: true)
        let alice = net.addClient("alice")
        net.joinAll()
        for _ in 0..<60 { alice.speak(level: 20); net.advance(milliseconds: 20) }  // 65500 → 64: rollover counter 1
        let bob = net.addClient("bob")
        net.joinAll()
        let told = try #require(bob.session.welcome?.streamIndices.first { $0.ssrc == alice.ssrc })
        #expect(told.index >> 16 == 1)
        for _ in 0..<10 { alice.speak(level: 20); net.advance(milliseconds: 20) }
        #expect(bob.media[alice.ssrc]?.count == 10)
        #expect(bob.rejectedMedia == 0)
    }
}
