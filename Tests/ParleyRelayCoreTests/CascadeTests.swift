import ParleyAuth
import ParleyClientCore
import ParleyCrypto
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// Two nodes of a cluster as two fake networks on one manual clock, joined by their relay-to-relay links
/// (`RelayCore+Cascade.swift`): what a room spanning them does, deterministically.
@Suite("Cascading: one room over two nodes")
struct CascadeTests {
    static let secret = Array("cluster secret".utf8)

    /// Nodes "a" (10.0.0.1) and "b" (10.0.0.2), each placing `room` on "a" and knowing the other live.
    static func cluster(room: String = "lobby", config: RelayCoreConfig = RelayCoreConfig(), bootB: UInt64 = 22,
                        encrypted: Bool = false) -> (FakeNetwork, FakeNetwork) {
        var config = config
        config.cascadeAfter = 0
        let idA = ClusterIdentity(nodeID: "a", secret: secret, boot: 11), idB = ClusterIdentity(nodeID: "b", secret: secret, boot: bootB)
        let a = FakeNetwork(config: config, seed: 13, encrypted: encrypted, host: 1, cluster: idA)
        let b = FakeNetwork(config: config, seed: 99, encrypted: encrypted, host: 2, cluster: idB)
        a.others = [b]
        b.others = [a]
        let nodes = [ClusterNode(id: "a", udp: "10.0.0.1:7400", ports: [7400], boot: 11, roomMembers: [room: 1], relayKey: RoomPlacementTests.key),
                     ClusterNode(id: "b", udp: "10.0.0.2:7400", ports: [7400], boot: bootB, roomMembers: [room: 1], relayKey: RoomPlacementTests.key)]
        a.shared.placement.update(rooms: [room: "a"], nodes: nodes, selfID: "a")
        b.shared.placement.update(rooms: [room: "a"], nodes: nodes, selfID: "b")
        return (a, b)
    }

    /// Both clocks forward together, datagrams moving both ways after each step.
    static func advance(_ nets: [FakeNetwork], milliseconds: Int64, each: (() -> Void)? = nil) {
        for _ in 0..<(milliseconds / 20) {
            each?()
            for n in nets { n.advance(milliseconds: 20) }
            for _ in 0..<3 { for n in nets { n.exchange() } }
        }
    }

