import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// A plain-RTP tool (ffmpeg, GStreamer) at a fixed address: no signalling, just RTP without a level extension.
final class PlainRTPSender {
    let address: PeerAddress
    let ssrc: UInt32
    var sequence: UInt16 = 100
    var timestamp: UInt32 = 5_000

    init(address: PeerAddress, ssrc: UInt32) {
        self.address = address
        self.ssrc = ssrc
    }

    func packet(payload: Int = 60) -> [UInt8] {
        let header = RTPHeader(marker: false, payloadType: 111, sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc, extensions: [])
        sequence &+= 1
        timestamp &+= 960
        var out = [UInt8](repeating: 0, count: header.serializedSize + payload)
        _ = out.withUnsafeMutableBytes { try! header.serialize(into: $0) }
        for i in header.serializedSize..<out.count { out[i] = UInt8(truncatingIfNeeded: i) }
        return out
    }

    func send(_ net: FakeNetwork, port: UInt16 = 7400) {
        net.deliverToRelay(packet(), from: address, port: port)
        net.exchange()
    }
}

@Suite("Plain-RTP endpoints: latching, forwarding to and from, removal")
struct RTPEndpointTests {
    static let tool = PeerAddress(ipv4: 172, 16, 0, 9, port: 40_000)
    static let sink = PeerAddress(ipv4: 172, 16, 0, 9, port: 40_002)
    /// These tests speak cleartext RTP, which a relay admits only when it allows cleartext (SRTP: `SRTPEndpointTests`).
    static let cleartext = { var c = RelayCoreConfig(); c.allowCleartext = true; return c }()

    func room(_ net: FakeNetwork, mode: RoomMode = .forward) {
        #expect(net.core.createRoom(name: "lobby", mode: mode, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
    }

    func create(_ net: FakeNetwork, _ identity: String, publish: Bool = true, subscribe: Bool = true,
                source: PeerAddress? = nil, receive: PeerAddress? = nil) throws -> RTPEndpointInfo {
        let result = net.core.createRTPEndpoint(room: "lobby", identity: identity, displayName: nil, publish: publish,
                                                subscribe: subscribe, source: source, receive: receive, keys: nil, now: net.now)
        guard case .rtpEndpoint(let info) = result else { Issue.record("got \(result)"); throw CancellationError() }
        net.exchange()
        return info
    }

    func sentTo(_ net: FakeNetwork, _ address: PeerAddress) -> [[UInt8]] { net.sent.filter { $0.to == address }.map(\.bytes) }

    @Test("every SSRC the relay assigns is in 1…2³¹−1, which ffmpeg's signed -ssrc option accepts")
    func assignedSSRCsFitASignedInteger() throws {
        var config = Self.cleartext
        config.maxMembersPerRoom = 300
        let net = FakeNetwork(config: config)
        room(net)
        // Before the fix each SSRC fell in the upper half with probability ½: 256 of them all below 2³¹ by chance is 2⁻²⁵⁶.
        var ssrcs: [UInt32] = []
        for k in 0..<256 { ssrcs.append(try create(net, "tool\(k)", publish: false, receive: PeerAddress(ipv4: 172, 16, 1, 1, port: UInt16(1_000 + k))).ssrc) }
        let alice = net.addClient("alice")
        net.joinAll()
        ssrcs.append(alice.ssrc)
        #expect(ssrcs.allSatisfy { (1...UInt32(Int32.max)).contains($0) }, "\(ssrcs.filter { $0 > UInt32(Int32.max) })")
        #expect(Set(ssrcs).count == ssrcs.count)
    }

    @Test("an endpoint is a member: others see it join; RTP from its source address is forwarded, with the tool's own SSRC")
    func publishFromTheNamedSource() throws {
        let net = FakeNetwork(config: Self.cleartext)
        room(net)
        let alice = net.addClient("alice")
        net.joinAll()
        let info = try create(net, "cam", subscribe: false, source: Self.tool)
        #expect(info.port == 7400 && info.payloadType == 111 && info.sourceAddress == Self.tool && info.receiveAddress == nil)
        #expect(alice.memberEvents.contains { $0.0 == .joined && $0.1 == "cam" })
        let last = try #require(net.core.drainEvents().last)
        #expect(last.kind == .memberJoined && last.identity == "cam")

        let tool = PlainRTPSender(address: Self.tool, ssrc: 0xABCD_0001)  // not the assigned SSRC: taken instead
        for _ in 0..<5 { tool.send(net) }
        #expect(alice.media[0xABCD_0001]?.count == 5)
        let cam = try #require(net.core.snapshot()[0].members.first { $0.identity == "cam" })
        #expect(cam.ssrc == 0xABCD_0001)
        #expect(cam.stats.packetsIn == 5)
        // Once it sent, its SSRC is fixed: another SSRC from the same address is dropped.
        PlainRTPSender(address: Self.tool, ssrc: 0xABCD_0002).send(net)
        #expect(alice.media[0xABCD_0002] == nil)
        // Nothing goes to the tool: no signalling ever, and it does not subscribe.
        #expect(sentTo(net, Self.tool).isEmpty)
    }

