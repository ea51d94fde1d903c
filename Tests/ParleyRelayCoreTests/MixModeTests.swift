import Foundation
import ParleyAuth
import ParleyClientCore
import ParleyMedia
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// Power of `frequency` in `samples` (Goertzel), normalised by the signal's energy: the share of the signal at that tone.
func toneShare(_ samples: [Int16], frequency: Double, rate: Double = 48_000) -> Double {
    let w = 2 * Double.pi * frequency / rate
    let coefficient = 2 * cos(w)
    var s1 = 0.0, s2 = 0.0, energy = 0.0
    for x in samples {
        let v = Double(x)
        let s0 = v + coefficient * s1 - s2
        s2 = s1
        s1 = s0
        energy += v * v
    }
    let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
    return energy > 0 ? 2 * power / (Double(samples.count) * energy) : 0
}

/// A member sending a real Opus tone and decoding what it receives.
final class ToneMember {
    let client: FakeClient
    let frequency: Double
    let encoder: OpusEncoder
    let decoder: OpusDecoder
    var phase = 0.0
    var sequence: UInt16 = 65_530
    var timestamp: UInt32 = 4_294_967_000
    var heard: [Int16] = []
    var mixedSSRCs: Set<UInt32> = []
    var csrcsHeard: Set<UInt32> = []
    var levelsSeen = 0

    init(_ client: FakeClient, frequency: Double) throws {
        self.client = client
        self.frequency = frequency
        encoder = try OpusEncoder(sampleRate: 48_000, channels: 1, application: .voip)
        try encoder.setBitrate(32_000)
        try encoder.setDTX(true)
        decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
    }

    /// Queues one 20 ms packet: the tone, or digital silence (DTX) when `silent`.
    func send(silent: Bool = false) throws {
        var pcm = [Int16](repeating: 0, count: 960)
        if !silent {
            for i in 0..<960 {
                pcm[i] = Int16(8_000 * sin(phase))
                phase += 2 * Double.pi * frequency / 48_000
            }
        }
        var payload = [UInt8](repeating: 0, count: 1200)
        let n = try pcm.withUnsafeBufferPointer { p in
            try payload.withUnsafeMutableBytes { try encoder.encode(p, frameSize: 960, into: $0) }
        }
        let header = RTPHeader(marker: false, payloadType: 111, sequenceNumber: sequence, timestamp: timestamp, ssrc: client.ssrc,
                               extensions: [.audioLevel(id: 1, AudioLevel(voice: !silent, level: silent ? 127 : 18))])
        sequence &+= 1
        timestamp &+= 960
        var bytes = [UInt8](repeating: 0, count: header.serializedSize)
        _ = try bytes.withUnsafeMutableBytes { try header.serialize(into: $0) }
        client.pendingMedia.append(client.protect(bytes + payload.prefix(n)))
    }

    /// Decodes every mixed packet received since the last call.
    func decodeReceived(_ packets: [[UInt8]]) throws {
        for p in packets {
            try p.withUnsafeBytes { raw in
                let view = try RTPPacketView(parsing: raw)
                mixedSSRCs.insert(view.ssrc)
                for i in 0..<view.csrcCount { csrcsHeard.insert(view.csrc(at: i)) }
                levelsSeen += view.csrcAudioLevels(id: 3) { _, _ in }
                var pcm = [Int16](repeating: 0, count: 960)
                let n = try pcm.withUnsafeMutableBufferPointer { try decoder.decode(view.payload, into: $0) }
                heard += pcm.prefix(n)
            }
        }
    }
}

@Suite("Mix mode: jitter buffers, mixing, minus-one, encode once per distinct mix")
struct MixModeTests {
    /// A mix room; `forwardLoneSpeaker` false keeps a lone speaker in the mixer (its own tests: LoneSpeakerTests).
    func mixRoom(_ names: [String], listeners: [String] = [], forwardLoneSpeaker: Bool = true) -> (FakeNetwork, [FakeClient]) {
        var config = RelayCoreConfig()
        config.mixForwardLoneSpeaker = forwardLoneSpeaker
        let net = FakeNetwork(config: config)
        var clients: [FakeClient] = []
        for n in names + listeners {
            let grants = listeners.contains(n) ? Grants(publish: false) : Grants()
            clients.append(net.addClient(n, room: "mixroom", token: net.token(n, room: "mixroom", grants: grants, mode: "mix")))
        }
        net.joinAll()
        return (net, clients)
    }

    /// The RTP packets a client received from the relay's mixer (not forwarded streams).
    func mixedPackets(_ net: FakeNetwork, to client: FakeClient) -> [[UInt8]] {
        net.sent.filter { $0.to == client.address && $0.bytes.first.map { $0 & 0xC0 == 0x80 } == true }
            .map(\.bytes).filter { b in b.withUnsafeBytes { !isRTCP($0) } }
    }

