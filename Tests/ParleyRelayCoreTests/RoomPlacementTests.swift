import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// In a cluster, a join for a room that lives on another node is answered with that node (`RoomPlacement`,
/// `roomElsewhere`); a room already open here is joined here whatever the directory says.
@Suite("Room placement: joins for another node's room")
struct RoomPlacementTests {
    /// A relay key as a node's record names it (the canonical base64url of 32 bytes).
    static let key = "hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHo"

    @Test("a room the directory places elsewhere is refused with that node's address and key; an open room here is joined; no room is opened for the refused join")
    func refusedWithTheNode() throws {
        let net = FakeNetwork()
        let here = net.addClient("here", room: "local")
        net.joinAll()
        net.core.shared.placement.update(["far-room": "10.0.0.9:7400", "local": "10.0.0.9:7400"], relayKey: Self.key)
        let far = net.addClient("far", room: "far-room")
        let again = net.addClient("again", room: "local")
        net.joinAll()
        #expect(far.events.contains(.refused(.roomElsewhere, "10.0.0.9:7400 \(Self.key)")))
        #expect(net.core.snapshot().map(\.name) == ["local"])
        #expect(again.session.welcome != nil)  // the room is open here: it stays here
        #expect(here.session.welcome != nil)
        net.core.shared.placement.update([:], relayKey: Self.key)
        let later = net.addClient("later", room: "far-room")
        net.joinAll()
        #expect(later.session.welcome != nil)  // the other node let it go: opened here
    }

    @Test("a new room belongs to one node that every node works out alike (rendezvous hashing over the live nodes); rooms spread over them; alone, everything is here")
    func rendezvous() {
        let nodes = [(id: "a", udp: "10.0.0.1:7400"), (id: "b", udp: "10.0.0.2:7400"), (id: "c", udp: "10.0.0.3:7400")]
        let views = nodes.map { me -> RoomPlacement in
            let p = RoomPlacement()
            p.update([:], nodes: nodes, selfID: me.id, relayKey: Self.key)
            return p
        }
        var owners: [String: Int] = [:]
        for k in 0..<300 {
            let room = "room-\(k)"
            // Each node either keeps the room (nil) or names the same other node; exactly one keeps it.
            let answers = views.map { $0.node(for: room) }
            let keepers = answers.enumerated().filter { $0.element == nil }.map(\.offset)
            #expect(keepers.count == 1, "\(room): \(answers)")
            guard let keeper = keepers.first else { continue }
            #expect(answers.allSatisfy { $0 == nil || $0?.address.description == nodes[keeper].udp }, "\(room): \(answers)")
            owners[nodes[keeper].id, default: 0] += 1
        }
        #expect(owners.values.allSatisfy { $0 > 60 }, "\(owners)")  // about 100 each
        // A room open on a node stays there whatever the hash says; one node alone places nothing elsewhere.
        views[0].update(["room-1": "10.0.0.3:7400"], nodes: nodes, selfID: "a", relayKey: Self.key)
        #expect(views[0].node(for: "room-1")?.description == "10.0.0.3:7400 \(Self.key)")
        let alone = RoomPlacement()
        alone.update([:], nodes: [nodes[0]], selfID: "a", relayKey: Self.key)
        #expect(alone.node(for: "room-1") == nil)
        #expect(RoomPlacement.score("room", "a") == RoomPlacement.score("room", "a"))
    }

    static let nodes = [ClusterNode(id: "a", udp: "10.0.0.1:7400", ports: [7400, 7401], boot: 1, relayKey: key),
                        ClusterNode(id: "b", udp: "10.0.0.2:7400", ports: [7400, 7401], boot: 2, relayKey: key),
                        ClusterNode(id: "c", udp: "10.0.0.3:7400", ports: [7400], boot: 3, relayKey: key)]

    @Test("a join goes to the room's node until it holds cascade_after of the room's members; then, or when it drains, it stays here")
    func cascadeAfter() {
        var nodes = Self.nodes
        nodes[1].roomMembers = ["big": 3]
        let p = RoomPlacement()
        p.update(rooms: ["big": "b"], nodes: nodes, selfID: "a")
        #expect(p.node(for: "big", cascadeAfter: 4)?.address.description == "10.0.0.2:7400")
        #expect(p.node(for: "big", cascadeAfter: 3) == nil)
        #expect(p.node(for: "big", cascadeAfter: 0) == nil)
        nodes[1].draining = true
        p.update(rooms: ["big": "b"], nodes: nodes, selfID: "a")
        #expect(p.node(for: "big", cascadeAfter: 500) == nil)  // its node drains: taken here
        #expect(!p.otherNodes().map(\.address.description).contains("10.0.0.2:7400"))  // and no welcome names it
    }

