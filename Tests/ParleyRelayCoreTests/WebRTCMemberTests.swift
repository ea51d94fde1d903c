import ParleyCrypto
import ParleyMedia
import ParleyWire
import Testing
@testable import ParleyRelayCore
@testable import ParleyWebRTC

/// WebRTC members through the core (RelayCore+WebRTC.swift): ICE-lite checks (RFC 8445 §2.5, RFC 8489 MESSAGE-INTEGRITY),
/// consent (RFC 7675), DTLS-SRTP with the relay as server (RFC 5763/5764), and the order of trust between them — a check
/// latches the address, only a latched address reaches OpenSSL, only a finished handshake lets media flow either way.
///
/// The peer's DTLS is OpenSSL's: its randomness makes handshake bytes differ from run to run, so those tests assert
/// properties (sizes, first bytes, what decrypts); everything the core draws itself comes from the seeded generator.
@Suite("WebRTC members: ICE-lite checks, DTLS-SRTP, media both ways, consent and setup timers")
struct WebRTCMemberTests {
    static let browser = PeerAddress(ipv4: 198, 51, 100, 7, port: 50_000)
    static let browserV6 = PeerAddress(high: 0x2001_0DB8_0000_0000, low: 0x0000_0000_0000_0007, port: 50_006)
    static let stranger = PeerAddress(ipv4: 203, 0, 113, 66, port: 4_444)

    /// A relay with a certificate and a forward room `lobby`.
    func world(seed: UInt64 = 13) -> FakeNetwork {
        let net = FakeNetwork(seed: seed, webrtc: true)
        #expect(net.core.createRoom(name: "lobby", mode: .forward, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        return net
    }

    /// The peer joined, checked (latched) and through its handshake.
    func connected(_ net: FakeNetwork, _ peer: FakeWebRTCPeer, terms: WebRTCOfferTerms? = nil) throws -> WebRTCMemberInfo {
        let info = try peer.join(net, terms: terms)
        peer.check(net, useCandidate: true)
        #expect(peer.drain(net).count == 1)
        #expect(try peer.handshake(net))
        return info
    }

    func member(_ net: FakeNetwork, _ identity: String = "browser") -> MemberSnapshot? {
        net.core.snapshot().first { $0.name == "lobby" }?.members.first { $0.identity == identity }
    }

    /// What a datagram is by its first byte (RFC 7983).
    static func isSTUN(_ d: [UInt8]) -> Bool { d[0] <= 3 }
    static func isDTLS(_ d: [UInt8]) -> Bool { (20...63).contains(d[0]) }
    static func isRTPOrRTCP(_ d: [UInt8]) -> Bool { (128...191).contains(d[0]) }
    static func isRTP(_ d: [UInt8]) -> Bool { isRTPOrRTCP(d) && d.withUnsafeBytes { !isRTCP($0) } }

    // MARK: 1. The check that passes

    @Test("a check with USERNAME relay:peer and MESSAGE-INTEGRITY under the relay's ice-pwd gets a Binding success: the sender's address, the same key, no larger than the request; the address is latched",
          arguments: [WebRTCMemberTests.browser, WebRTCMemberTests.browserV6])
    func goodCheck(from address: PeerAddress) throws {
        let net = world()
        let peer = try FakeWebRTCPeer(address: address)
        let info = try peer.join(net)
        #expect(info.port == 7400 && info.identity == "browser")
        // RFC 8839 §5.4: ice-char only, at least 4 and 22 characters.
        let iceChars = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        #expect(info.iceUfrag.count == 8 && info.icePassword.count == 24)
        #expect(info.iceUfrag.allSatisfy(iceChars.contains) && info.icePassword.allSatisfy(iceChars.contains))
        #expect(member(net)?.transport == "webrtc" && member(net)?.address == PeerAddress(ipv4: 0, port: 0))

        let request = peer.check(net)
        let replies = peer.drain(net)
        let reply = try #require(replies.first)
        #expect(replies.count == 1)
        let response = try reply.withUnsafeBytes { try STUNBindingResponse(parsing: $0) }
        #expect(response.isSuccess && response.errorCode == nil)
        #expect(response.transactionID == Array(request[8..<20]))
        #expect(response.mappedAddress == address)
        #expect(reply.withUnsafeBytes { response.hasValidIntegrity(key: peer.relayPassword, in: $0) })
        #expect(!reply.withUnsafeBytes { response.hasValidIntegrity(key: Array("not the relay's password 0".utf8), in: $0) })
        #expect(response.hasFingerprint)
        // No amplification: 64 bytes (IPv4) or 76 (IPv6) for a request of at least 80.
        #expect(reply.count == STUNWriter.bindingSuccessSize(mapped: address) && reply.count <= request.count)
        // From the worker's port: the answer's candidate.
        #expect(net.sent.last.map { $0.to == address && $0.worker == 0 && !$0.viaPublic } == true)
        #expect(member(net)?.address == address)
        // The relay checks the address back: USERNAME peer:relay, ICE-CONTROLLED, MESSAGE-INTEGRITY under the offer's
        // ice-pwd; the answer proves the address and starts consent.
        let relayCheck = try #require(peer.relayChecks.first)
        #expect(peer.relayChecks.count == 1 && peer.answered == 1)
        let parsed = try relayCheck.withUnsafeBytes { try STUNBindingRequest(parsing: $0) }
        #expect(parsed.username == "pEeR:\(info.iceUfrag)" && parsed.iceControlled != nil && parsed.iceControlling == nil)
        #expect(parsed.priority == WebRTCMembers.checkPriority && !parsed.useCandidate)
        #expect(relayCheck.withUnsafeBytes { parsed.hasValidIntegrity(key: Array(peer.password.utf8), in: $0) })
        #expect(reply.count + relayCheck.count <= 3 * request.count, "more than three times what the address sent before it answered")
        let m = try #require(net.core.member(identity: "browser"))
        #expect(m.endpoint?.rtpSource == address && m.webrtc?.proven == address && m.webrtc?.lastConsent == net.instant)
        #expect(net.core.counters.drops(.stunRejected) == 0)
        // Nothing else went anywhere: no DTLS (the relay is passive), no media before keys.
        #expect(peer.received.count == 2 && net.undelivered.isEmpty)
    }

