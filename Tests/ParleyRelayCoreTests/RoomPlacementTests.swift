import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// In a cluster, a join for a room that lives on another node is answered with that node (`RoomPlacement`,
/// `roomElsewhere`); a room already open here is joined here whatever the directory says.
@Suite("Room placement: joins for another node's room")
struct RoomPlacementTests {
    @Test("a room the directory places elsewhere is refused with that node's address; an open room here is joined; no room is opened for the refused join")
    func refusedWithTheNode() throws {
        let net = FakeNetwork()
        let here = net.addClient("here", room: "local")
        net.joinAll()
        net.core.shared.placement.update(["far-room": "10.0.0.9:7400", "local": "10.0.0.9:7400"])
        let far = net.addClient("far", room: "far-room")
        let again = net.addClient("again", room: "local")
        net.joinAll()
        #expect(far.events.contains(.refused(.roomElsewhere, "10.0.0.9:7400")))
        #expect(net.core.snapshot().map(\.name) == ["local"])
        #expect(again.session.welcome != nil)  // the room is open here: it stays here
        #expect(here.session.welcome != nil)
        net.core.shared.placement.update([:])
        let later = net.addClient("later", room: "far-room")
        net.joinAll()
        #expect(later.session.welcome != nil)  // the other node let it go: opened here
    }

    @Test("a new room belongs to one node that every node works out alike (rendezvous hashing over the live nodes); rooms spread over them; alone, everything is here")
    func rendezvous() {
        let nodes = [(id: "a", udp: "10.0.0.1:7400"), (id: "b", udp: "10.0.0.2:7400"), (id: "c", udp: "10.0.0.3:7400")]
        let views = nodes.map { me -> RoomPlacement in
            let p = RoomPlacement()
            p.update([:], nodes: nodes, selfID: me.id)
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
            #expect(answers.allSatisfy { $0 == nil || $0 == nodes[keeper].udp }, "\(room): \(answers)")
            owners[nodes[keeper].id, default: 0] += 1
        }
        #expect(owners.values.allSatisfy { $0 > 60 }, "\(owners)")  // about 100 each
        // A room open on a node stays there whatever the hash says; one node alone places nothing elsewhere.
        views[0].update(["room-1": "10.0.0.3:7400"], nodes: nodes, selfID: "a")
        #expect(views[0].node(for: "room-1") == "10.0.0.3:7400")
        let alone = RoomPlacement()
        alone.update([:], nodes: [nodes[0]], selfID: "a")
        #expect(alone.node(for: "room-1") == nil)
        #expect(RoomPlacement.score("room", "a") == RoomPlacement.score("room", "a"))
    }
}
