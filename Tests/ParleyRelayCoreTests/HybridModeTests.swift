import ParleyAuth
import ParleyWire
import Testing
@testable import ParleyRelayCore

@Suite("Hybrid mode: speakers hear each other forwarded, listeners one shared mix, one encode per frame")
struct HybridModeTests {
    /// An encrypted hybrid room: `speakers` may publish, `listeners` may not.
    func hybridRoom(_ speakers: [String], listeners: [String]) -> (FakeNetwork, [FakeClient]) {
        let net = FakeNetwork(encrypted: true)
        var clients: [FakeClient] = []
        for n in speakers + listeners {
            let grants = listeners.contains(n) ? Grants(publish: false) : Grants()
            clients.append(net.addClient(n, room: "stage", token: net.token(n, room: "stage", grants: grants, mode: "hybrid")))
        }
        net.joinAll()
        return (net, clients)
    }

    @Test("two speakers hear each other's own streams, two listeners hear one mix of both; the mixer encodes once per frame")
    func speakersForwardedListenersMixed() throws {
        let (net, c) = hybridRoom(["alice", "bob"], listeners: ["carol", "dave"])
        #expect(c.allSatisfy { $0.session.welcome?.mode == "hybrid" })
        // The room's forwarding key goes to those it forwards to: the speakers.
        #expect(c[0].session.welcome?.roomMediaKey.isEmpty == false && c[1].session.welcome?.roomMediaKey.isEmpty == false)
        #expect(c[2].session.welcome?.roomMediaKey.isEmpty == true && c[3].session.welcome?.roomMediaKey.isEmpty == true)
        let alice = try ToneMember(c[0], frequency: 440), bob = try ToneMember(c[1], frequency: 660)
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { try? alice.send(); try? bob.send() }
        let mix = try #require(net.core.rooms["stage"]?.mix)

        // Speakers: the other speaker's own SSRC, and nothing from the mixer.
        #expect((c[0].media[c[1].ssrc]?.count ?? 0) >= 45)
        #expect((c[1].media[c[0].ssrc]?.count ?? 0) >= 45)
        #expect(c[0].media[mix.ssrc] == nil && c[1].media[mix.ssrc] == nil)
        #expect(c[0].media[c[0].ssrc] == nil, "a speaker does not hear itself")
        // Listeners: the mix only, with both tones in it, and no speaker's own stream.
        for listener in c[2...3] {
            #expect(Set(listener.media.keys) == [mix.ssrc])
            #expect(listener.rejectedMedia == 0)
            let ear = try ToneMember(listener, frequency: 440)
            try ear.decodeReceived(listener.received)
            #expect(ear.csrcsHeard == [c[0].ssrc, c[1].ssrc])
            let tail = Array(ear.heard.suffix(960 * 20))
            #expect(toneShare(tail, frequency: 440) > 0.2 && toneShare(tail, frequency: 660) > 0.2)
        }
        // One encode per frame with speech (no minus-one mixes), whatever the number of speakers.
        #expect(mix.encodes > 30)
        #expect(mix.encodes <= mix.mixes)
        // (Alice's first packets, before bob's reached the mixer, went to the listeners as she sent them, and so did
        // bob's first frame while her buffer restarted.)
        #expect((c[2].media[mix.ssrc]?.count ?? 0) == mix.encodes + mix.passedThrough + mix.loneForwarded && mix.loneForwarded <= 3)
    }

    @Test("with no listener connected the mixer does nothing: no queued packets, no pulls, no encodes; the speakers still hear each other")
    func noListenersNoMixing() throws {
        let (net, c) = hybridRoom(["alice", "bob"], listeners: [])
        let alice = try ToneMember(c[0], frequency: 440), bob = try ToneMember(c[1], frequency: 660)
        net.advance(milliseconds: 600, stepMilliseconds: 20) { try? alice.send(); try? bob.send() }
        let mix = try #require(net.core.rooms["stage"]?.mix)
        #expect(mix.idle)
        #expect(mix.encodes == 0 && mix.inputCount == 0)
        #expect((c[0].media[c[1].ssrc]?.count ?? 0) >= 25 && (c[1].media[c[0].ssrc]?.count ?? 0) >= 25)

        // A listener arrives: the mix starts for it.
        let carol = net.addClient("carol", room: "stage", token: net.token("carol", room: "stage", grants: Grants(publish: false), mode: "hybrid"))
        net.joinAll()
        net.advance(milliseconds: 600, stepMilliseconds: 20) { try? alice.send(); try? bob.send() }
        #expect(!mix.idle && mix.encodes > 10)
        #expect((carol.media[mix.ssrc]?.count ?? 0) == mix.encodes)
        #expect(carol.media[c[0].ssrc] == nil && carol.media[c[1].ssrc] == nil)
    }
}