    @Test("the attack: a stranger's packets take no waiting endpoint, reach no listener and get nothing back")
    func strangersTakeNothing() throws {
        let net = FakeNetwork(config: Self.cleartext)
        room(net)
        let alice = net.addClient("alice")
        net.joinAll()
        let stranger = PeerAddress(ipv4: 172, 16, 0, 66, port: 1)
        _ = try create(net, "cam", subscribe: false, source: Self.tool)
        _ = try create(net, "rec", publish: false, receive: Self.sink)
        // Before the fix one 12-byte packet latched the oldest waiting endpoint; its audio then reached the room.
        for k in 0..<50 { PlainRTPSender(address: stranger, ssrc: UInt32(900 + k % 2)).send(net) }
        PlainRTPSender(address: stranger, ssrc: alice.ssrc).send(net)
        alice.speak(level: 20)
        net.exchange()
        #expect(alice.media[900] == nil && alice.media[901] == nil)
        // Only alice's SSRC earned the stranger something: one path challenge (alice's session), no larger than the packet.
        let back = sentTo(net, stranger)
        #expect(back.count == 1 && back.allSatisfy { $0.count <= PlainRTPSender(address: stranger, ssrc: 1).packet().count })
        #expect(back.allSatisfy { if case .pathChallenge = (try? SignalDatagram(parsing: $0))?.message { true } else { false } })
        #expect(net.core.counters.drops(.unknownSender) == 51)
        // The real tool still publishes, and the subscriber hears alice at the address the backend named.
        PlainRTPSender(address: Self.tool, ssrc: 7).send(net)
        #expect(alice.media[7]?.count == 1)
        #expect(sentTo(net, Self.sink).count == 1)
    }

    @Test("a subscribing endpoint with a receive address hears one speaker at a time on its own SSRC, the speaker as CSRC; no signalling reaches it")
    func forwardToEndpoint() throws {
        let net = FakeNetwork(config: Self.cleartext)
        room(net)
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let info = try create(net, "rec", publish: false, receive: Self.sink)
        net.advance(milliseconds: 200, stepMilliseconds: 20) {
            alice.speak(level: 20)
            bob.speak(level: 30)
        }
        let all = sentTo(net, Self.sink)
        #expect(all.allSatisfy { $0[0] & 0xC0 == 0x80 })  // RTP and RTCP only
        let got = all.filter { b in b.withUnsafeBytes { !isRTCP($0) } }
        #expect(got.count >= 9)
        let ssrcs = Set(got.compactMap { b in b.withUnsafeBytes { try? RTPPacketView(parsing: $0).ssrc } })
        #expect(ssrcs == [try #require(info.streamSSRC)])
        let speakers = Set(got.compactMap { b in b.withUnsafeBytes { p in (try? RTPPacketView(parsing: p)).map { $0.csrcCount == 1 ? $0.csrc(at: 0) : 0 } } })
        #expect(speakers == [alice.ssrc])  // bob speaks as loud at the same time: alice, heard first, keeps the stream
        // bob heard alice and the endpoint did not disturb anyone.
        #expect((bob.media[alice.ssrc]?.count ?? 0) >= 9)
        // Member events (bob's mute) are not sent to the endpoint.
        _ = net.core.setMuted(room: "lobby", identity: "bob", muted: true, now: net.now)
        net.exchange()
        #expect(sentTo(net, Self.sink).allSatisfy { $0[0] != Signalling.magic })
    }