    @Test("a draining node sends every join away: to a node with members of the room, else to the hash's pick among the others")
    func drainingSendsAway() {
        var nodes = Self.nodes
        nodes[2].roomMembers = ["shared": 2]
        let p = RoomPlacement()
        p.update(rooms: ["shared": "a"], nodes: nodes, selfID: "a")
        #expect(p.node(for: "shared", cascadeAfter: 500, draining: true)?.address.description == "10.0.0.3:7400")
        for k in 0..<50 {
            let answer = p.node(for: "room-\(k)", cascadeAfter: 500, draining: true)?.address.description
            #expect(answer == "10.0.0.2:7400" || answer == "10.0.0.3:7400")
        }
        let alone = RoomPlacement()
        alone.update(rooms: [:], nodes: [nodes[0]], selfID: "a")
        #expect(alone.node(for: "x", cascadeAfter: 500, draining: true) == nil)  // nowhere else to go
    }

    @Test("placement by load: a node much fuller than the emptiest gets no new rooms; even loads spread rooms by hash")
    func byLoad() {
        var nodes = Self.nodes
        nodes[1].members = 1_000
        let views = ["a", "b", "c"].map { me -> RoomPlacement in
            let p = RoomPlacement()
            p.update(rooms: [:], nodes: nodes, selfID: me)
            return p
        }
        var owners: [String: Int] = [:]
        for k in 0..<200 {
            let answers = views.map { $0.node(for: "room-\(k)", cascadeAfter: 500) }
            let keepers = answers.enumerated().filter { $0.element == nil }.map(\.offset)
            #expect(keepers.count == 1 && keepers != [1], "room-\(k): \(answers)")
            if let k = keepers.first { owners[["a", "b", "c"][k], default: 0] += 1 }
        }
        #expect(owners["b"] == nil && owners["a", default: 0] > 50 && owners["c", default: 0] > 50, "\(owners)")
    }

    @Test("cascade peers: the nodes the directory lists with the room and its rendezvous node, at the worker that owns it there; senders checked by start and address")
    func cascadeTargetsAndLiveness() {
        var nodes = Self.nodes
        nodes[1].roomMembers = ["r": 4]
        let p = RoomPlacement()
        p.update(rooms: [:], nodes: nodes, selfID: "a")
        let targets = p.cascadeTargets(for: "r")
        #expect(targets.contains { $0.key == ClusterIdentity.key(of: "b") })
        let pick = nodes.max { RoomPlacement.score("r", $0.id) < RoomPlacement.score("r", $1.id) }!.id
        if pick != "a" { #expect(targets.contains { $0.key == ClusterIdentity.key(of: pick) }) }
        #expect(!targets.contains { $0.key == ClusterIdentity.key(of: "a") })
        for t in targets { #expect([7400, 7401].contains(t.address.port) && Int(t.worker) == Int(t.address.port) - 7400) }
        let b = ClusterIdentity.key(of: "b")
        #expect(p.isLive(node: b, boot: 2, from: PeerAddress(ipv4: 10, 0, 0, 2, port: 7401)))
        #expect(!p.isLive(node: b, boot: 1, from: PeerAddress(ipv4: 10, 0, 0, 2, port: 7401)))  // an earlier start
        #expect(!p.isLive(node: b, boot: 2, from: PeerAddress(ipv4: 10, 0, 0, 2, port: 9999)))  // not one of its ports
        #expect(!p.isLive(node: b, boot: 2, from: PeerAddress(ipv4: 10, 0, 0, 9, port: 7401)))  // another host
        #expect(!p.isLive(node: ClusterIdentity.key(of: "z"), boot: 2, from: PeerAddress(ipv4: 10, 0, 0, 2, port: 7401)))
    }

    @Test("issue 33: a client is only ever sent to a node with its key: the pointer carries it, and a node whose key is unusable is never picked nor offered")
    func pointersCarryKeys() {
        var nodes = Self.nodes
        nodes[1].roomMembers = ["big": 3]
        let p = RoomPlacement()
        p.update(rooms: ["big": "b"], nodes: nodes, selfID: "a")
        #expect(p.node(for: "big", cascadeAfter: 500) == NodePointer(address: PeerAddress(ipv4: 10, 0, 0, 2, port: 7400), relayKey: Self.key))
        #expect(p.otherNodes().map(\.description) == ["10.0.0.2:7400 \(Self.key)", "10.0.0.3:7400 \(Self.key)"])
        nodes[1].relayKey = "not a key"
        p.update(rooms: ["big": "b"], nodes: nodes, selfID: "a")
        #expect(p.node(for: "big", cascadeAfter: 500) == nil)  // taken here rather than sent where no key is known
        #expect(p.otherNodes().map(\.address.description) == ["10.0.0.3:7400"])
        for k in 0..<50 { #expect(p.node(for: "room-\(k)", cascadeAfter: 500)?.address.description != "10.0.0.2:7400") }
    }
}
