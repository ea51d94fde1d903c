import ParleyAuth
import ParleyClientCore
import ParleyCrypto
import ParleyMedia
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// A plain-RTP tool speaking SRTP with the keys the relay gave it: protects what it sends with `endpointSends`,
/// unprotects what it receives with `relaySends` (as ffmpeg's `srtp://` does with the API's answer).
final class SRTPTool {
    let rtp: PlainRTPSender
    let keys: RTPEndpointKeys
    let outbound: LibSRTPSession
    let inbound: LibSRTPSession

    init(address: PeerAddress, ssrc: UInt32, keys: RTPEndpointKeys) throws {
        rtp = PlainRTPSender(address: address, ssrc: ssrc)
        self.keys = keys
        outbound = try #require(LibSRTPSession(key: keys.endpointSends, direction: .outbound))
        inbound = try #require(LibSRTPSession(key: keys.relaySends, direction: .inbound))
    }

    /// The next RTP packet, protected.
    func packet() throws -> [UInt8] { try protect(rtp.packet()) }

    func protect(_ clear: [UInt8], rtcp: Bool = false) throws -> [UInt8] {
        var buffer = clear + [UInt8](repeating: 0, count: LibSRTPSession.trailerCapacity)
        let n = try buffer.withUnsafeMutableBytes { b in
            rtcp ? try outbound.protectRTCP(b, length: clear.count) : try outbound.protectRTP(b, length: clear.count)
        }
        return Array(buffer[0..<n])
    }

    /// What the relay sent, decrypted (throws on a packet that does not verify).
    /// The relay's SRTCP to the tool, unprotected.
    func unprotectRTCP(_ srtcp: [UInt8]) throws -> [UInt8] {
        var buffer = srtcp
        let n = try buffer.withUnsafeMutableBytes { b in try inbound.unprotectRTCP(b, length: srtcp.count) }
        return Array(buffer[0..<n])
    }

    func unprotect(_ srtp: [UInt8]) throws -> [UInt8] {
        var buffer = srtp
        let n = try buffer.withUnsafeMutableBytes { b in try inbound.unprotectRTP(b, length: srtp.count) }
        return Array(buffer[0..<n])
    }
}

@Suite("Plain-RTP endpoints over SRTP (SDES, AES_CM_128_HMAC_SHA1_80): accepted, forged and replayed dropped, output protected")
struct SRTPEndpointTests {
    static let tool = PeerAddress(ipv4: 172, 16, 0, 9, port: 40_000)
    static let sink = PeerAddress(ipv4: 172, 16, 0, 9, port: 40_002)

    static func keys(_ seed: UInt8) -> RTPEndpointKeys {
        RTPEndpointKeys(endpointSends: SDESKey(bytes: (0..<30).map { UInt8($0) &+ seed })!,
                        relaySends: SDESKey(bytes: (0..<30).map { UInt8($0) &* 3 &+ seed })!)
    }

    func create(_ net: FakeNetwork, _ identity: String, room: String = "lobby", publish: Bool = true, subscribe: Bool = true,
                source: PeerAddress? = nil, receive: PeerAddress? = nil, keys: RTPEndpointKeys?) -> AdminResult {
        let result = net.core.createRTPEndpoint(room: room, identity: identity, displayName: nil, publish: publish,
                                                subscribe: subscribe, source: source, receive: receive, keys: keys, now: net.now)
        net.exchange()
        return result
    }

    func sentTo(_ net: FakeNetwork, _ address: PeerAddress) -> [[UInt8]] { net.sent.filter { $0.to == address }.map(\.bytes) }