    // MARK: 2. Checks that get nothing

    /// Checks and look-alikes that must get no reply and be counted `stun_rejected`.
    enum BadCheck: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case wrongPassword = "MESSAGE-INTEGRITY under another password"
        case unknownUfrag = "USERNAME naming no member's ufrag (right password)"
        case wrongRemoteHalf = "the member's ufrag with another remote half"
        case remoteHalfPrefix = "the remote half cut short (a prefix of the right one)"
        case noColon = "USERNAME without a colon"
        case noIntegrity = "no MESSAGE-INTEGRITY"
        case noPriority = "no PRIORITY (MESSAGE-INTEGRITY valid)"
        case noRole = "neither ICE-CONTROLLING nor ICE-CONTROLLED (MESSAGE-INTEGRITY valid)"
        case tampered = "PRIORITY changed after MESSAGE-INTEGRITY was computed (FINGERPRINT recomputed)"
        case badFingerprint = "a valid check whose FINGERPRINT is wrong"
        case bindingResponse = "a Binding success response under the right password"
        case garbage0 = "garbage starting with 0x00"
        case garbage1 = "garbage starting with 0x01"
        case garbage2 = "garbage starting with 0x02"
        case garbage3 = "garbage starting with 0x03"
        case truncated = "a valid check cut to its 20-byte header"
        case otherMembersAddress = "a correct check from another member's address"

        var testDescription: String { rawValue }

        /// Why the relay must not answer: the test checks the datagram fails for this reason and no other.
        enum Why { case notSTUNRequest, notACheck, integrity, username, address }

        var why: Why {
            switch self {
            case .badFingerprint, .bindingResponse, .garbage0, .garbage1, .garbage2, .garbage3, .truncated: .notSTUNRequest
            case .noIntegrity, .noPriority, .noRole: .notACheck
            case .wrongPassword, .tampered: .integrity
            case .unknownUfrag, .wrongRemoteHalf, .remoteHalfPrefix, .noColon: .username
            case .otherMembersAddress: .address
            }
        }