    @Test("listeners' receiver reports about the mix size its encoders' FEC; reports about other streams do not")
    func mixFECFollowsListenerReports() throws {
        let (net, c) = mixRoom(["alice"], listeners: ["carol"])
        let alice = try ToneMember(c[0], frequency: 440)
        net.advance(milliseconds: 400, stepMilliseconds: 20) { try? alice.send() }
        let mixes = net.cores.compactMap { $0.rooms["mixroom"]?.mix }
        let mix = try #require(mixes.first)
        #expect(mix.expectedLossPercent == 0)
        // Consistent counts, as a real receiver's: 50 more packets expected per report, and the loss it reports
        // among them (`ListenerReports` holds a report to what its own counts allow).
        var highest: UInt32 = 100, lost: Int32 = 0
        func report(ssrc: UInt32, fractionLost: UInt8) throws {
            highest += 50
            lost += Int32(fractionLost) * 50 / 256
            let block = ReportBlock(ssrc: ssrc, fractionLost: fractionLost, cumulativeLost: lost, highestSequence: highest,
                                    jitter: 0, lastSR: 0, delaySinceLastSR: 0)
            var bytes = [UInt8](repeating: 0, count: 100)
            let n = try bytes.withUnsafeMutableBytes { try ReceiverReport(ssrc: 0, reports: [block]).serialize(into: $0) }
            c[1].pendingMedia.append(Array(bytes[0..<n]))
            net.advance(milliseconds: 20)
        }
        try report(ssrc: mix.ssrc &+ 1, fractionLost: 128)          // not the mix: ignored
        #expect(mix.expectedLossPercent == 0)
        try report(ssrc: mix.ssrc, fractionLost: 26)                // 10 % lost
        #expect(mix.expectedLossPercent == 6)
        for _ in 0..<30 { try report(ssrc: mix.ssrc, fractionLost: 0) }
        #expect(mix.expectedLossPercent == 0)
    }

