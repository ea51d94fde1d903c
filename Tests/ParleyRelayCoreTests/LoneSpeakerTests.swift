import ParleyAuth
import ParleyClientCore
import ParleyMedia
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// The RTP a client received from its room's mix, parsed: sequence number, timestamp, marker, payload, CSRCs.
private struct Heard {
    var sequence: UInt16, timestamp: UInt32, marker: Bool, payload: [UInt8], csrcs: [UInt32]
}

private func heard(_ client: FakeClient, ssrc: UInt32) -> [Heard] {
    client.received.compactMap { bytes in
        bytes.withUnsafeBytes { raw -> Heard? in
            guard let v = try? RTPPacketView(parsing: raw), v.ssrc == ssrc else { return nil }
            return Heard(sequence: v.sequenceNumber, timestamp: v.timestamp, marker: v.marker, payload: Array(v.payload),
                         csrcs: (0..<v.csrcCount).map { v.csrc(at: $0) })
        }
    }
}

private func payloads(_ datagrams: [[UInt8]]) -> [[UInt8]] {
    datagrams.compactMap { d in d.withUnsafeBytes { b in (try? RTPPacketView(parsing: b)).map { Array($0.payload) } } }
}

@Suite("Mix mode: a lone speaker forwarded packet by packet (MixEngine+LoneSpeaker)")
struct LoneSpeakerTests {
    func room(_ names: [String], listeners: [String], mode: String = "mix", config: RelayCoreConfig = RelayCoreConfig(),
              encrypted: Bool = false) -> (FakeNetwork, [FakeClient]) {
        let net = FakeNetwork(config: config, encrypted: encrypted)
        var clients: [FakeClient] = []
        for n in names + listeners {
            let grants = listeners.contains(n) ? Grants(publish: false) : Grants()
            clients.append(net.addClient(n, room: "mixroom", token: net.token(n, room: "mixroom", grants: grants, mode: mode)))
        }
        net.joinAll()
        return (net, clients)
    }

    @Test("a lone speaker's packets reach the listeners as they arrive: the mix's SSRC and numbering over its own payloads, nothing decoded or coded")
    func forwardedOnArrival() throws {
        let (net, c) = room(["alice", "bob"], listeners: ["carol"])
        let mix = try #require(net.core.rooms["mixroom"]?.mix)
        let alice = try ToneMember(c[0], frequency: 440)
        try alice.send()
        net.exchange()  // the clock has not moved: no mix deadline passed, yet carol has the packet
        #expect(heard(c[2], ssrc: mix.ssrc).count == 1)
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { try? alice.send() }

        #expect(mix.loneForwarded == 51)
        #expect(mix.encodes == 0 && mix.passedThrough == 0)
        for listener in [c[1], c[2]] {  // bob publishes but is silent: he hears alice too
            let got = heard(listener, ssrc: mix.ssrc)
            #expect(got.map(\.payload) == payloads(c[0].sentMedia), "byte for byte what alice sent, in order")
            #expect(got.allSatisfy { $0.csrcs == [c[0].ssrc] })
            #expect(zip(got, got.dropFirst()).allSatisfy { $1.sequence == $0.sequence &+ 1 && $1.timestamp == $0.timestamp &+ 960 })
            #expect(got.first?.marker == true && got.dropFirst().allSatisfy { !$0.marker })
        }
        #expect(c[0].media[mix.ssrc] == nil, "a lone speaker hears nothing of itself")
        let carol = try ToneMember(c[2], frequency: 0)
        try carol.decodeReceived(c[2].received)
        #expect(toneShare(Array(carol.heard.suffix(960 * 20)), frequency: 440) > 0.5)
        // The welcome told the listeners that NACKs about the mix are answered.
        #expect(c[2].session.welcome?.flags.contains(.mixRepaired) == true)
    }