        /// The datagram and where it comes from.
        func datagram(_ peer: FakeWebRTCPeer, alice: FakeClient) -> (bytes: [UInt8], from: PeerAddress) {
            let name = "\(peer.info.iceUfrag):\(peer.ufrag)"
            func built(_ attributes: [(UInt16, [UInt8])], key: [UInt8]? = peer.relayPassword, tamperAt: Int? = nil) -> [UInt8] {
                STUNCheckBuilder(attributes: attributes, integrityKey: key, tamperAt: tamperAt).bytes
            }
            func garbage(_ first: UInt8) -> [UInt8] {
                [first] + (1..<96).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            }
            switch self {
            case .wrongPassword: return (peer.checkBytes(password: Array("a-password-nobody-was-given".utf8)), peer.address)
            case .unknownUfrag: return (peer.checkBytes(username: "zzzzzzzz:\(peer.ufrag)"), peer.address)
            case .wrongRemoteHalf: return (peer.checkBytes(username: "\(peer.info.iceUfrag):other"), peer.address)
            case .remoteHalfPrefix: return (peer.checkBytes(username: "\(peer.info.iceUfrag):\(peer.ufrag.dropLast())"), peer.address)
            case .noColon: return (peer.checkBytes(username: peer.info.iceUfrag + peer.ufrag), peer.address)
            case .noIntegrity: return (built(STUNCheckBuilder.checkAttributes(username: name), key: nil), peer.address)
            case .noPriority: return (built(STUNCheckBuilder.checkAttributes(username: name, priority: false)), peer.address)
            case .noRole: return (built(STUNCheckBuilder.checkAttributes(username: name, role: false)), peer.address)
            case .tampered:
                // USERNAME (13 bytes, padded to 16) is a 20-byte TLV after the 20-byte header: PRIORITY's value is at 44.
                return (built(STUNCheckBuilder.checkAttributes(username: name), tamperAt: 44), peer.address)
            case .badFingerprint:
                var bytes = peer.checkBytes()
                bytes[bytes.count - 1] ^= 0x80
                return (bytes, peer.address)
            case .bindingResponse:
                var bytes = [UInt8](repeating: 0, count: STUNWriter.maxResponseSize)
                let n = bytes.withUnsafeMutableBytes {
                    STUNWriter.bindingSuccess(transactionID: [UInt8](repeating: 9, count: 12), mapped: peer.address,
                                              integrityKey: peer.relayPassword, into: $0)
                }
                return (Array(bytes.prefix(n)), peer.address)
            case .garbage0: return (garbage(0), peer.address)
            case .garbage1: return (garbage(1), peer.address)
            case .garbage2: return (garbage(2), peer.address)
            case .garbage3: return (garbage(3), peer.address)
            case .truncated: return (Array(peer.checkBytes().prefix(20)), peer.address)
            case .otherMembersAddress: return (peer.checkBytes(), alice.address)
            }
        }
    }

    @Test("a check the relay must not answer: no reply, counted stun_rejected, nothing latched", arguments: BadCheck.allCases)
    func badCheck(_ bad: BadCheck) throws {
        let net = world()
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        try peer.join(net)
        net.exchange()
        let (bytes, from) = bad.datagram(peer, alice: alice)
        #expect(Self.isSTUN(bytes))
        // It fails for the reason named, and only that one.
        let parsed = bytes.withUnsafeBytes { try? STUNBindingRequest(parsing: $0) }
        let intact = parsed.map { r in bytes.withUnsafeBytes { r.hasValidIntegrity(key: peer.relayPassword, in: $0) } } ?? false
        switch bad.why {
        case .notSTUNRequest: #expect(parsed == nil)
        case .notACheck: #expect(parsed.map { !$0.isConnectivityCheck } == true)
        case .integrity: #expect(parsed?.isConnectivityCheck == true && !intact)
        case .username: #expect(parsed?.isConnectivityCheck == true && intact && parsed?.username != "\(peer.info.iceUfrag):\(peer.ufrag)")
        case .address: #expect(parsed?.isConnectivityCheck == true && intact && from != peer.address)
        }
        let rejectedBefore = net.core.counters.drops(.stunRejected)
        net.deliverToRelay(bytes, from: from, port: 7400)
        #expect(net.inFlight.isEmpty, "the relay answered")
        #expect(net.core.counters.drops(.stunRejected) == rejectedBefore + 1)
        let m = try #require(net.core.member(identity: "browser"))
        #expect(m.endpoint?.rtpSource == nil && m.webrtc?.lastConsent == nil)
        #expect(member(net)?.address == PeerAddress(ipv4: 0, port: 0))
        // The address that is alice's stays alice's.
        #expect(net.core.sessions.member(at: alice.address)?.identity == "alice")
        // And the member's real check still works afterwards.
        peer.check(net)
        #expect(peer.drain(net).count == 1 && member(net)?.address == Self.browser)
    }

    @Test("the attack: a member's correct check sent from an online identity's (presence) address takes that address from nobody")
    func checkFromPresenceAddress() throws {
        let world = CallWorld(webrtc: true)
        let net = world.net
        #expect(net.core.createRoom(name: "lobby", mode: .forward, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        let carol = world.addPresence("carol")
        world.registerAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        try peer.join(net)
        // The browser holds its own ICE password; with a spoofed source it could point its member at carol's address.
        // Before the fix only members' addresses were refused: carol's presence session lost its address to the member.
        net.deliverToRelay(peer.checkBytes(useCandidate: true), from: carol.address, port: 7400)
        #expect(net.inFlight.isEmpty, "the relay answered")
        #expect(net.core.counters.drops(.stunRejected) == 1)
        guard case .presence(let p)? = net.core.sessions.byAddress[carol.address] else {
            Issue.record("carol's address no longer leads to her presence session")
            return
        }
        #expect(p.identity == "carol")
        #expect(try #require(net.core.member(identity: "browser")).endpoint?.rtpSource == nil)
    }

    @Test("a check from a second address is answered, but moves the member only when it nominates (USE-CANDIDATE)")
    func secondAddress() throws {
        let net = world()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        try peer.join(net)
        peer.check(net)
        peer.drain(net)
        let other = PeerAddress(ipv4: 198, 51, 100, 7, port: 50_002)
        net.deliverToRelay(peer.checkBytes(), from: other, port: 7400)
        #expect(net.inFlight.count == 1 && net.inFlight.first?.to == other)
        #expect(member(net)?.address == Self.browser)
        net.deliverToRelay(peer.checkBytes(useCandidate: true), from: other, port: 7400)
        #expect(member(net)?.address == other)
        // The old address is forgotten: its DTLS is now an unchecked address's.
        #expect(net.core.sessions.member(at: Self.browser) == nil)
        net.exchange()
        net.undelivered.removeAll()
    }

    @Test("once connected, a nominated check from elsewhere (a replayed capture, or the member's own forged one) moves nothing, and SRTP from there does not either; the address the browser really moved to answers the relay's check and the media follows")
    func connectedMoveNeedsAnswer() throws {
        let net = world()
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        _ = try connected(net, peer)
        let attacker = PeerAddress(ipv4: 203, 0, 113, 66, port: 40_000)
        // A check the browser sent, captured and replayed from the attacker's address: answered (it holds the
        // integrity), checked back, but the member stays where it is and media keeps going there.
        net.deliverToRelay(peer.checkBytes(useCandidate: true), from: attacker, port: 7400)
        #expect(member(net)?.address == Self.browser)
        let checkToAttacker = try #require(net.inFlight.first { $0.to == attacker && FakeWebRTCPeer.isBindingRequest($0.bytes) }?.bytes)
        // SRTP under the member's keys from there (the member itself forging its source): taken, but moves nothing.
        net.deliverToRelay(try peer.protect(peer.plainRTP(level: 20)), from: attacker, port: 7400)
        #expect(member(net)?.address == Self.browser)
        net.inFlight.removeAll()
        alice.speak(level: 20)
        net.exchange()
        #expect(net.undelivered.contains { $0.to == Self.browser && Self.isRTPOrRTCP($0.bytes) })
        #expect(!net.undelivered.contains { $0.to == attacker && Self.isRTPOrRTCP($0.bytes) })
        // It never answers: after the checks its forged bytes paid for, the relay forgets the address.
        #expect(net.core.sessions.member(at: attacker) != nil)
        net.advance(milliseconds: 300)
        #expect(net.core.sessions.member(at: attacker) == nil, "an address that never answered is forgotten")
        // An answer from the attacker's address to a transaction it never saw, or under another password: dropped.
        var guessed = try #require(peer.answer(checkToAttacker))
        guessed[8] ^= 0xFF  // another transaction ID (MESSAGE-INTEGRITY then fails too, as it covers the header)
        let rejected = net.core.counters.drops(.stunRejected)
        net.deliverToRelay(guessed, from: attacker, port: 7400)
        #expect(member(net)?.address == Self.browser && net.core.counters.drops(.stunRejected) == rejected + 1)
        // Nor the right answer, once the trial is over.
        net.deliverToRelay(try #require(peer.answer(checkToAttacker)), from: attacker, port: 7400)
        #expect(member(net)?.address == Self.browser && net.core.counters.drops(.stunRejected) == rejected + 2)
        net.undelivered.removeAll()
        // The browser itself moves (a new network): the relay checks the new address, its answer moves the media.
        let moved = PeerAddress(ipv4: 198, 51, 100, 9, port: 50_010)
        net.deliverToRelay(peer.checkBytes(useCandidate: true), from: moved, port: 7400)
        #expect(member(net)?.address == Self.browser)
        let checkToMoved = try #require(net.inFlight.first { $0.to == moved && FakeWebRTCPeer.isBindingRequest($0.bytes) }?.bytes)
        net.deliverToRelay(try #require(peer.answer(checkToMoved)), from: moved, port: 7400)
        #expect(member(net)?.address == moved)
        #expect(net.core.sessions.member(at: Self.browser) == nil && net.core.sessions.member(at: attacker) == nil)
        net.undelivered.removeAll()
    }

    @Test("the reflection attack (issue 33, finding 2): a connected member forges a nominated check and SRTP from a victim's address; in 65 s of a speaker the victim gets at most three times the bytes forged at it, and no media")
    func noReflectionAfterHandshake() throws {
        let net = world()
        net.tickOnlyWhenDue = true
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        _ = try connected(net, peer)
        let victim = PeerAddress(ipv4: 192, 0, 2, 99, port: 9)
        var forged = 0
        let check = peer.checkBytes(useCandidate: true)
        net.deliverToRelay(check, from: victim, port: 7400)
        forged += check.count
        let srtp = try peer.protect(peer.plainRTP(level: 20))
        net.deliverToRelay(srtp, from: victim, port: 7400)
        // Then a forged check every 25 s, as the review's attack kept consent with.
        var step = 0
        net.advance(milliseconds: 65_000, stepMilliseconds: 20) {
            alice.speak(level: 20)
            if step % 1_250 == 1_249 {
                let again = peer.checkBytes(useCandidate: true)
                net.deliverToRelay(again, from: victim, port: 7400)
                forged += again.count
            }
            if step % 5 == 0 { peer.drain(net) }  // the browser answers the relay's consent checks at its own address
            step += 1
        }
        let toVictim = net.sent.filter { $0.to == victim }
        let bytes = toVictim.reduce(0) { $0 + $1.bytes.count }
        #expect(bytes <= 3 * forged, "the victim got \(bytes) bytes for \(forged) forged")
        #expect(toVictim.allSatisfy { Self.isSTUN($0.bytes) }, "media or DTLS went to the victim")
        #expect(member(net)?.address == Self.browser)
        #expect(peer.media.count > 3_000, "the browser kept hearing alice: \(peer.media.count) packets")
        net.undelivered.removeAll()
    }

    @Test("the first flight is not reflected (issue 33, finding 9): a nominated check and ClientHellos forged from a victim before any handshake get the victim at most three times the forged bytes and no DTLS; the real browser's address then proves itself and connects")
    func noReflectionBeforeHandshake() throws {
        let net = world()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        try peer.join(net)
        let victim = PeerAddress(ipv4: 192, 0, 2, 99, port: 9)
        peer.dtls.start()
        let hello = try #require(peer.dtls.takeOutgoing().first)
        var forged = 0
        for _ in 0..<5 {
            let check = peer.checkBytes(useCandidate: true)
            net.deliverToRelay(check, from: victim, port: 7400)
            net.deliverToRelay(hello, from: victim, port: 7400)
            forged += check.count  // only the check is authenticated; the ClientHello earns nothing
            net.advance(milliseconds: 3_000, stepMilliseconds: 50)
        }
        let toVictim = net.sent.filter { $0.to == victim }
        let bytes = toVictim.reduce(0) { $0 + $1.bytes.count }
        #expect(bytes <= 3 * forged, "the victim got \(bytes) bytes for \(forged) forged")
        #expect(!toVictim.contains { Self.isDTLS($0.bytes) }, "a DTLS flight went to an address that never answered")
        net.undelivered.removeAll()
        // The browser's own nominated check moves the latch; its answer proves the address, the flight held for the
        // ClientHello goes there, and the handshake completes.
        peer.check(net, useCandidate: true)
        #expect(try peer.handshake(net))
        #expect(member(net)?.address == Self.browser)
    }

    @Test("a browser that receives on three sections gets one track per forwarding slot: three speakers at once, each on a track of its own for as long as it is forwarded; a fourth takes a freed slot")
    func oneTrackPerSlot() throws {
        let net = world()
        let speakers = ["ann", "ben", "cat", "dan"].map { net.addClient($0) }
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        let info = try connected(net, peer, terms: peer.terms(publish: false, slots: 3))
        #expect(info.sendSSRCs.count == 3 && Set(info.sendSSRCs).count == 3)
        peer.drain(net)
        // Three speak together for 2 s.
        net.advance(milliseconds: 2_000, stepMilliseconds: 20) { for s in speakers.prefix(3) { s.speak(level: 20) } }
        peer.drain(net)
        func heard() -> [(ssrc: UInt32, csrc: UInt32, sequence: UInt16)] {
            peer.media.compactMap { p in
                p.withUnsafeBytes { raw -> (UInt32, UInt32, UInt16)? in
                    guard let v = try? RTPPacketView(parsing: raw), v.csrcCount == 1 else { return nil }
                    return (v.ssrc, v.csrc(at: 0), v.sequenceNumber)
                }
            }
        }
        var tracks: [UInt32: Set<UInt32>] = [:]
        for h in heard() { tracks[h.ssrc, default: []].insert(h.csrc) }
        #expect(Set(tracks.keys) == Set(info.sendSSRCs), "\(tracks)")
        #expect(tracks.values.allSatisfy { $0.count == 1 }, "a track carried two speakers: \(tracks)")
        #expect(Set(tracks.values.flatMap { $0 }) == Set(speakers.prefix(3).map(\.ssrc)))
        // Each track's numbering is continuous.
        for ssrc in info.sendSSRCs {
            let seqs = heard().filter { $0.ssrc == ssrc }.map(\.sequence)
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "track \(ssrc)")
        }
        // ann stops; dan speaks with ben and cat: once ann is no longer forwarded, dan takes ann's track.
        let annTrack = try #require(tracks.first { $0.value == [speakers[0].ssrc] }?.key)
        peer.media.removeAll()
        net.advance(milliseconds: 3_000, stepMilliseconds: 20) { for s in speakers.dropFirst() { s.speak(level: 20) } }
        peer.drain(net)
        let later = heard()
        #expect(later.contains { $0.ssrc == annTrack && $0.csrc == speakers[3].ssrc }, "dan never took ann's track")
        let others = Set(later.filter { $0.ssrc != annTrack }.map(\.csrc))
        #expect(others == [speakers[1].ssrc, speakers[2].ssrc], "ben and cat kept their tracks: \(others)")
        #expect(peer.unreadable == 0)
    }

    // MARK: 3. DTLS before a check

    @Test("DTLS from an address that passed no check is dropped as dtls_unchecked_address and OpenSSL never sees it")
    func dtlsFromUncheckedAddress() throws {
        let net = world()
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        try peer.join(net)
        peer.dtls.start()
        let hello = try #require(peer.dtls.takeOutgoing().first)
        #expect(hello.withUnsafeBytes { DTLSSession.startsWithClientHello($0) })
        // A stranger, a native member's address, and the browser's own address before its check.
        for from in [Self.stranger, alice.address, Self.browser] {
            net.deliverToRelay(hello, from: from, port: 7400)
            #expect(net.inFlight.isEmpty)
        }
        #expect(net.core.counters.drops(.dtlsUncheckedAddress) == 3)
        let dtls = try #require(net.core.member(identity: "browser")?.webrtc?.dtls)
        #expect(dtls.state == .new && dtls.handshakeDatagrams == 0 && dtls.takeOutgoing().isEmpty)
        // Once checked, the same ClientHello starts the handshake: the relay answers with its flight.
        peer.check(net)
        peer.drain(net)
        net.deliverToRelay(hello, from: Self.browser, port: 7400)
        #expect(net.inFlight.count >= 1 && net.inFlight.allSatisfy { Self.isDTLS($0.bytes) && $0.to == Self.browser })
        #expect(dtls.state == .handshaking)
        net.exchange()
        net.undelivered.removeAll()
    }

    @Test("from the checked address, a DTLS record that is not a ClientHello starts nothing: dtls_rejected, no reply")
    func dtlsNotAClientHello() throws {
        let net = world()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        try peer.join(net)
        peer.check(net)
        peer.drain(net)
        // A ChangeCipherSpec record (type 20) and an application-data record of epoch 1 (type 23).
        let records: [[UInt8]] = [
            [20, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1],
            [23, 0xFE, 0xFD, 0, 1, 0, 0, 0, 0, 0, 0, 0, 32] + [UInt8](repeating: 0xEE, count: 32),
        ]
        for r in records {
            net.deliverToRelay(r, from: Self.browser, port: 7400)
            #expect(net.inFlight.isEmpty)
        }
        #expect(net.core.counters.drops(.dtlsRejected) == 2)
        #expect(try #require(net.core.member(identity: "browser")?.webrtc?.dtls).state == .new)
        // The real handshake still completes.
        #expect(try peer.handshake(net))
    }

    // MARK: 4. The full path

    @Test("check, DTLS handshake, then the browser's RTP reaches a Parley member and that member's speech reaches the browser as one SRTP stream with the offer's payload type and level id",
          arguments: [[SRTPProfile.aeadAes256Gcm, .aeadAes128Gcm, .aes128CmHmacSha1_80], [.aeadAes128Gcm, .aes128CmHmacSha1_80],
                      [.aes128CmHmacSha1_80]])
    func fullPath(profiles: [SRTPProfile]) throws {
        let net = world()
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser, srtpProfiles: profiles)
        let info = try connected(net, peer)
        let stream = try #require(info.sendSSRC)
        #expect(info.cname == net.core.relayCNAME)
        // The relay prefers AES-256-GCM (its own SRTP), then AES-128-GCM; SHA1_80 when that is all the browser offers.
        let expected: SRTPProfile = profiles.contains(.aeadAes256Gcm) ? .aeadAes256Gcm
            : profiles.contains(.aeadAes128Gcm) ? .aeadAes128Gcm : .aes128CmHmacSha1_80
        #expect(peer.dtls.keys?.profile == expected && peer.dtlsEvents.last == .connected)
        #expect(peer.received.allSatisfy { Self.isSTUN($0) || (Self.isDTLS($0) && $0.count <= DTLSSession.mtu) })
        let m = try #require(net.core.member(identity: "browser"))
        #expect(m.endpointSRTP?.toEndpoint.profile == FakeWebRTCPeer.libsrtpProfile(expected))
        #expect(alice.memberEvents.contains { $0.0 == .joined && $0.1 == "browser" })

        // The browser speaks: its SSRC (not the one the relay assigned) is adopted; alice hears every packet, across
        // the sequence wrap, payload untouched.
        var spoken: [[UInt8]] = []
        for _ in 0..<10 { spoken.append(try peer.speak(net)) }
        net.exchange()
        #expect(alice.media[peer.ssrc]?.count == 10)
        #expect(alice.media[peer.ssrc] == [65_530, 65_531, 65_532, 65_533, 65_534, 65_535, 0, 1, 2, 3])
        let heardByAlice = alice.received.filter { $0.withUnsafeBytes { (try? RTPPacketView(parsing: $0))?.ssrc } == peer.ssrc }
        #expect(heardByAlice == spoken)
        #expect(net.core.counters.drops(.ssrcMismatch) == 0 && net.core.counters.drops(.srtpRejected) == 0)

        // Alice speaks: the browser gets one stream, its payload type and level id, alice as the CSRC.
        peer.drain(net)
        net.advance(milliseconds: 400) { alice.speak(level: 20) }
        peer.drain(net)
        #expect(peer.unreadable == 0)
        let aliceSent = alice.sentMedia.compactMap { $0.withUnsafeBytes { (try? RTPPacketView(parsing: $0)).map { Array($0.payload) } } }
        #expect(aliceSent.count == 20)
        #expect(peer.media.count == aliceSent.count)
        var previous: UInt16?
        for (k, bytes) in peer.media.enumerated() {
            try bytes.withUnsafeBytes { raw in
                let p = try RTPPacketView(parsing: raw)
                #expect(p.ssrc == stream && p.payloadType == 109)
                #expect(p.csrcCount == 1 && p.csrc(at: 0) == alice.ssrc)
                #expect(p.audioLevel(id: 5) == AudioLevel(voice: true, level: 20))
                // No CSRC-level element (RFC 6465, id 3 on plain-RTP endpoints) and nothing at the ids the relay uses elsewhere.
                #expect((1...14).filter { p.extensionElement(id: UInt8($0)) != nil } == [5])
                #expect(Array(p.payload) == aliceSent[k])
                if let previous { #expect(p.sequenceNumber == previous &+ 1) }
                previous = p.sequenceNumber
            }
        }
        // Its RTCP (sender reports for its stream, receiver reports about its own) decrypts too.
        #expect(!peer.rtcp.isEmpty && peer.unreadable == 0)
    }

    @Test("a browser that sends SRTCP before its first RTP still has its own SSRC adopted")
    func rtcpBeforeRTP() throws {
        let net = world()
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        _ = try connected(net, peer)
        net.deliverToRelay(try peer.protect(peer.plainReceiverReport(), rtcp: true), from: Self.browser, port: 7400)
        net.exchange()
        #expect(net.core.counters.drops(.srtpRejected) == 0 && net.core.counters.drops(.ssrcMismatch) == 0)
        for _ in 0..<3 { try peer.speak(net) }
        net.exchange()
        #expect(alice.media[peer.ssrc]?.count == 3)
        #expect(net.core.counters.drops(.ssrcMismatch) == 0)
    }

    @Test("offer terms are the member's own: another payload type, no level extension — the stream has no extension at all")
    func termsWithoutLevel() throws {
        let net = world()
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        _ = try connected(net, peer, terms: peer.terms(payloadType: 111, levelID: nil, publish: false))
        net.advance(milliseconds: 200) { alice.speak(level: 20) }
        peer.drain(net)
        #expect(peer.media.count == 10 && peer.unreadable == 0)
        for bytes in peer.media {
            let p = try bytes.withUnsafeBytes { try RTPPacketView(parsing: $0) }
            #expect(p.payloadType == 111 && !p.hasExtension && p.csrc(at: 0) == alice.ssrc)
        }
        // A listener only: what it sends is not taken.
        _ = try peer.speak(net)
        net.exchange()
        #expect(alice.media[peer.ssrc] == nil && net.core.counters.drops(.notPublisher) == 1)
    }

    @Test("a browser's NACK is answered with the very SRTP packet it first got, byte for byte — under AES-256-GCM (the relay's own SRTP, which protects an index again only over the same bytes) and under libsrtp's profiles",
          arguments: [SRTPProfile.aeadAes256Gcm, .aeadAes128Gcm, .aes128CmHmacSha1_80])
    func nackAnsweredIdentically(profile: SRTPProfile) throws {
        let net = world()
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser, srtpProfiles: [profile])
        let info = try connected(net, peer)
        peer.drain(net)
        net.advance(milliseconds: 200) { alice.speak(level: 20) }
        let first = peer.drain(net).filter { Self.isRTP($0) }
        #expect(first.count == 10 && peer.unreadable == 0)
        func sequence(_ d: [UInt8]) -> UInt16 { UInt16(d[2]) << 8 | UInt16(d[3]) }
        // The first (marked: alice's stream starts there) and the fifth.
        #expect(first[0][1] & 0x80 != 0 && first[4][1] & 0x80 == 0)
        let nack = GenericNACK(senderSSRC: peer.ssrc, mediaSSRC: try #require(info.sendSSRC), lost: [sequence(first[0]), sequence(first[4])])
        var bytes = [UInt8](repeating: 0, count: 64)
        let n = try bytes.withUnsafeMutableBytes { try nack.serialize(into: $0) }
        net.deliverToRelay(try peer.protect(Array(bytes[0..<n]), rtcp: true), from: Self.browser, port: 7400)
        let resent = peer.drain(net).filter { Self.isRTP($0) }
        #expect(resent == [first[0], first[4]])
        #expect(net.core.counters.nacksAnswered == 2 && net.core.counters.nacksMissed == 0)
    }

    @Test("in a mix room the browser gets the mix as its offer negotiated it: its payload type (Firefox's 109), the speakers as CSRCs, no RFC 6465 element at the relay's id; it decodes to the speaker's tone")
    func mixAsNegotiated() throws {
        let net = FakeNetwork(seed: 13, webrtc: true)
        #expect(net.core.createRoom(name: "lobby", mode: .mix, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        let alice = net.addClient("alice", token: net.token("alice", room: "lobby", mode: "mix"))
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        let info = try connected(net, peer, terms: peer.terms(payloadType: 109, levelID: 1, publish: false))
        let tone = try ToneMember(alice, frequency: 440)
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { try? tone.send() }
        peer.drain(net)
        #expect(peer.media.count >= 40 && peer.unreadable == 0)
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
        var heard: [Int16] = []
        var previous: UInt16?
        for bytes in peer.media {
            try bytes.withUnsafeBytes { raw in
                let p = try RTPPacketView(parsing: raw)
                #expect(p.payloadType == 109 && p.ssrc == info.sendSSRC)
                #expect(!p.hasExtension)
                #expect(p.csrcCount == 1 && p.csrc(at: 0) == alice.ssrc)
                if let previous { #expect(p.sequenceNumber == previous &+ 1) }
                previous = p.sequenceNumber
                var pcm = [Int16](repeating: 0, count: 960)
                let n = try pcm.withUnsafeMutableBufferPointer { try decoder.decode(p.payload, into: $0) }
                heard += pcm.prefix(n)
            }
        }
        #expect(toneShare(Array(heard.suffix(24_000)), frequency: 440) > 0.5)
        // Alice speaks alone: her packets were forwarded into the mix as they came (MixEngine+LoneSpeaker), rewritten
        // for the browser like any mix packet.
        #expect((net.core.rooms["lobby"]?.mix?.loneForwarded ?? 0) >= 40)
    }

    // MARK: 5. Before the handshake

    @Test("before the handshake completes, RTP and RTCP from the latched address are dropped as srtp_not_ready and nothing is sent to the member")
    func beforeHandshake() throws {
        let net = world()
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        try peer.join(net)
        peer.check(net, useCandidate: true)
        #expect(peer.drain(net).count == 1)
        // What a browser might send early, clear or with a made-up tag: neither reaches anyone.
        net.deliverToRelay(peer.plainRTP(level: 10), from: Self.browser, port: 7400)
        net.deliverToRelay(peer.plainRTP(level: 10) + [UInt8](repeating: 0xAB, count: 10), from: Self.browser, port: 7400)
        net.deliverToRelay(peer.plainReceiverReport(), from: Self.browser, port: 7400)
        #expect(net.inFlight.isEmpty)
        #expect(net.core.counters.drops(.srtpNotReady) == 3)
        net.exchange()
        #expect(alice.media.isEmpty)
        // Alice speaks for two seconds (reports fall due, the stream would start): nothing goes to the browser.
        net.advance(milliseconds: 2_000) { alice.speak(level: 20) }
        #expect(peer.drain(net).isEmpty)
        let m = try #require(net.core.member(identity: "browser"))
        #expect(m.stats.packetsIn == 0 && m.stats.packetsOut == 0 && m.endpointSRTP == nil)
        // A ClientHello starts the handshake; until its end, still nothing but DTLS goes out.
        peer.dtls.start()
        for d in peer.dtls.takeOutgoing() { net.deliverToRelay(d, from: Self.browser, port: 7400) }
        net.advance(milliseconds: 200) { alice.speak(level: 20) }
        let flight = peer.drain(net)
        #expect(!flight.isEmpty && flight.allSatisfy(Self.isDTLS))
        for d in flight { peer.dtlsEvents.append(d.withUnsafeBytes { peer.dtls.receive($0) }) }
        #expect(try peer.handshake(net))
        // Keys: the stream starts.
        net.advance(milliseconds: 200) { alice.speak(level: 20) }
        peer.drain(net)
        #expect(peer.media.count == 10 && peer.unreadable == 0)
    }

    // MARK: 6. The wrong certificate

    @Test("a handshake whose client certificate is not the offered fingerprint removes the member; nothing but STUN and DTLS ever went to it")
    func wrongCertificate() throws {
        let net = world()
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        let offered = try DTLSCertificate(now: FakeNetwork.startUnixMilliseconds / 1000).fingerprint
        try peer.join(net, terms: peer.terms(fingerprint: offered))
        peer.check(net, useCandidate: true)
        net.advance(milliseconds: 200) { alice.speak(level: 20) }
        #expect(try !peer.handshake(net))
        net.advance(milliseconds: 200) { alice.speak(level: 20) }
        peer.drain(net)
        // The relay refused the certificate when it came: a bad_certificate alert, never its Finished.
        #expect(peer.dtls.state == .failed)
        #expect(peer.dtls.failure?.reason.contains("bad certificate") == true, "\(String(describing: peer.dtls.failure))")
        #expect(net.core.member(identity: "browser") == nil && member(net) == nil)
        #expect(alice.memberEvents.contains { $0.0 == .left && $0.1 == "browser" })
        #expect(net.core.counters.drops(.dtlsRejected) == 1)
        #expect(peer.received.allSatisfy { Self.isSTUN($0) || Self.isDTLS($0) })
        #expect(peer.media.isEmpty && peer.unreadable == 0)
        // Its credentials are gone with it: a check gets nothing.
        let rejected = net.core.counters.drops(.stunRejected)
        peer.check(net)
        #expect(net.inFlight.isEmpty && net.core.counters.drops(.stunRejected) == rejected + 1)
        #expect(net.core.sessions.byICEUfrag.isEmpty && net.core.sessions.member(at: Self.browser) == nil)
    }

    // MARK: 7. Timers

    @Test("no check within setupTimeout: the member is removed (the loop wakes for it)")
    func setupTimeoutWithoutCheck() throws {
        let net = world()
        net.tickOnlyWhenDue = true
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        try peer.join(net)
        let setup = WebRTCTransport.setupTimeout.milliseconds
        net.advance(milliseconds: setup - 100, stepMilliseconds: 100)
        #expect(member(net) != nil)
        net.advance(milliseconds: 200, stepMilliseconds: 100)
        #expect(member(net) == nil && net.core.sessions.byICEUfrag.isEmpty)
        #expect(alice.memberEvents.contains { $0.0 == .left && $0.1 == "browser" })
    }

    @Test("checks every 5 s but no DTLS: removed at setupTimeout all the same")
    func setupTimeoutWithChecks() throws {
        let net = world()
        net.tickOnlyWhenDue = true
        let peer = try FakeWebRTCPeer(address: Self.browser)
        try peer.join(net)
        var step = 0
        let checkEvery5s = { if step % 50 == 0 { peer.check(net) }; step += 1 }
        net.advance(milliseconds: WebRTCTransport.setupTimeout.milliseconds - 100, stepMilliseconds: 100, each: checkEvery5s)
        #expect(member(net)?.address == Self.browser)
        net.advance(milliseconds: 200, stepMilliseconds: 100, each: checkEvery5s)
        #expect(member(net) == nil)
        #expect(peer.drain(net).allSatisfy(Self.isSTUN))
    }

    @Test("connected, then no answer to the relay's consent checks for consentTimeout (30 s): removed")
    func consentLapses() throws {
        let net = world()
        net.tickOnlyWhenDue = true
        let peer = try FakeWebRTCPeer(address: Self.browser)
        _ = try connected(net, peer)
        let consent = WebRTCTransport.consentTimeout.milliseconds
        #expect(consent == 30_000)
        net.advance(milliseconds: consent - 100, stepMilliseconds: 100)
        #expect(member(net) != nil)
        net.advance(milliseconds: 200, stepMilliseconds: 100)
        #expect(member(net) == nil && net.core.memberCount == 0)
    }

    @Test("consent is the answers to the relay's checks (RFC 7675), every 4–6 s: answering keeps a member 60 s without media; then the browser's own checks every 5 s — which a forged source can send — keep nothing: removed 30 s after its last answer")
    func consentKept() throws {
        let net = world()
        net.tickOnlyWhenDue = true
        let peer = try FakeWebRTCPeer(address: Self.browser)
        _ = try connected(net, peer)
        let before = peer.relayChecks.count
        net.advance(milliseconds: 60_000, stepMilliseconds: 100) { peer.drain(net) }
        #expect(member(net)?.address == Self.browser)
        let consentChecks = peer.relayChecks.count - before
        #expect((10...15).contains(consentChecks), "\(consentChecks) consent checks in 60 s")
        peer.answersChecks = false
        let lastAnswer = try #require(net.core.member(identity: "browser")?.webrtc?.lastConsent)
        var step = 0
        let checkEvery5s = {
            if step % 50 == 0 { peer.check(net) }
            step += 1
            peer.drain(net)
        }
        net.advance(milliseconds: (lastAnswer + .milliseconds(29_900) - net.instant).milliseconds, stepMilliseconds: 100, each: checkEvery5s)
        #expect(member(net) != nil)
        net.advance(milliseconds: 300, stepMilliseconds: 100, each: checkEvery5s)
        #expect(member(net) == nil)
    }

    // MARK: 8. Ending a session

    @Test("deleteWebRTCMember sends a DTLS close_notify (the browser sees .closed) and removes the member")
    func deleteSendsCloseNotify() throws {
        let net = world()
        let alice = net.addClient("alice")
        net.joinAll()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        _ = try connected(net, peer)
        net.advance(milliseconds: 200) { alice.speak(level: 20) }
        peer.drain(net)
        #expect(net.core.deleteWebRTCMember(room: "lobby", identity: "browser", now: net.now) == .ok)
        let last = peer.drain(net)
        let alerts = last.filter(Self.isDTLS)
        #expect(alerts.count == 1)
        #expect(alerts.map { d in d.withUnsafeBytes { peer.dtls.receive($0) } } == [.closed])
        #expect(peer.dtls.state == .closed)
        // Whatever else went (the stream's BYE) was SRTP the browser could read.
        #expect(last.allSatisfy { Self.isDTLS($0) || Self.isRTPOrRTCP($0) } && peer.unreadable == 0)
        #expect(member(net) == nil && net.core.sessions.byICEUfrag.isEmpty)
        #expect(alice.memberEvents.contains { $0.0 == .left && $0.1 == "browser" })
        #expect(net.core.deleteWebRTCMember(room: "lobby", identity: "browser", now: net.now) == .notFound("browser has no WebRTC session in room lobby"))
        // A native member is not the WebRTC route's to end.
        #expect(net.core.deleteWebRTCMember(room: "lobby", identity: "alice", now: net.now) == .notFound("alice has no WebRTC session in room lobby"))
        #expect(member(net, "alice") != nil)
    }

    @Test("a kick or the room closing also ends the browser's DTLS with a close_notify", arguments: ["kick", "close"])
    func removalSendsCloseNotify(how: String) throws {
        let net = world()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        _ = try connected(net, peer)
        peer.drain(net)
        if how == "kick" {
            #expect(net.core.kick(room: "lobby", identity: "browser", now: net.now) == .ok)
        } else {
            #expect(net.core.closeRoom(name: "lobby", reason: "closed by the backend", now: net.now) == .ok)
        }
        let alerts = peer.drain(net).filter(Self.isDTLS)
        #expect(alerts.map { d in d.withUnsafeBytes { peer.dtls.receive($0) } } == [.closed])
        #expect(member(net) == nil)
    }

    @Test("deleting a member that never checked sends nothing anywhere")
    func deleteBeforeCheck() throws {
        let net = world()
        let peer = try FakeWebRTCPeer(address: Self.browser)
        try peer.join(net)
        #expect(net.core.deleteWebRTCMember(room: "lobby", identity: "browser", now: net.now) == .ok)
        net.exchange()
        #expect(net.undelivered.isEmpty && member(net) == nil)
    }

    // MARK: Creation

    @Test("refusals: no certificate, an inactive offer, a room that does not exist and may not be created")
    func createRefusals() throws {
        let peer = try FakeWebRTCPeer(address: Self.browser)
        let plain = FakeNetwork()
        #expect(plain.core.createRoom(name: "lobby", mode: .forward, maxMembers: nil, emptyTimeout: nil, now: plain.now) == .ok)
        #expect(plain.core.createWebRTCMember(room: "lobby", identity: "b", displayName: nil, createMode: nil, terms: peer.terms(),
                                              now: plain.now) == .unavailable("the relay has no DTLS certificate (OpenSSL failed at start)"))
        let net = world()
        if case .invalid = net.core.createWebRTCMember(room: "lobby", identity: "b", displayName: nil, createMode: nil,
                                                       terms: peer.terms(publish: false, subscribe: false), now: net.now) {} else {
            Issue.record("an inactive offer was taken")
        }
        if case .notFound = net.core.createWebRTCMember(room: "nowhere", identity: "b", displayName: nil, createMode: nil,
                                                        terms: peer.terms(), now: net.now) {} else {
            Issue.record("a room was opened without the create grant")
        }
        #expect(net.core.memberCount == 0 && net.core.roomCount == 1)
        if case .webRTCMember = net.core.createWebRTCMember(room: "opened", identity: "b", displayName: nil, createMode: .mix,
                                                            terms: peer.terms(), now: net.now) {} else {
            Issue.record("the create grant did not open the room")
        }
        #expect(net.core.snapshot().first { $0.name == "opened" }?.mode == .mix)
    }

    @Test("the same identity again replaces the first session: its credentials stop working")
    func replaced() throws {
        let net = world()
        let first = try FakeWebRTCPeer(address: Self.browser)
        _ = try connected(net, first)
        let second = try FakeWebRTCPeer(address: PeerAddress(ipv4: 198, 51, 100, 8, port: 50_000), ufrag: "Sec0")
        let info = try second.join(net)
        #expect(info.iceUfrag != first.info.iceUfrag && info.memberID != first.info.memberID)
        first.check(net)
        #expect(net.inFlight.isEmpty && net.core.counters.drops(.stunRejected) == 1)
        #expect(net.core.memberCount == 1)
        second.check(net)
        #expect(second.drain(net).count == 1)
    }

    // MARK: 9. Determinism

    @Test("the same seed gives the same credentials, SSRCs and STUN answers; the DTLS bytes differ, their shape does not")
    func determinism() throws {
        var infos: [WebRTCMemberInfo] = [], answers: [[UInt8]] = [], sizes: [[Int]] = [], firstFlights: [[UInt8]] = []
        for _ in 0..<2 {
            let net = world(seed: 99)
            let peer = try FakeWebRTCPeer(address: Self.browser)
            let info = try peer.join(net)
            infos.append(info)
            peer.check(net)
            answers.append(try #require(peer.drain(net).first))
            #expect(try peer.handshake(net))
            let dtls = peer.received.filter(Self.isDTLS)
            sizes.append(dtls.map(\.count))
            firstFlights.append(try #require(dtls.first))
            #expect(dtls.allSatisfy { $0.count <= DTLSSession.mtu })
        }
        #expect(infos[0] == infos[1])
        #expect(answers[0] == answers[1])
        // OpenSSL's randoms (server random, ECDHE share, signature) differ; the flights' structure does not.
        #expect(firstFlights[0] != firstFlights[1])
        #expect(sizes[0].count == sizes[1].count)
        let other = world(seed: 100)
        let info = try FakeWebRTCPeer(address: Self.browser).join(other)
        #expect(info.iceUfrag != infos[0].iceUfrag && info.icePassword != infos[0].icePassword)
    }
}
