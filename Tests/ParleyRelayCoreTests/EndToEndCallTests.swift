import Foundation
import ParleyAuth
import ParleyClientCore
import ParleyCrypto
import ParleyMedia
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// End-to-end encrypted calls through the relay core: the relay carries the two key shares unread, forwards the
/// sealed Opus payloads, and holds nothing that opens them; the callee opens and decodes them.
@Suite("End-to-end calls: shares through the relay, payloads it cannot decode")
struct EndToEndCallTests {
    /// 20 ms of a voice-like test signal (two partials and a slow vibrato), frame `index`.
    static func source(_ index: Int) -> [Int16] {
        (0..<960).map { i in
            let t = Double(index * 960 + i) / 48_000
            let f = 220 + 30 * sin(2 * Double.pi * 3 * t)
            return Int16(6_000 * sin(2 * Double.pi * f * t) + 3_000 * sin(2 * Double.pi * 2.5 * f * t))
        }
    }

    /// Pearson correlation of two equally long signals; 0 when either is silent.
    static func correlation(_ a: [Int16], _ b: [Int16]) -> Double {
        let n = min(a.count, b.count)
        guard n > 0 else { return 0 }
        let x = a.prefix(n).map(Double.init), y = b.prefix(n).map(Double.init)
        let mx = x.reduce(0, +) / Double(n), my = y.reduce(0, +) / Double(n)
        var sxy = 0.0, sxx = 0.0, syy = 0.0
        for i in 0..<n { sxy += (x[i] - mx) * (y[i] - my); sxx += (x[i] - mx) * (x[i] - mx); syy += (y[i] - my) * (y[i] - my) }
        guard sxx > 0, syy > 0 else { return 0 }
        return sxy / (sxx * syy).squareRoot()
    }

    /// The best correlation of `decoded` against the source over the codec's possible delays (0…20 ms).
    static func bestCorrelation(_ decoded: [Int16], _ original: [Int16]) -> Double {
        stride(from: 0, through: 960, by: 8).map { lag in
            guard decoded.count > lag else { return 0 }
            return abs(correlation(Array(decoded[lag...]), original))
        }.max() ?? 0
    }

    /// Decodes each payload in turn; payloads the decoder refuses count as errors and add no audio.
    static func decode(_ payloads: [[UInt8]]) throws -> (audio: [Int16], errors: Int) {
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
        var audio: [Int16] = [], errors = 0
        var pcm = [Int16](repeating: 0, count: 5_760)
        for p in payloads {
            let n = p.withUnsafeBytes { raw in pcm.withUnsafeMutableBufferPointer { try? decoder.decode(raw, into: $0) } }
            if let n { audio += pcm.prefix(n) } else { errors += 1; audio += [Int16](repeating: 0, count: 960) }
        }
        return (audio, errors)
    }

    static func payload(_ datagram: [UInt8]) -> [UInt8]? {
        datagram.withUnsafeBytes { raw in
            guard let p = try? RTPPacketView(parsing: raw) else { return nil }
            return Array(raw[p.payloadOffset..<(p.payloadOffset + p.payloadCount)])
        }
    }

    @Test("the shares travel unchanged through the relay; both sides agree one key and one safety code; the relay's view of the call's media does not decode, the callee's does")
    func endToEndThroughTheRelay() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice"), bob = world.addPresence("bob")
        world.registerAll()
        let aliceKeys = CallKeyAgreement(role: .caller), bobKeys = CallKeyAgreement(role: .callee)
        let aliceID = try #require(alice.session.call("bob", keyShare: aliceKeys.share, now: world.net.instant))
        world.exchange()
        let bobID = try #require(bob.incoming.last?.0)
        #expect(bob.session.calls[bobID]?.peerKeyShare == aliceKeys.share)
        bob.session.answer(bobID, accept: true, keyShare: bobKeys.share, now: world.net.instant)
        world.exchange()
        #expect(alice.session.calls[aliceID]?.peerKeyShare == bobKeys.share)
        let a = try #require(alice.answered(aliceID)), b = try #require(bob.answered(bobID))