    @Test("a mix room sends speaker lists even to members that tell speakers from the media (one mixed stream)")
    func speakerListsInMixRooms() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice", room: "mixroom", token: net.token("alice", room: "mixroom", mode: "mix"))
        let carol = net.addClient("carol", room: "mixroom", token: net.token("carol", room: "mixroom", grants: Grants(publish: false), mode: "mix"),
                                  speakersFromMedia: true)
        net.joinAll()
        #expect(carol.session.welcome?.mode == "mix")
        let tone = try ToneMember(alice, frequency: 440)
        net.advance(milliseconds: 600, stepMilliseconds: 20) { try? tone.send() }
        #expect(carol.speakerUpdates >= 1)
        #expect(carol.lastSpeakers?.map(\.ssrc) == [alice.ssrc])
    }

    @Test("a listener hears both tones; each speaker hears the other's tone but never its own")
    func minusOne() throws {
        let (net, c) = mixRoom(["alice", "bob"], listeners: ["carol"])
        #expect(c.allSatisfy { $0.session.welcome?.mode == "mix" })
        let alice = try ToneMember(c[0], frequency: 440), bob = try ToneMember(c[1], frequency: 1_000)
        let carol = try ToneMember(c[2], frequency: 0)
        net.advance(milliseconds: 2_000, stepMilliseconds: 20) {
            try? alice.send()
            try? bob.send()
        }
        for m in [alice, bob, carol] { try m.decodeReceived(mixedPackets(net, to: m.client)) }
        // Skip the first half second (jitter-buffer start, codec warm-up).
        func tail(_ m: ToneMember) -> [Int16] { Array(m.heard.dropFirst(24_000)) }
        #expect(carol.heard.count >= 48_000)
        #expect(toneShare(tail(carol), frequency: 440) > 0.2)
        #expect(toneShare(tail(carol), frequency: 1_000) > 0.2)
        #expect(toneShare(tail(alice), frequency: 1_000) > 0.5)
        #expect(toneShare(tail(alice), frequency: 440) < 0.02)
        #expect(toneShare(tail(bob), frequency: 440) > 0.5)
        #expect(toneShare(tail(bob), frequency: 1_000) < 0.02)
        // One stream per listener, the contributors in the CSRC list with RFC 6465 levels.
        #expect(carol.mixedSSRCs.count == 1)
        #expect(carol.csrcsHeard == [alice.client.ssrc, bob.client.ssrc])
        #expect(alice.csrcsHeard == [bob.client.ssrc])
        #expect(carol.levelsSeen > 0)
        // Nothing is forwarded as-is in a mix room.
        #expect(carol.client.media[alice.client.ssrc] == nil)
    }

    @Test("nobody speaking: no mixing output and no encode work; a room emptied costs nothing")
    func silenceCostsNothing() throws {
        let (net, c) = mixRoom(["alice", "bob"])
        let alice = try ToneMember(c[0], frequency: 440)
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { try? alice.send(silent: true) }
        let room = net.core.rooms["mixroom"]!
        #expect(room.mix!.encodes == 0)
        #expect(room.mix!.mixes > 40)
        #expect(net.core.counters.mixedPacketsSent == 0)
        net.advance(milliseconds: 600, stepMilliseconds: 20) { try? alice.send() }
        #expect(room.mix!.encodes + room.mix!.passedThrough + room.mix!.loneForwarded > 0)
        for client in c { client.session.leave(now: net.instant) }
        net.exchange()
        #expect(room.mix!.nextDeadline == nil)
        #expect(net.core.nextMixDeadline == nil)
    }

    @Test("a lone speaker's packets reach the listeners as they came (no second coding, no encode); two speakers are mixed")
    func loneSpeakerPassesThrough() throws {
        let (net, c) = mixRoom(["alice", "bob"], listeners: ["carol"], forwardLoneSpeaker: false)
        let alice = try ToneMember(c[0], frequency: 440), bob = try ToneMember(c[1], frequency: 660)
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { try? alice.send() }
        let mix = try #require(net.core.rooms["mixroom"]?.mix)
        func payloads(_ datagrams: [[UInt8]]) -> [[UInt8]] {
            datagrams.compactMap { d in d.withUnsafeBytes { b in (try? RTPPacketView(parsing: b)).map { Array($0.payload) } } }
        }
        let sent = Set(payloads(c[0].sentMedia))
        let heard = payloads(mixedPackets(net, to: c[2]))
        #expect(mix.passedThrough >= 40, "passed through \(mix.passedThrough), encoded \(mix.encodes)")
        #expect(mix.encodes <= 3)
        #expect(heard.filter { sent.contains($0) }.count == mix.passedThrough)
        // Each passed-through packet still carries the mix's header: its SSRC, the speaker as CSRC with its level.
        let listener = try ToneMember(c[2], frequency: 440)
        try listener.decodeReceived(mixedPackets(net, to: c[2]))
        #expect(listener.mixedSSRCs == [mix.ssrc] && listener.csrcsHeard == [c[0].ssrc] && listener.levelsSeen > 0)
        #expect(toneShare(Array(listener.heard.suffix(960 * 20)), frequency: 440) > 0.5)

        let passedAlone = mix.passedThrough, encodedAlone = mix.encodes
        net.advance(milliseconds: 600, stepMilliseconds: 20) { try? alice.send(); try? bob.send() }
        #expect(mix.encodes - encodedAlone >= 3 * 25, "shared mix and two minus-ones per frame")
        #expect(mix.passedThrough - passedAlone <= 3)
    }

    @Test("a listener's NACK about the mix is answered with the very packet it was sent (same SRTP bytes); a minus-one mix is not kept")
    func mixLegNack() throws {
        var config = RelayCoreConfig()
        config.mixNack = true
        let net = FakeNetwork(config: config, encrypted: true)
        let names = ["alice", "bob", "carol"]
        let c = names.map { n in
            net.addClient(n, room: "mixroom", token: net.token(n, room: "mixroom", grants: n == "carol" ? Grants(publish: false) : Grants(), mode: "mix"))
        }
        net.joinAll()
        let alice = try ToneMember(c[0], frequency: 440), bob = try ToneMember(c[1], frequency: 660)
        net.advance(milliseconds: 600, stepMilliseconds: 20) { try? alice.send() }
        let mix = try #require(net.core.rooms["mixroom"]?.mix)
        let toCarol = net.sent.filter { $0.to == c[2].address && $0.bytes.first.map { $0 & 0xC0 == 0x80 } == true }.map(\.bytes)
        let got = try #require(c[2].media[mix.ssrc])
        #expect(got.count >= 20 && toCarol.count >= got.count)
        // Carol lost three packets (and asks for one the mixer no longer keeps): the relay sends each again as it was.
        let wanted = [got[got.count - 10], got[got.count - 7], got[got.count - 3]]
        let nack = GenericNACK(senderSSRC: c[2].ssrc, mediaSSRC: mix.ssrc, lost: wanted + [got[0] &- 1000])
        var bytes = [UInt8](repeating: 0, count: nack.serializedSize)
        _ = try bytes.withUnsafeMutableBytes { try nack.serialize(into: $0) }
        let sentBefore = net.sent.count
        c[2].pendingMedia.append(c[2].protect(bytes))
        net.exchange()
        #expect(net.core.counters.nacksAnswered == 3 && net.core.counters.nacksMissed == 1)
        let resent = net.sent[sentBefore...].filter { $0.to == c[2].address && $0.bytes.first.map { $0 & 0xC0 == 0x80 } == true }.map(\.bytes)
        #expect(resent.count == 3)
        #expect(resent.allSatisfy { toCarol.contains($0) }, "byte for byte the SRTP packets first sent")
        // (This carol did get them the first time, so her SRTP refuses the copies as replays: identical packets under
        // the same index, which is what lets one that was really lost authenticate.)
        #expect(c[2].rejectedMedia == 3)

        // Two speak: bob hears a minus-one mix (alice only), which is not kept: his NACK for one is counted missed.
        net.advance(milliseconds: 400, stepMilliseconds: 20) { try? alice.send(); try? bob.send() }
        let bobGot = try #require(c[1].media[mix.ssrc])
        let minusOne = GenericNACK(senderSSRC: c[1].ssrc, mediaSSRC: mix.ssrc, lost: [bobGot[bobGot.count - 2]])
        bytes = [UInt8](repeating: 0, count: minusOne.serializedSize)
        _ = try bytes.withUnsafeMutableBytes { try minusOne.serialize(into: $0) }
        c[1].pendingMedia.append(c[1].protect(bytes))
        net.exchange()
        #expect(net.core.counters.nacksAnswered == 3 && net.core.counters.nacksMissed == 2)
    }

    @Test("the mix a listener receives sets the marker bit on the first packet of each talkspurt, and only there")
    func markerAfterSilence() throws {
        let (net, c) = mixRoom(["alice"], listeners: ["carol"], forwardLoneSpeaker: false)
        let alice = try ToneMember(c[0], frequency: 440)
        net.advance(milliseconds: 600, stepMilliseconds: 20) { try? alice.send() }
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { try? alice.send(silent: true) }
        net.advance(milliseconds: 600, stepMilliseconds: 20) { try? alice.send() }
        let packets = mixedPackets(net, to: c[1]).compactMap { b in
            b.withUnsafeBytes { raw in (try? RTPPacketView(parsing: raw)).map { ($0.marker, $0.sequenceNumber, $0.timestamp) } }
        }
        #expect(packets.count >= 40)
        // Two talkspurts: the first packet of each is marked; the gap between them shows in the timestamps only.
        let marked = packets.indices.filter { packets[$0].0 }
        #expect(marked.count == 2 && marked.first == 0)
        if marked.count == 2 {
            let i = marked[1]
            #expect(packets[i].1 == packets[i - 1].1 &+ 1)           // sequence numbers stay consecutive
            #expect(packets[i].2 &- packets[i - 1].2 > 960 * 10)     // the timestamp jumps over the silence
        }
    }

    @Test("loss and late packets are concealed; the mix keeps its 20 ms cadence")
    func lossAndLateness() throws {
        let (net, c) = mixRoom(["alice"], listeners: ["bob"], forwardLoneSpeaker: false)
        let alice = try ToneMember(c[0], frequency: 600), bob = try ToneMember(c[1], frequency: 0)
        var n = 0
        var held: [[UInt8]] = []
        net.advance(milliseconds: 3_000, stepMilliseconds: 20) {
            try? alice.send()
            n += 1
            if n % 10 == 3 { alice.client.pendingMedia.removeLast() }              // 10 % loss
            if n % 25 == 7 { held.append(alice.client.pendingMedia.removeLast()) }  // late by 200 ms
            if n % 25 == 17, !held.isEmpty { alice.client.pendingMedia.insert(held.removeFirst(), at: 0) }
        }
        let packets = mixedPackets(net, to: bob.client)
        // About one mixed packet per 20 ms once the jitter buffer started.
        #expect(packets.count >= 130)
        try bob.decodeReceived(packets)
        #expect(toneShare(Array(bob.heard.dropFirst(24_000)), frequency: 600) > 0.5)
        let sequences = packets.map { $0.withUnsafeBytes { try! RTPPacketView(parsing: $0).sequenceNumber } }
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $1 == $0 &+ 1 })
    }

    @Test("the limiter keeps a loud mix from wrapping around")
    func limiter() {
        let bus = AudioMixBus(frameSamples: 960)
        let loud = [Int16](repeating: 30_000, count: 960)
        var out = [Int16](repeating: 0, count: 960)
        var limiter = MixLimiter()
        loud.withUnsafeBufferPointer { p in
            bus.clear()
            bus.add(p.baseAddress!)
            bus.add(p.baseAddress!)
            bus.add(p.baseAddress!)
            out.withUnsafeMutableBufferPointer { bus.mix(into: $0.baseAddress!, limiter: &limiter) }
        }
        #expect(out.allSatisfy { $0 > 25_000 && $0 <= 32_767 })
        #expect(limiter.gain < 0.5)
    }
}