    @Test("the endpoint's SRTP is decrypted and forwarded in the clear to members; forged, tampered, replayed and cleartext packets are dropped and counted")
    func publishOverSRTP() throws {
        let net = FakeNetwork()
        #expect(net.core.createRoom(name: "lobby", mode: .forward, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        let alice = net.addClient("alice")
        net.joinAll()
        let keys = Self.keys(1)
        guard case .rtpEndpoint(let info) = create(net, "cam", subscribe: false, source: Self.tool, keys: keys) else {
            Issue.record("not created"); return
        }
        #expect(info.keys == keys)
        let cam = try SRTPTool(address: Self.tool, ssrc: 0xABCD_0001, keys: keys)
        // A forger without the key, with the tool's address and SSRC: its packets never adopt the SSRC nor reach alice.
        let forger = try SRTPTool(address: Self.tool, ssrc: 0xABCD_0009, keys: Self.keys(2))
        net.deliverToRelay(try forger.packet(), from: Self.tool, port: 7400)
        net.exchange()
        #expect(net.core.counters.drops(.srtpRejected) == 1)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "cam" }?.ssrc == info.ssrc)

        var sent: [[UInt8]] = []
        for _ in 0..<5 {
            let p = try cam.packet()
            sent.append(p)
            net.deliverToRelay(p, from: Self.tool, port: 7400)
            net.exchange()
        }
        #expect(alice.media[0xABCD_0001] == [100, 101, 102, 103, 104])
        // What alice got is the clear RTP: the forwarded copy parses and carries the tool's payload bytes.
        let forwarded = sentTo(net, alice.address).filter { $0.count > 12 && $0[1] & 0x7F == 111 }
        #expect(forwarded.count == 5)
        #expect(forwarded.first.map { Array($0[12...]) } == (12..<72).map { UInt8(truncatingIfNeeded: $0) })

        // Replay: the same bytes again, counted and dropped, not forwarded.
        net.deliverToRelay(sent[2], from: Self.tool, port: 7400)
        net.exchange()
        #expect(net.core.counters.drops(.srtpReplayed) == 1)
        // Tamper: one payload bit flipped.
        var tampered = try cam.packet()
        tampered[20] ^= 0x01
        net.deliverToRelay(tampered, from: Self.tool, port: 7400)
        net.exchange()
        #expect(net.core.counters.drops(.srtpRejected) == 2)
        // Cleartext RTP from the tool's address: no tag, so it does not verify.
        net.deliverToRelay(cam.rtp.packet(), from: Self.tool, port: 7400)
        net.exchange()
        #expect(net.core.counters.drops(.srtpRejected) == 3)
        // Another SSRC after the first: refused before libsrtp sets up a stream for it.
        let other = try SRTPTool(address: Self.tool, ssrc: 0xABCD_0002, keys: keys)
        net.deliverToRelay(try other.packet(), from: Self.tool, port: 7400)
        net.exchange()
        #expect(net.core.counters.drops(.ssrcMismatch) == 1)
        #expect(alice.media[0xABCD_0001]?.count == 5 && alice.media[0xABCD_0002] == nil)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "cam" }?.stats.packetsIn == 5)

        // SRTCP from the endpoint: a sender report is unprotected and noted; a replayed one dropped.
        let sr = SenderReport(ssrc: 0xABCD_0001, ntpTimestamp: 0x0102_0304_0506_0708, rtpTimestamp: 1, packetCount: 5, octetCount: 300, reports: [])
        var clear = [UInt8](repeating: 0, count: sr.serializedSize)
        let n = try clear.withUnsafeMutableBytes { try sr.serialize(into: $0) }
        let srtcp = try cam.protect(Array(clear[0..<n]), rtcp: true)
        net.deliverToRelay(srtcp, from: Self.tool, port: 7400)
        net.exchange()
        let member = try #require(net.core.rooms["lobby"]?.member(identity: "cam"))
        #expect(member.rtcp.lastSenderReport?.ntpMiddle == 0x0304_0506)
        net.deliverToRelay(srtcp, from: Self.tool, port: 7400)
        net.exchange()
        #expect(net.core.counters.drops(.srtpReplayed) == 2)
        #expect(net.core.counters.drops(.malformedRTCP) == 0)
    }

