import ParleyWire
import Testing

@testable import ParleyRelayCore

@Suite("RFC 2198 RED through the relay: passed to members that took it, the primary alone to everyone else")
struct RedundancyRelayTests {
    /// The primary's bytes in every RED packet `redPacket` builds, and the redundant copy's.
    static let primary: [UInt8] = Array(repeating: 0xC1, count: 50), copy: [UInt8] = Array(repeating: 0xB1, count: 40)

    /// A RED packet from `client` (payload type 63, cleartext session): one copy 960 ticks back, then the primary;
    /// `malformed` claims a copy longer than the packet.
    static func redPacket(_ client: FakeClient, malformed: Bool = false) -> [UInt8] {
        var packet = client.rtp(level: 20, payload: 0)
        packet[1] = (packet[1] & 0x80) | RedundantAudio.defaultPayloadType
        var payload = [UInt8](repeating: 0, count: 5 + copy.count + primary.count)
        _ = payload.withUnsafeMutableBytes { out in
            var w = try! RedundantAudioWriter(into: out, redundantBlocks: 1)
            copy.withUnsafeBytes { try! w.appendRedundant(payloadType: 111, timestampOffset: 960, data: $0) }
            return primary.withUnsafeBytes { try! w.finish(primaryPayloadType: 111, data: $0) }
        }
        if malformed { payload[3] = 0xFF }  // length 1023
        return packet + payload
    }

    /// The payload type and payload of every packet `listener` received from `speaker`.
    static func received(_ listener: FakeClient, from speaker: FakeClient) -> [(UInt8, [UInt8])] {
        listener.received.compactMap { bytes in
            bytes.withUnsafeBytes { b in
                guard let p = try? RTPPacketView(parsing: b), p.ssrc == speaker.ssrc else { return nil }
                return (p.payloadType, Array(p.payload))
            }
        }
    }

    @Test("members that all took RED get it as sent; the welcome says so")
    func passedThrough() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice", redundancy: true), bob = net.addClient("bob", redundancy: true)
        net.joinAll()
        #expect(alice.session.welcome?.flags.contains(.redundancy) == true)
        for _ in 0..<5 {
            alice.pendingMedia.append(Self.redPacket(alice))
            net.advance(milliseconds: 20)
        }
        let got = Self.received(bob, from: alice)
        #expect(got.count == 5)
        for (type, payload) in got {
            #expect(type == RedundantAudio.defaultPayloadType)
            let red = try payload.withUnsafeBytes { try RedundantAudio(parsing: $0) }
            #expect(red.redundantCount == 1 && Array(payload[red.primary.range]) == Self.primary)
        }
    }

    @Test("with one member that did not take RED, everyone gets the primary alone as plain Opus")
    func strippedForAll() {
        let net = FakeNetwork()
        let alice = net.addClient("alice", redundancy: true), bob = net.addClient("bob", redundancy: true)
        let old = net.addClient("old")
        net.joinAll()
        #expect(old.session.welcome?.flags.contains(.redundancy) == false)
        for _ in 0..<5 {
            alice.pendingMedia.append(Self.redPacket(alice))
            net.advance(milliseconds: 20)
        }
        for listener in [bob, old] {
            let got = Self.received(listener, from: alice)
            #expect(got.count == 5)
            #expect(got.allSatisfy { $0.0 == 111 && $0.1 == Self.primary })
        }
    }

    @Test("a RED payload whose lengths run past the packet is dropped, not forwarded")
    func malformedDropped() {
        let net = FakeNetwork()
        let alice = net.addClient("alice", redundancy: true), bob = net.addClient("bob", redundancy: true)
        net.joinAll()
        alice.pendingMedia.append(Self.redPacket(alice, malformed: true))
        net.advance(milliseconds: 20)
        #expect(Self.received(bob, from: alice).isEmpty)
        alice.pendingMedia.append(Self.redPacket(alice))
        net.advance(milliseconds: 20)
        #expect(Self.received(bob, from: alice).count == 1)
    }

    @Test(
        "a mix room's lone speaker reaches listeners that all took RED as RED, else as its primary",
        arguments: [true, false])
    func loneSpeaker(everyoneTakesRED: Bool) throws {
        let net = FakeNetwork()
        func join(_ name: String, red: Bool) -> FakeClient {
            net.addClient(name, room: "mixroom", token: net.token(name, room: "mixroom", mode: "mix"), redundancy: red)
        }
        let alice = join("alice", red: true), bob = join("bob", red: true), carol = join("carol", red: everyoneTakesRED)
        net.joinAll()
        let mix = try #require(net.core.rooms["mixroom"]?.mix)
        for _ in 0..<10 {
            alice.pendingMedia.append(Self.redPacket(alice))
            net.advance(milliseconds: 20)
        }
        #expect(mix.loneForwarded > 0)
        for listener in [bob, carol] {
            let got: [(UInt8, [UInt8])] = listener.received.compactMap { bytes in
                bytes.withUnsafeBytes { b in
                    guard let p = try? RTPPacketView(parsing: b), p.ssrc == mix.ssrc else { return nil }
                    return (p.payloadType, Array(p.payload))
                }
            }
            #expect(got.count == mix.loneForwarded)
            if everyoneTakesRED {
                #expect(
                    got.allSatisfy {
                        $0.0 == RedundantAudio.defaultPayloadType
                            && $0.1.suffix(Self.primary.count) == Self.primary[...]
                    })
            } else {
                #expect(got.allSatisfy { $0.0 == 111 && $0.1 == Self.primary })
            }
        }
    }
}