        let aliceCall = try aliceKeys.agree(peerShare: try #require(alice.session.calls[aliceID]?.peerKeyShare),
                                            callerIdentity: "alice", calleeIdentity: "bob", room: a.room)
        let bobCall = try bobKeys.agree(peerShare: try #require(bob.session.calls[bobID]?.peerKeyShare),
                                        callerIdentity: "alice", calleeIdentity: "bob", room: b.room)
        #expect(aliceCall.safetyCode == bobCall.safetyCode)
        // What the relay saw of the key agreement is the two public shares; neither frame key nor anything
        // derived from the Diffie-Hellman result ever crossed it.
        let relaySaw = alice.sentToRelay + bob.sentToRelay + world.net.sent.map(\.bytes)
        #expect(relaySaw.contains { $0.contains(subsequence: aliceKeys.share) } && relaySaw.contains { $0.contains(subsequence: bobKeys.share) })
        for key in [aliceCall.sendKey, aliceCall.receiveKey] {
            #expect(!relaySaw.contains { $0.contains(subsequence: Array(key.prefix(8))) })
        }
        // The relay holding a key pair of its own agrees with alice's share to a different key, and a different code.
        let relayGuess = try CallKeyAgreement(role: .callee).agree(peerShare: aliceKeys.share, callerIdentity: "alice",
                                                                   calleeIdentity: "bob", room: a.room)
        #expect(relayGuess.receiveKey != aliceCall.sendKey && relayGuess.safetyCode != aliceCall.safetyCode)

        // Both join the call room; alice talks with her payloads sealed.
        let aliceMedia = world.net.addClient("alice", room: a.room, token: a.token)
        let bobMedia = world.net.addClient("bob", room: b.room, token: b.token)
        world.net.joinAll()
        #expect(aliceMedia.session.state == .joined && bobMedia.session.state == .joined)
        var random = SeededRandomNumberGenerator(seed: 5)
        let sender = try SendPipeline(ssrc: aliceMedia.ssrc, dtx: false, random: &random)
        sender.endToEnd = aliceCall.frameCipher()
        let frames = 50
        var original: [Int16] = []
        for i in 0..<frames {
            let frame = Self.source(i)
            original += frame
            let packet = try #require(frame.withUnsafeBufferPointer { sender.packetize($0, level: 20, voice: true).map(Array.init) })
            aliceMedia.pendingMedia.append(packet)
        }
        world.net.exchange()

        // The relay's view: the datagrams it forwarded to bob.
        let forwarded = world.net.sent.filter { $0.to == bobMedia.address && $0.bytes.first != Signalling.magic }.map(\.bytes)
            .compactMap(Self.payload)
        #expect(forwarded.count == frames)
        #expect(bobMedia.received.count == frames)
        let relayView = try Self.decode(forwarded)
        let relayCorrelation = Self.bestCorrelation(relayView.audio, original)