    @Test("what a subscribing SRTP endpoint receives in a forward room decrypts with the relay's key, to the speaker's packet")
    func forwardedMediaIsProtected() throws {
        let net = FakeNetwork()
        #expect(net.core.createRoom(name: "lobby", mode: .forward, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let keys = Self.keys(7)
        guard case .rtpEndpoint = create(net, "rec", publish: false, receive: Self.sink, keys: keys) else { Issue.record("not created"); return }
        let rec = try SRTPTool(address: Self.sink, ssrc: 1, keys: keys)
        net.advance(milliseconds: 200, stepMilliseconds: 20) { alice.speak(level: 20) }
        let got = sentTo(net, Self.sink).filter { b in b.withUnsafeBytes { !isRTCP($0) } }  // its stream's SRTCP aside
        #expect(got.count >= 9)
        let heardByBob = sentTo(net, bob.address).filter { $0.count > 12 && $0[0] & 0xC0 == 0x80 && $0[1] & 0x7F == 111 }
        let payloadsHeardByBob = heardByBob.compactMap { b in b.withUnsafeBytes { (try? RTPPacketView(parsing: $0)).map { Array($0.payload) } } }
        for packet in got {
            #expect(packet.count > 12 + SRTPProtectionProfile.aesCM128HmacSHA1_80.rtpOverhead)
            let clear = try rec.unprotect(packet)
            // The payload bob heard in the clear, byte for byte, on the endpoint's own stream with alice as its CSRC.
            let (payload, csrcs, ssrc) = try clear.withUnsafeBytes { raw in
                let view = try RTPPacketView(parsing: raw)
                return (Array(view.payload), (0..<view.csrcCount).map { view.csrc(at: $0) }, view.ssrc)
            }
            #expect(payloadsHeardByBob.contains(payload))
            #expect(csrcs == [alice.ssrc] && ssrc != alice.ssrc)
        }
        // The wire bytes are not the clear ones (the payload is encrypted).
        #expect(!got.contains { heardByBob.contains($0) })
    }

    @Test("a subscribing SRTP endpoint of a mix room receives the mix protected; decrypted, it decodes to the speaker's tone")
    func mixIsProtected() throws {
        let net = FakeNetwork()
        #expect(net.core.createRoom(name: "mixroom", mode: .mix, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        let alice = net.addClient("alice", room: "mixroom", token: net.token("alice", room: "mixroom", mode: "mix"))
        net.joinAll()
        let keys = Self.keys(9)
        guard case .rtpEndpoint = create(net, "ear", room: "mixroom", publish: false, receive: Self.sink, keys: keys) else {
            Issue.record("not created"); return
        }
        let ear = try SRTPTool(address: Self.sink, ssrc: 1, keys: keys)
        let tone = try ToneMember(alice, frequency: 440)
        net.advance(milliseconds: 1_500, stepMilliseconds: 20) { try? tone.send() }
        let everything = sentTo(net, Self.sink)
        let got = everything.filter { b in b.withUnsafeBytes { !isRTCP($0) } }
        #expect(got.count >= 50)
        // The relay's sender reports about the mix reach it as SRTCP under the same key: SR (mix SSRC) + SDES.
        let reports = try everything.filter { b in b.withUnsafeBytes { isRTCP($0) } }.map { try ear.unprotectRTCP($0) }
        #expect(!reports.isEmpty)
        for report in reports { #expect(rtcpTypes(report) == [200, 202]) }
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
        var heard: [Int16] = []
        for packet in got {
            let clear = try ear.unprotect(packet)
            try clear.withUnsafeBytes { raw in
                let view = try RTPPacketView(parsing: raw)
                #expect(view.payloadType == 111)
                var pcm = [Int16](repeating: 0, count: 960)
                let n = try pcm.withUnsafeMutableBufferPointer { try decoder.decode(view.payload, into: $0) }
                heard += pcm.prefix(n)
            }
        }
        #expect(toneShare(Array(heard.suffix(24_000)), frequency: 440) > 0.5)
    }

    @Test("cleartext endpoints only when asked for and allowed: without keys the relay refuses unless allowCleartext")
    func cleartextNeedsTheSwitch() throws {
        let net = FakeNetwork(encrypted: true)  // the relay's default: no allowCleartext
        #expect(net.core.createRoom(name: "lobby", mode: .forward, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        guard case .invalid(let why) = create(net, "cam", source: Self.tool, keys: nil) else { Issue.record("cleartext accepted"); return }
        #expect(why.contains("allow_cleartext"))
        #expect(net.core.memberCount == 0)
        var config = RelayCoreConfig()
        config.allowCleartext = true
        let open = FakeNetwork(config: config)
        #expect(open.core.createRoom(name: "lobby", mode: .forward, maxMembers: nil, emptyTimeout: nil, now: open.now) == .ok)
        guard case .rtpEndpoint(let info) = create(open, "cam", source: Self.tool, keys: nil) else { Issue.record("refused"); return }
        #expect(info.keys == nil)
    }
}