    @Test("a tool that sends and receives on one port names it once: receive_address is its source too")
    func symmetricPort() throws {
        let net = FakeNetwork(config: Self.cleartext)
        room(net)
        let alice = net.addClient("alice")
        net.joinAll()
        let info = try create(net, "both", receive: Self.tool)
        #expect(info.sourceAddress == Self.tool && info.receiveAddress == Self.tool)
        alice.speak(level: 20)
        net.exchange()
        #expect(sentTo(net, Self.tool).count == 1)
        PlainRTPSender(address: Self.tool, ssrc: 77).send(net)
        #expect(alice.media[77]?.count == 1)
    }

    @Test("DELETE removes it (others see it leave, its address is forgotten); silence times a publisher out; a subscriber with a receive address stays")
    func removal() throws {
        let net = FakeNetwork(config: Self.cleartext)
        room(net)
        let alice = net.addClient("alice")
        net.joinAll()
        let quietTool = PeerAddress(ipv4: 172, 16, 0, 9, port: 40_004)
        _ = try create(net, "cam", subscribe: false, source: Self.tool)
        _ = try create(net, "quiet", subscribe: false, source: quietTool)
        _ = try create(net, "rec", publish: false, receive: Self.sink)
        PlainRTPSender(address: Self.tool, ssrc: 5).send(net)
        #expect(net.core.deleteRTPEndpoint(room: "lobby", identity: "cam", now: net.now) == .ok)
        #expect(net.core.deleteRTPEndpoint(room: "lobby", identity: "alice", now: net.now) == .notFound("alice is not an RTP endpoint of room lobby"))
        #expect(net.core.deleteRTPEndpoint(room: "nowhere", identity: "cam", now: net.now) == .notFound("room nowhere does not exist"))
        net.exchange()
        #expect(alice.memberEvents.contains { $0.0 == .left && $0.1 == "cam" })
        // The deleted endpoint's address is a stranger now; "quiet" sends once from its own.
        let unknownBefore = net.core.counters.drops(.unknownSender)
        PlainRTPSender(address: Self.tool, ssrc: 5).send(net)
        #expect(net.core.counters.drops(.unknownSender) == unknownBefore + 1)
        PlainRTPSender(address: quietTool, ssrc: 6).send(net)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "quiet" }?.ssrc == 6)
        #expect(alice.media[6]?.count == 1)
        // "quiet" stops; it times out after member_timeout; "rec" stays.
        net.advance(milliseconds: (net.shared.config.memberTimeout + .seconds(1)).milliseconds, stepMilliseconds: 500)
        let left = net.core.snapshot()[0].members.map(\.identity).sorted()
        #expect(left == ["alice", "rec"])
        #expect(alice.memberEvents.contains { $0.0 == .left && $0.1 == "quiet" && $0.2 == "timed out" })
        #expect(net.core.closeRoom(name: "lobby", reason: "done", now: net.now) == .ok)
        #expect(net.core.memberCount == 0)
    }

    @Test("creation refuses unknown rooms and taken identities")
    func refusals() throws {
        let net = FakeNetwork(config: Self.cleartext)
        #expect(net.core.createRTPEndpoint(room: "lobby", identity: "x", displayName: nil, publish: true, subscribe: true,
                                           source: Self.tool, receive: nil, keys: nil, now: net.now) == .notFound("room lobby does not exist"))
        room(net)
        _ = try create(net, "x", source: Self.tool)
        #expect(net.core.createRTPEndpoint(room: "lobby", identity: "x", displayName: nil, publish: true, subscribe: true,
                                           source: Self.sink, receive: nil, keys: nil, now: net.now) == .conflict("x is already in room lobby"))
        #expect(net.core.createRTPEndpoint(room: "lobby", identity: "y", displayName: nil, publish: true, subscribe: false,
                                           source: Self.tool, receive: nil, keys: nil, now: net.now) == .conflict("\(Self.tool) is already a member's address"))
        // Addresses are named, never learned: an endpoint without the one it needs is refused.
        if case .invalid = net.core.createRTPEndpoint(room: "lobby", identity: "z", displayName: nil, publish: true, subscribe: false,
                                                      source: nil, receive: nil, keys: nil, now: net.now) {} else { Issue.record("publisher without source accepted") }
        if case .invalid = net.core.createRTPEndpoint(room: "lobby", identity: "z", displayName: nil, publish: false, subscribe: true,
                                                      source: nil, receive: nil, keys: nil, now: net.now) {} else { Issue.record("subscriber without receive accepted") }
    }
}
