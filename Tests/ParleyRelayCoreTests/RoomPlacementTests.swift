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
}
