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

    func room(_ net: FakeNetwork, mode: String = "forward") {
        #expect(net.core.createRoom(name: "lobby", mode: mode, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
    }

    func create(_ net: FakeNetwork, _ identity: String, publish: Bool = true, subscribe: Bool = true,
                receive: PeerAddress? = nil) throws -> RTPEndpointInfo {
        let result = net.core.createRTPEndpoint(room: "lobby", identity: identity, displayName: nil, publish: publish,
                                                subscribe: subscribe, receiveAddress: receive, now: net.now)
        guard case .rtpEndpoint(let info) = result else { Issue.record("got \(result)"); throw CancellationError() }
        net.exchange()
        return info
    }

    func sentTo(_ net: FakeNetwork, _ address: PeerAddress) -> [[UInt8]] { net.sent.filter { $0.to == address }.map(\.bytes) }

    @Test("every SSRC the relay assigns is in 1…2³¹−1, which ffmpeg's signed -ssrc option accepts")
    func assignedSSRCsFitASignedInteger() throws {
        var config = RelayCoreConfig()
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

    @Test("an endpoint is a member: others see it join; its first packet latches its address and SSRC; its audio is forwarded")
    func latchAndPublish() throws {
        let net = FakeNetwork()
        room(net)
        let alice = net.addClient("alice")
        net.joinAll()
        let info = try create(net, "cam", subscribe: false)
        #expect(info.port == 7400 && info.payloadType == 111)
        #expect(alice.memberEvents.contains { $0.0 == .joined && $0.1 == "cam" })
        let last = try #require(net.core.drainEvents().last)
        #expect(last.kind == .memberJoined && last.identity == "cam")

        let tool = PlainRTPSender(address: Self.tool, ssrc: 0xABCD_0001)  // not the assigned SSRC: taken instead
        for _ in 0..<5 { tool.send(net) }
        #expect(alice.media[0xABCD_0001]?.count == 5)
        let cam = try #require(net.core.snapshot()[0].members.first { $0.identity == "cam" })
        #expect(cam.ssrc == 0xABCD_0001)
        #expect(cam.address == Self.tool)
        #expect(cam.stats.packetsIn == 5)
        // Nothing goes to the tool: no signalling ever, and it does not subscribe.
        #expect(sentTo(net, Self.tool).isEmpty)
    }

    @Test("the latch takes the oldest waiting endpoint, ignores SSRCs other members use, and only once")
    func latchRules() throws {
        let net = FakeNetwork()
        room(net)
        let alice = net.addClient("alice")
        net.joinAll()
        _ = try create(net, "first", subscribe: false)
        _ = try create(net, "listener", publish: false, receive: Self.sink)  // needs no latch: does not wait
        _ = try create(net, "second", subscribe: false)
        // A stranger reusing alice's SSRC latches nothing.
        PlainRTPSender(address: PeerAddress(ipv4: 172, 16, 0, 66, port: 1), ssrc: alice.ssrc).send(net)
        #expect(net.core.snapshot()[0].members.filter { $0.address.port != 0 }.map(\.identity) == ["alice", "listener"])
        PlainRTPSender(address: Self.tool, ssrc: 11).send(net)
        PlainRTPSender(address: PeerAddress(ipv4: 172, 16, 0, 10, port: 40_000), ssrc: 22).send(net)
        let members = net.core.snapshot()[0].members
        #expect(members.first { $0.identity == "first" }?.ssrc == 11)
        #expect(members.first { $0.identity == "second" }?.ssrc == 22)
        #expect(members.first { $0.identity == "listener" }?.address == Self.sink)
        // Nobody waits now: a third address is an unknown sender.
        let dropsBefore = net.core.counters.drops[DropReason.unknownSender.rawValue]
        PlainRTPSender(address: PeerAddress(ipv4: 172, 16, 0, 11, port: 40_000), ssrc: 33).send(net)
        #expect(net.core.counters.drops[DropReason.unknownSender.rawValue] == dropsBefore + 1)
        #expect(alice.media[33] == nil)
    }

    @Test("a subscribing endpoint with a receive address hears only the first forwarded speaker, unchanged; no signalling reaches it")
    func forwardToEndpoint() throws {
        let net = FakeNetwork()
        room(net)
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        _ = try create(net, "rec", publish: false, receive: Self.sink)
        net.advance(milliseconds: 200, stepMilliseconds: 20) {
            alice.speak(level: 20)
            bob.speak(level: 30)
        }
        let got = sentTo(net, Self.sink)
        #expect(got.count >= 9)
        #expect(got.allSatisfy { $0[0] & 0xC0 == 0x80 })  // RTP only
        let ssrcs = Set(got.compactMap { b in b.withUnsafeBytes { try? RTPPacketView(parsing: $0).ssrc } })
        #expect(ssrcs == [alice.ssrc])
        // bob heard alice and the endpoint did not disturb anyone.
        #expect((bob.media[alice.ssrc]?.count ?? 0) >= 9)
        // Member events (bob's mute) are not sent to the endpoint.
        _ = net.core.setMuted(room: "lobby", identity: "bob", muted: true, now: net.now)
        net.exchange()
        #expect(sentTo(net, Self.sink).allSatisfy { $0[0] != Signalling.magic })
    }

    @Test("without a receive address, media goes to the latched address once the endpoint sent")
    func sendsToLatchedAddress() throws {
        let net = FakeNetwork()
        room(net)
        let alice = net.addClient("alice")
        net.joinAll()
        _ = try create(net, "both")
        alice.speak(level: 20)
        net.exchange()
        #expect(sentTo(net, Self.tool).isEmpty)  // nowhere to send yet
        let tool = PlainRTPSender(address: Self.tool, ssrc: 77)
        tool.send(net)
        alice.speak(level: 20)
        net.exchange()
        #expect(sentTo(net, Self.tool).count == 1)
        #expect(alice.media[77]?.count == 1)
    }

    @Test("DELETE removes it (others see it leave, its address is forgotten); silence times a publisher out; a subscriber with a receive address stays")
    func removal() throws {
        let net = FakeNetwork()
        room(net)
        let alice = net.addClient("alice")
        net.joinAll()
        _ = try create(net, "cam", subscribe: false)
        _ = try create(net, "quiet", subscribe: false)
        _ = try create(net, "rec", publish: false, receive: Self.sink)
        PlainRTPSender(address: Self.tool, ssrc: 5).send(net)
        #expect(net.core.deleteRTPEndpoint(room: "lobby", identity: "cam", now: net.now) == .ok)
        #expect(net.core.deleteRTPEndpoint(room: "lobby", identity: "alice", now: net.now) == .notFound("alice is not an RTP endpoint of room lobby"))
        #expect(net.core.deleteRTPEndpoint(room: "nowhere", identity: "cam", now: net.now) == .notFound("room nowhere does not exist"))
        net.exchange()
        #expect(alice.memberEvents.contains { $0.0 == .left && $0.1 == "cam" })
        // The old address now latches the remaining waiting endpoint ("quiet"), not the deleted one.
        PlainRTPSender(address: Self.tool, ssrc: 6).send(net)
        #expect(net.core.snapshot()[0].members.first { $0.identity == "quiet" }?.ssrc == 6)
        #expect(alice.media[6]?.count == 1)
        // "quiet" stops; it times out after member_timeout; "rec" stays.
        net.advance(milliseconds: net.shared.config.memberTimeout / 1_000_000 + 1_000, stepMilliseconds: 500)
        let left = net.core.snapshot()[0].members.map(\.identity).sorted()
        #expect(left == ["alice", "rec"])
        #expect(alice.memberEvents.contains { $0.0 == .left && $0.1 == "quiet" && $0.2 == "timed out" })
        #expect(net.core.closeRoom(name: "lobby", reason: "done", now: net.now) == .ok)
        #expect(net.core.memberCount == 0)
    }

    @Test("creation refuses unknown rooms and taken identities")
    func refusals() throws {
        let net = FakeNetwork()
        #expect(net.core.createRTPEndpoint(room: "lobby", identity: "x", displayName: nil, publish: true, subscribe: true,
                                           receiveAddress: nil, now: net.now) == .notFound("room lobby does not exist"))
        room(net)
        _ = try create(net, "x")
        #expect(net.core.createRTPEndpoint(room: "lobby", identity: "x", displayName: nil, publish: true, subscribe: true,
                                           receiveAddress: nil, now: net.now) == .conflict("x is already in room lobby"))
    }
}