    @Test("a speaker's loss stays a gap the listener can ask for; the late packet takes its own number; a NACK is answered with the packet first sent")
    func gapsStayGaps() throws {
        let (net, c) = room(["alice"], listeners: ["carol"], encrypted: true)
        let mix = try #require(net.core.rooms["mixroom"]?.mix)
        let alice = try ToneMember(c[0], frequency: 440)
        var held: [UInt8]?
        var n = 0
        net.advance(milliseconds: 400, stepMilliseconds: 20) {
            try? alice.send()
            n += 1
            if n == 10 { held = alice.client.pendingMedia.removeLast() }  // lost on the way in, for now
            if n == 14, let h = held { alice.client.pendingMedia.append(h) }  // arrives 80 ms late
        }
        let got = try #require(c[1].media[mix.ssrc])
        #expect(got.count == 20)
        let late = got[9]
        #expect(got[10] == late &- 1 + 2 || got.contains(late))
        // Numbers in arrival order: …, 8, 10, 11, 12, 13, 9, 14, …: the late packet got number 9's slot.
        let ordered = got.sorted { Int16(bitPattern: $0 &- $1) < 0 }
        #expect(zip(ordered, ordered.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "no number skipped or repeated")
        #expect(got != ordered, "the late packet came late")
        #expect(heard(c[1], ssrc: mix.ssrc).map(\.payload).count == 20)

        // Carol asks again for the packet numbered like the late one: the relay sends the very SRTP bytes again.
        let toCarol = net.sent.filter { $0.to == c[1].address && $0.bytes.first.map { $0 & 0xC0 == 0x80 } == true }.map(\.bytes)
        let wanted = ordered[9]
        let nack = GenericNACK(senderSSRC: c[1].ssrc, mediaSSRC: mix.ssrc, lost: [wanted])
        var bytes = [UInt8](repeating: 0, count: nack.serializedSize)
        _ = try bytes.withUnsafeMutableBytes { try nack.serialize(into: $0) }
        let before = net.sent.count
        c[1].pendingMedia.append(c[1].protect(bytes))
        net.exchange()
        #expect(net.core.counters.nacksAnswered == 1)
        let resent = net.sent[before...].filter { $0.to == c[1].address && $0.bytes.first.map { $0 & 0xC0 == 0x80 } == true }.map(\.bytes)
        #expect(resent.count == 1 && resent.allSatisfy { toCarol.contains($0) })
    }

    @Test("the relay asks a lone speaker in a mix room for its packets lost on the way in (uplink repair)")
    func uplinkRepairForTheLoneSpeaker() throws {
        let (net, c) = room(["alice"], listeners: ["carol"])
        let alice = try ToneMember(c[0], frequency: 440)
        var n = 0
        net.advance(milliseconds: 400, stepMilliseconds: 20) {
            try? alice.send()
            n += 1
            if n == 10 { alice.client.pendingMedia.removeLast() }
        }
        #expect(net.core.counters.uplinkLost == 1 && net.core.counters.uplinkNacked >= 1)
        // The NACK went to alice, naming her stream and the lost packet.
        let nack = try #require(UplinkRepairTests.nacks(c[0]).first)
        #expect(nack.mediaSSRC == c[0].ssrc && nack.lost.count == 1)
    }