    @Test("members of each node are announced on the other; a speaker on one node is heard by listeners on both; a leave reaches the other node")
    func membersAndMedia() {
        let (a, b) = Self.cluster()
        let ann = a.addClient("ann"), al = a.addClient("al")
        let bob = b.addClient("bob"), bea = b.addClient("bea")
        a.joinAll()
        b.joinAll()
        Self.advance([a, b], milliseconds: 1_200)
        // Each node knows the other's members (as members of the room, not sessions of its own).
        #expect(Set(a.core.snapshot()[0].members.map(\.identity)) == ["ann", "al", "bob", "bea"])
        #expect(a.core.snapshot()[0].members.filter { $0.transport == "cascade" }.map(\.identity).sorted() == ["bea", "bob"])
        #expect(ann.memberEvents.contains { $0.0 == .joined && $0.1 == "bob" })
        #expect(bob.memberEvents.contains { $0.0 == .joined && $0.1 == "ann" })
        #expect(a.core.memberCount == 2 && b.core.memberCount == 2)

        // Ann speaks: Al (same node) and Bob, Bea (the other node) receive her stream, once each.
        Self.advance([a, b], milliseconds: 400) { ann.speak(level: 20) }
        for listener in [al, bob, bea] { #expect((listener.media[ann.ssrc]?.count ?? 0) >= 15, "\(listener.identity)") }
        #expect(ann.media[ann.ssrc] == nil)
        #expect(a.core.counters.cascadeOut > 0 && b.core.counters.cascadeIn > 0)
        // Bob speaks on b: Ann and Al hear him.
        Self.advance([a, b], milliseconds: 400) { bob.speak(level: 30) }
        for listener in [ann, al, bea] { #expect((listener.media[bob.ssrc]?.count ?? 0) >= 15, "\(listener.identity)") }

        // Bob leaves b: a removes him within a roster (≤ 1 s).
        bob.online = false
        b.core.removeMember(b.core.member(identity: "bob")!, reason: "left", goodbye: nil, now: b.now)
        Self.advance([a, b], milliseconds: 400)
        #expect(ann.memberEvents.contains { $0.0 == .left && $0.1 == "bob" })
        #expect(!a.core.snapshot()[0].members.map(\.identity).contains("bob"))
    }

    @Test("a member moving to the other node is listed once there while the node it left still names it")
    func moverListedOnce() {
        let (a, b) = Self.cluster()
        _ = a.addClient("ann")
        _ = b.addClient("bob")
        a.joinAll()
        b.joinAll()
        Self.advance([a, b], milliseconds: 1_200)
        // Ann joins b (as a drained member does) while a still has her: b holds her twice until a's next roster.
        _ = b.addClient("ann")
        b.joinAll()
        #expect(b.core.rooms["lobby"]?.members.filter { $0.identity == "ann" }.count == 2)
        let listed = b.core.snapshot()[0].members
        #expect(listed.map(\.identity).sorted() == ["ann", "bob"], "\(listed.map(\.identity))")
        #expect(listed.first { $0.identity == "ann" }?.transport == "parley")
    }

    @Test("speaker selection is the same on both nodes: with one forwarded speaker, every listener on either node hears the loudest, wherever it is")
    func sameLoudest() {
        var config = RelayCoreConfig()
        config.maxForwardedSpeakers = 1
        let (a, b) = Self.cluster(config: config)
        let quiet = a.addClient("quiet"), la = a.addClient("la")
        let loud = b.addClient("loud"), lb = b.addClient("lb")
        a.joinAll()
        b.joinAll()
        Self.advance([a, b], milliseconds: 1_200)
        // Quiet speaks first (alone, forwarded), then loud joins in much louder and takes the one slot everywhere.
        Self.advance([a, b], milliseconds: 600) { quiet.speak(level: 60) }
        Self.advance([a, b], milliseconds: 3_000) {
            quiet.speak(level: 60)
            loud.speak(level: 10)
        }
        la.media = [:]
        lb.media = [:]
        Self.advance([a, b], milliseconds: 1_000) {
            quiet.speak(level: 60)
            loud.speak(level: 10)
        }
        for listener in [la, lb] {
            #expect((listener.media[loud.ssrc]?.count ?? 0) >= 40, "\(listener.identity) hears the loudest")
            #expect(listener.media[quiet.ssrc] == nil, "\(listener.identity) does not hear the quieter one")
        }
        #expect(a.core.snapshot()[0].forwardedSpeakers.count == 1)
    }

    @Test("a node that goes silent is dropped after 3.5 s, its members with it; a room text reaches members of the other node")
    func silentNodeAndTexts() {
        let (a, b) = Self.cluster()
        let ann = a.addClient("ann")
        let bob = b.addClient("bob")
        a.joinAll()
        b.joinAll()
        Self.advance([a, b], milliseconds: 1_200)
        #expect(a.core.snapshot()[0].members.count == 2)
        // A text from the backend through node a's API reaches Bob on b.
        #expect(a.core.sendText(room: "lobby", text: "hi both", now: a.now) == .ok)
        Self.advance([a, b], milliseconds: 100)
        #expect(bob.events.contains { if case .text(_, _, "hi both", _) = $0 { true } else { false } })
        #expect(ann.events.contains { if case .text(_, _, "hi both", _) = $0 { true } else { false } })
        // Node b stops answering (cut off): a drops it and bob with it.
        a.others = []
        Self.advance([a], milliseconds: 4_000)
        #expect(a.core.snapshot()[0].members.map(\.identity) == ["ann"])
        #expect(ann.memberEvents.contains { $0.0 == .left && $0.1 == "bob" })
    }

    @Test("forged, replayed, misdirected and past-start datagrams of the link are dropped and change nothing")
    func hostileDatagrams() throws {
        let (a, b) = Self.cluster()
        let ann = a.addClient("ann")
        let bob = b.addClient("bob")
        a.joinAll()
        b.joinAll()
        Self.advance([a, b], milliseconds: 1_200)
        // Capture one genuine datagram from b to a.
        var captured: [UInt8]?
        Self.advance([a, b], milliseconds: 100) { bob.speak(level: 20) }
        captured = b.sent.last { $0.bytes.first == CascadeCipher.type }?.bytes
        let genuine = try #require(captured)
        let from = b.relayAddress(worker: 0, viaPublic: false)
        let before = a.core.counters.drops(.cascadeRejected)
        #expect(before == 0)
        // Replayed as it was.
        a.deliverToRelay(genuine, from: from, port: 7400)
        // Tampered body.
        var tampered = genuine
        tampered[tampered.count - 1] ^= 1
        a.deliverToRelay(tampered, from: from, port: 7400)
        // A datagram sealed with b's key (as b's worker 1 would) is refused from an address that is not b's, taken
        // from b's, and refused when it comes again.
        let sealer = CascadeSealer(root: CascadeCipher.root(secret: Self.secret), node: ClusterIdentity.key(of: "b"), boot: 22, worker: 1)
        let body = CascadeMessage.text(room: "lobby", from: 0, to: "", fragment: TextFragment.split("through the link", messageID: 9)![0]).bytes
        var sealed = [UInt8](repeating: 0, count: body.count + CascadeCipher.overhead)
        let n = body.withUnsafeBytes { b in sealed.withUnsafeMutableBytes { sealer.seal(b, receiverWorker: 0, into: $0) } }
        sealed = Array(sealed.prefix(n))
        a.deliverToRelay(sealed, from: PeerAddress(ipv4: 10, 0, 0, 9, port: 7400), port: 7400)
        a.exchange()
        #expect(!ann.events.contains { if case .text(_, _, "through the link", _) = $0 { true } else { false } })
        a.deliverToRelay(sealed, from: from, port: 7400)
        a.exchange()
        #expect(ann.events.contains { if case .text(_, _, "through the link", _) = $0 { true } else { false } })
        a.deliverToRelay(sealed, from: from, port: 7400)
        // Misdirected to another worker index.
        var misdirected = genuine
        misdirected[3] = 1
        a.deliverToRelay(misdirected, from: from, port: 7400)
        // A start of b the directory does not know (its boot changed in the header).
        var pastStart = genuine
        pastStart[19] ^= 0xFF
        a.deliverToRelay(pastStart, from: from, port: 7400)
        #expect(a.core.counters.drops(.cascadeRejected) == before + 6)
        // Short and random bytes with the link's first byte.
        a.deliverToRelay([CascadeCipher.type], from: from, port: 7400)
        a.deliverToRelay([CascadeCipher.type, 1] + [UInt8](repeating: 7, count: 60), from: from, port: 7400)
        #expect(a.core.counters.drops(.cascadeRejected) == before + 8)
        #expect(a.core.snapshot()[0].members.count == 2)
    }

    @Test("a mix room mixes on one node: the other sends it its speakers; a listener there hears both speakers in one mix, each speaker hears only the other")
    func mixAcrossNodes() throws {
        let (a, b) = Self.cluster()
        let ann = a.addClient("ann", token: a.token("ann", mode: "mix"))
        let bob = b.addClient("bob", token: b.token("bob", mode: "mix"))
        let bea = b.addClient("bea", token: b.token("bea", mode: "mix"))
        let al = a.addClient("al", token: a.token("al", mode: "mix"))
        a.joinAll()
        b.joinAll()
        Self.advance([a, b], milliseconds: 1_200)
        let mixers = [a, b].filter { $0.core.rooms["lobby"]?.mixesHere == true }
        #expect(mixers.count == 1)
        let annTone = try ToneMember(ann, frequency: 440), bobTone = try ToneMember(bob, frequency: 880)
        let listeners = [(bea, b), (al, a), (ann, a), (bob, b)].map { (try! ToneMember($0.0, frequency: 0), $0.1) }
        for (l, _) in listeners { l.client.received = [] }
        Self.advance([a, b], milliseconds: 2_000) {
            try? annTone.send()
            try? bobTone.send()
        }
        for (l, _) in listeners { try l.decodeReceived(l.client.received) }
        let heard = Dictionary(uniqueKeysWithValues: listeners.map { ($0.0.client.identity, $0.0) })
        for name in ["bea", "al"] {
            let h = heard[name]!
            #expect(h.heard.count > 48_000, "\(name) got a mix")
            #expect(toneShare(Array(h.heard.suffix(48_000)), frequency: 440) > 0.2, "\(name) hears ann")
            #expect(toneShare(Array(h.heard.suffix(48_000)), frequency: 880) > 0.2, "\(name) hears bob")
            #expect(h.csrcsHeard == [ann.ssrc, bob.ssrc], "\(name): the mix names both speakers")
        }
        // Each speaker hears the other, not itself (its minus-one mix, made on the mixing node, sent through its own).
        #expect(toneShare(Array(heard["ann"]!.heard.suffix(48_000)), frequency: 880) > 0.5)
        #expect(toneShare(Array(heard["ann"]!.heard.suffix(48_000)), frequency: 440) < 0.1)
        #expect(toneShare(Array(heard["bob"]!.heard.suffix(48_000)), frequency: 440) > 0.5)
        #expect(toneShare(Array(heard["bob"]!.heard.suffix(48_000)), frequency: 880) < 0.1)
        // Only one node encoded: the other has no mixer running.
        let idle = [a, b].first { $0.core.rooms["lobby"]?.mixesHere == false }!
        #expect(idle.core.rooms["lobby"]!.mix!.encodes == 0)
        // The other node's members are told who speaks there too (from the mix's CSRC levels): the mixing node's
        // speaker is in their speaker list.
        let (farSpeaker, nearListener) = idle === b ? (ann, bea) : (bob, al)
        #expect(nearListener.lastSpeakers?.contains { $0.ssrc == farSpeaker.ssrc } == true, "\(String(describing: nearListener.lastSpeakers))")
    }

    @Test("a hybrid room over two nodes: the speakers hear each other's own streams across the link; each node mixes both for its own listeners")
    func hybridAcrossNodes() throws {
        let (a, b) = Self.cluster()
        let listener = Grants(publish: false)
        let ann = a.addClient("ann", token: a.token("ann", mode: "hybrid"))
        let bob = b.addClient("bob", token: b.token("bob", mode: "hybrid"))
        let bea = b.addClient("bea", token: b.token("bea", grants: listener, mode: "hybrid"))
        let al = a.addClient("al", token: a.token("al", grants: listener, mode: "hybrid"))
        a.joinAll()
        b.joinAll()
        Self.advance([a, b], milliseconds: 1_200)
        let annTone = try ToneMember(ann, frequency: 440), bobTone = try ToneMember(bob, frequency: 880)
        for c in [ann, bob, bea, al] { c.received = [] }
        Self.advance([a, b], milliseconds: 2_000) {
            try? annTone.send()
            try? bobTone.send()
        }
        let mixA = try #require(a.core.rooms["lobby"]?.mix), mixB = try #require(b.core.rooms["lobby"]?.mix)
        // The speakers: the other's own stream, across the link, and no mix.
        #expect((ann.media[bob.ssrc]?.count ?? 0) >= 80 && (bob.media[ann.ssrc]?.count ?? 0) >= 80)
        #expect(ann.media[mixA.ssrc] == nil && bob.media[mixB.ssrc] == nil)
        // The listeners: their own node's mix of both speakers, and no speaker's own stream.
        for (l, mix) in [(al, mixA), (bea, mixB)] {
            #expect(Set(l.media.keys) == Set([mix.ssrc]), "\(l.identity) got \(Array(l.media.keys))")
            let ear = try ToneMember(l, frequency: 0)
            try ear.decodeReceived(l.received)
            #expect(ear.csrcsHeard == [ann.ssrc, bob.ssrc], "\(l.identity): the mix names both speakers")
            let tail = Array(ear.heard.suffix(48_000))
            #expect(toneShare(tail, frequency: 440) > 0.2 && toneShare(tail, frequency: 880) > 0.2, "\(l.identity) hears both")
        }
        // Both nodes mix (for their own listeners), one encode per frame each.
        #expect(mixA.encodes > 50 && mixB.encodes > 50)
        #expect(mixA.encodes <= mixA.mixes && mixB.encodes <= mixB.mixes)
    }

    @Test("a 4 KB room text reaches the other node in fragments, every link datagram under 1,200 bytes; the member there gets it whole")
    func longTextInFragments() {
        let (a, b) = Self.cluster()
        let ann = a.addClient("ann")
        let bob = b.addClient("bob")
        a.joinAll()
        b.joinAll()
        Self.advance([a, b], milliseconds: 1_200)
        let long = String(repeating: "0123456789abcdef", count: 256)  // 4,096 bytes, the most a text may have
        let sentBefore = a.sent.count
        #expect(a.core.sendText(room: "lobby", text: long, now: a.now) == .ok)
        Self.advance([a, b], milliseconds: 200)
        let link = a.sent[sentBefore...].filter { $0.bytes.first == CascadeCipher.type && $0.to.port == 7400 && $0.to != ann.address }
        #expect(link.count >= 5)
        #expect(link.allSatisfy { $0.bytes.count < 1_200 }, "\(link.map(\.bytes.count))")
        #expect(bob.events.contains { if case .text(_, _, long, _) = $0 { true } else { false } })
    }

    @Test("every message of the link survives encoding and parsing; every truncation of one is refused, never misread")
    func messagesRoundTrip() {
        let messages: [CascadeMessage] = [
            .media(room: "lobby", origin: 7, level: 20, rtp: [0x80, 111, 0, 1, 0, 0, 0, 9, 0, 0, 0, 5, 1, 2, 3]),
            .roster(room: "lobby", CascadeRoster(epoch: 3, part: 0, parts: 2, audience: 40, peers: [1, 2],
                                                 members: [MemberEntry(memberID: 9, ssrc: 77, flags: [.publisher, .subscriber], identity: "ann", name: "Ann")])),
            .mix(room: "lobby", target: 0, frame: 12, rtp: [0x81, 111, 0, 0, 0, 0, 0, 9, 0, 0, 0, 5, 0, 0, 0, 7, 9]),
            .text(room: "lobby", from: 3, to: "bob", fragment: TextFragment(messageID: 4, index: 0, count: 1, chunk: Array("hi".utf8))),
            .invite(callID: 5, caller: "ann", name: "Ann", callee: "bob", keyShare: [UInt8](repeating: 1, count: 32)),
            .hangup(callID: 5, identity: "ann"),
            .callStatus(to: "ann", CallStatus(callID: 5, state: .answered, reason: "", room: "call-x", token: "t.o.k", keyShare: [])),
            .directText(from: "ann", to: "bob", fragment: TextFragment(messageID: 1, index: 0, count: 1, chunk: Array("yo".utf8))),
        ]
        for m in messages {
            let bytes = m.bytes
            #expect(bytes.withUnsafeBytes { CascadeMessage(parsing: $0) } == m)
            // Media and mix bodies end in a packet of any length; the others end exactly.
            if case .media = m { continue }
            if case .mix = m { continue }
            for cut in 0..<bytes.count {
                #expect(Array(bytes.prefix(cut)).withUnsafeBytes { CascadeMessage(parsing: $0) } == nil, "\(m) cut at \(cut)")
            }
        }
    }

    @Test("encrypted members: a node cut off long enough to be dropped, then back with the same members, is heard again (its streams continue under the room key)")
    func nodeBackAfterADrop() {
        let (a, b) = Self.cluster(encrypted: true)
        let ann = a.addClient("ann")
        let bob = b.addClient("bob")
        a.joinAll()
        b.joinAll()
        Self.advance([a, b], milliseconds: 1_200)
        Self.advance([a, b], milliseconds: 400) { bob.speak(level: 20) }
        let before = ann.media[bob.ssrc]?.count ?? 0
        #expect(before >= 15 && ann.rejectedMedia == 0)
        a.others = []
        b.others = []
        Self.advance([a, b], milliseconds: 4_000)
        #expect(!a.core.snapshot()[0].members.map(\.identity).contains("bob"))
        a.others = [b]
        b.others = [a]
        Self.advance([a, b], milliseconds: 1_200)
        #expect(a.core.snapshot()[0].members.map(\.identity).contains("bob"))
        Self.advance([a, b], milliseconds: 400) { bob.speak(level: 20) }
        #expect((ann.media[bob.ssrc]?.count ?? 0) >= before + 15, "\(ann.media[bob.ssrc]?.count ?? 0)")
        #expect(ann.rejectedMedia == 0)
        #expect(a.core.counters.drops(.srtpReplayed) == 0)
    }

    @Test("nodes that opened a room before the directory lists it find each other through its rendezvous node, which has no members of it")
    func rendezvousIntroduces() {
        let ids = ["a", "b", "c"].enumerated().map { k, id in ClusterIdentity(nodeID: id, secret: Self.secret, boot: UInt64(k + 1)) }
        // A room whose rendezvous node (the hash's pick among the three) is c: the members join a and b.
        let room = (0..<1_000).map { "room-\($0)" }.first { r in
            ["a", "b", "c"].max { RoomPlacement.score(r, $0) < RoomPlacement.score(r, $1) } == "c"
        }!
        var config = RelayCoreConfig()
        config.cascadeAfter = 0
        let nets = ids.enumerated().map { k, id in FakeNetwork(config: config, seed: UInt64(13 + k), host: UInt8(k + 1), cluster: id) }
        for n in nets { n.others = nets.filter { $0 !== n } }
        // The directory knows the nodes but no rooms yet (it is read once a second).
        let nodes = ["a", "b", "c"].enumerated().map { k, id in
            ClusterNode(id: id, udp: "10.0.0.\(k + 1):7400", ports: [7400], boot: UInt64(k + 1), relayKey: RoomPlacementTests.key)
        }
        for (k, n) in nets.enumerated() { n.shared.placement.update(rooms: [:], nodes: nodes, selfID: ["a", "b", "c"][k]) }
        let ann = nets[0].addClient("ann", room: room)
        let bob = nets[1].addClient("bob", room: room)
        nets[0].joinAll()
        nets[1].joinAll()
        Self.advance(nets, milliseconds: 600)
        #expect(ann.memberEvents.contains { $0.0 == .joined && $0.1 == "bob" })
        #expect(bob.memberEvents.contains { $0.0 == .joined && $0.1 == "ann" })
        Self.advance(nets, milliseconds: 400) { bob.speak(level: 20) }
        #expect((ann.media[bob.ssrc]?.count ?? 0) >= 15)
        // c took part without opening the room.
        #expect(nets[2].core.snapshot().isEmpty)
    }
}