        // The callee's view: opened, then decoded.
        let bobCipher = bobCall.frameCipher()
        let opened = try bobMedia.received.compactMap(Self.payload).map { try bobCipher.open($0) }
        let bobView = try Self.decode(opened)
        let bobCorrelation = Self.bestCorrelation(bobView.audio, original)
        // Measured here: bob 0.82, the relay 0.05 (libopus accepted all 50 sealed payloads as packets: it decodes noise).
        #expect(bobView.errors == 0 && bobCorrelation > 0.6, "bob hears alice (correlation \(bobCorrelation))")
        #expect(relayView.errors > frames / 2 || relayCorrelation < 0.2,
                "the relay's copy is an error or noise (errors \(relayView.errors)/\(frames), correlation \(relayCorrelation))")
        #expect(relayCorrelation < 0.2)
        // Every forwarded payload is ciphertext: no Opus frame of the cleartext stream appears in it.
        #expect(zip(forwarded, opened).allSatisfy { f, o in o.count >= 8 && !f.contains(subsequence: Array(o.prefix(8))) })
        // The relay never reads a share: the call's end-to-end state lives only at the clients.
        #expect(world.core.callSnapshot().count == 1)
    }

    @Test("a caller without a share (an old client): the callee hears of it as an empty share, and the call still connects")
    func oldClient() throws {
        let world = CallWorld()
        let (alice, bob, aliceID, bobID) = try world.aliceRingsBob()
        #expect(bob.session.calls[bobID]?.peerKeyShare == [])
        world.answer(bob, bobID)
        #expect(alice.answered(aliceID) != nil && alice.session.calls[aliceID]?.peerKeyShare == [])
    }

    @Test("only the answering device's share reaches the caller; the callee's own answered status carries none")
    func sharesGoOneWay() throws {
        let world = CallWorld()
        let alice = world.addPresence("alice"), bob = world.addPresence("bob")
        world.registerAll()
        let aliceID = try #require(alice.session.call("bob", keyShare: [UInt8](repeating: 0xAA, count: 32), now: world.net.instant))
        world.exchange()
        let bobID = try #require(bob.incoming.last?.0)
        bob.session.answer(bobID, accept: true, keyShare: [UInt8](repeating: 0xBB, count: 32), now: world.net.instant)
        world.exchange()
        #expect(alice.session.calls[aliceID]?.peerKeyShare == [UInt8](repeating: 0xBB, count: 32))
        #expect(bob.session.calls[bobID]?.peerKeyShare == [UInt8](repeating: 0xAA, count: 32))
        let toBob = world.net.sent.filter { $0.to == bob.address }.map(\.bytes)
        let toAlice = world.net.sent.filter { $0.to == alice.address }.map(\.bytes)
        #expect(toBob.contains { $0.contains(subsequence: [UInt8](repeating: 0xAA, count: 32)) })
        #expect(!toBob.contains { $0.contains(subsequence: [UInt8](repeating: 0xBB, count: 32)) })
        #expect(toAlice.contains { $0.contains(subsequence: [UInt8](repeating: 0xBB, count: 32)) })
        #expect(!toAlice.contains { $0.contains(subsequence: [UInt8](repeating: 0xAA, count: 32)) })
    }
}

@Suite("End-to-end rooms: an e2ee token is refused in a mix room")
struct EndToEndRoomTests {
    static func token(_ net: FakeNetwork, _ identity: String, room: String, mode: String?, e2ee: Bool?) -> String {
        TokenSigner(apiKey: "devkey", apiSecret: FakeNetwork.apiSecret).mint(
            TokenClaims(identity: identity, room: room, expiresAt: net.now.unixSeconds + 3600, grants: Grants(), mode: mode, endToEnd: e2ee))
    }

    @Test("creating a mix room with an e2ee token is refused (50), and no room is left behind")
    func createRefused() {
        let net = FakeNetwork()
        let eve = net.addClient("eve", room: "mixed", token: Self.token(net, "eve", room: "mixed", mode: "mix", e2ee: true))
        net.joinAll()
        guard case .refused(let code, let reason)? = eve.events.last else { Issue.record("not refused: \(eve.events)"); return }
        #expect(code == .endToEndInMixRoom && code.rawValue == 50)
        #expect(reason.contains("mix room") && reason.contains("cannot be end-to-end encrypted"))
        #expect(net.core.snapshot().isEmpty)
        #expect(net.core.counters.joinsRefused[50] == 1)
    }

    @Test("joining an existing mix room with an e2ee token is refused; an e2ee token in a forward room, and a plain one in the mix room, are admitted")
    func joinRefused() {
        let net = FakeNetwork()
        let plain = net.addClient("ann", room: "mixed", token: Self.token(net, "ann", room: "mixed", mode: "mix", e2ee: nil))
        let fwd = net.addClient("bea", room: "fwd", token: Self.token(net, "bea", room: "fwd", mode: "forward", e2ee: true))
        net.joinAll()
        #expect(plain.session.state == .joined && fwd.session.state == .joined)
        let late = net.addClient("cid", room: "mixed", token: Self.token(net, "cid", room: "mixed", mode: nil, e2ee: true))
        net.joinAll()
        #expect(late.events.contains { if case .refused(.endToEndInMixRoom, _) = $0 { true } else { false } })
        #expect(net.core.snapshot().first { $0.name == "mixed" }?.members.count == 1)
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes.
    fileprivate func contains(subsequence needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { self[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