    @Test("a second speaker ends the forwarding: the mixer goes on after the last packet forwarded, numbers and timestamps only move forward")
    func secondSpeakerTakesTheMixer() throws {
        let (net, c) = room(["alice", "bob"], listeners: ["carol"])
        let mix = try #require(net.core.rooms["mixroom"]?.mix)
        let alice = try ToneMember(c[0], frequency: 440), bob = try ToneMember(c[1], frequency: 660)
        net.advance(milliseconds: 600, stepMilliseconds: 20) { try? alice.send() }
        let forwarded = mix.loneForwarded
        #expect(forwarded == 30 && mix.lone != nil)
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { try? alice.send(); try? bob.send() }
        #expect(mix.lone == nil)
        #expect(mix.encodes >= 3 * 25, "shared mix and two minus-ones per frame")
        #expect(mix.loneForwarded - forwarded <= 5, "forwarding ends within the mixer's buffer delay")
        let got = heard(c[2], ssrc: mix.ssrc)
        #expect(zip(got, got.dropFirst()).allSatisfy { $1.sequence == $0.sequence &+ 1 && Int32(bitPattern: $1.timestamp &- $0.timestamp) > 0 })
        let carol = try ToneMember(c[2], frequency: 0)
        try carol.decodeReceived(c[2].received)
        let tail = Array(carol.heard.suffix(960 * 20))
        #expect(toneShare(tail, frequency: 440) > 0.2 && toneShare(tail, frequency: 660) > 0.2)

        // Bob stops; alice goes on alone, mixed (a forwarding starts only after everyone was quiet) until she pauses.
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { try? alice.send(); try? bob.send(silent: true) }
        #expect(mix.lone == nil)
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { try? alice.send(silent: true); try? bob.send(silent: true) }
        let before = mix.loneForwarded
        net.advance(milliseconds: 400, stepMilliseconds: 20) { try? alice.send(); try? bob.send(silent: true) }
        #expect(mix.lone != nil && mix.loneForwarded - before >= 19)
        let all = heard(c[2], ssrc: mix.ssrc)
        #expect(zip(all, all.dropFirst()).allSatisfy { $1.sequence == $0.sequence &+ 1 && Int32(bitPattern: $1.timestamp &- $0.timestamp) > 0 })
    }

    @Test("muting the lone speaker ends its forwarding; speaking again after unmuting starts a new one, numbers continuing")
    func muteEndsForwarding() throws {
        let (net, c) = room(["alice"], listeners: ["carol"])
        let mix = try #require(net.core.rooms["mixroom"]?.mix)
        let alice = try ToneMember(c[0], frequency: 440)
        net.advance(milliseconds: 400, stepMilliseconds: 20) { try? alice.send() }
        let epoch = try #require(mix.lone?.epoch)
        #expect(net.core.setMuted(room: "mixroom", identity: "alice", muted: true, now: net.now) == .ok)
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { try? alice.send() }
        #expect(mix.lone == nil)
        #expect(net.core.setMuted(room: "mixroom", identity: "alice", muted: false, now: net.now) == .ok)
        net.advance(milliseconds: 400, stepMilliseconds: 20) { try? alice.send() }
        #expect(mix.lone.map { $0.epoch != epoch } == true)
        let got = heard(c[1], ssrc: mix.ssrc)
        #expect(zip(got, got.dropFirst()).allSatisfy { $1.sequence == $0.sequence &+ 1 && Int32(bitPattern: $1.timestamp &- $0.timestamp) > 0 })
        #expect(got.filter(\.marker).count == 2)
    }

    @Test("a hybrid room's audience gets the lone speaker forwarded; its speakers hear each other's own streams as before")
    func hybridAudience() throws {
        let (net, c) = room(["alice", "bob"], listeners: ["carol"], mode: "hybrid")
        let mix = try #require(net.core.rooms["mixroom"]?.mix)
        let alice = try ToneMember(c[0], frequency: 440)
        net.advance(milliseconds: 400, stepMilliseconds: 20) { try? alice.send() }
        #expect(mix.loneForwarded == 20 && mix.encodes == 0)
        #expect(heard(c[2], ssrc: mix.ssrc).count == 20)
        #expect(c[1].media[mix.ssrc] == nil && (c[1].media[c[0].ssrc]?.count ?? 0) == 20, "bob hears alice's own stream")
    }

    @Test("with mix_forward_lone_speaker off, every frame goes through the mixer and the welcome promises no repairs")
    func off() throws {
        var config = RelayCoreConfig()
        config.mixForwardLoneSpeaker = false
        let (net, c) = room(["alice"], listeners: ["carol"], config: config)
        let mix = try #require(net.core.rooms["mixroom"]?.mix)
        let alice = try ToneMember(c[0], frequency: 440)
        net.advance(milliseconds: 400, stepMilliseconds: 20) { try? alice.send() }
        #expect(mix.loneForwarded == 0 && mix.encodes + mix.passedThrough > 10)
        #expect(c[1].session.welcome?.flags.contains(.mixRepaired) == false)
    }
}
