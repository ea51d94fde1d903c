import ParleyClientCore
import ParleyWire
import Testing

@Suite("The member list as a person sees it: one entry per identity, a member moving between nodes listed once")
struct MemberListingTests {
    static func member(_ id: UInt32, _ identity: String, muted: Bool = false) -> MemberEntry {
        MemberEntry(memberID: id, ssrc: 1000 + id, flags: muted ? [.publisher, .muted] : [.publisher],
                    identity: identity, name: "")
    }

    @Test("a mover's new session joins before its old one leaves: neither is said, it is listed once, as its newest")
    func moverListedOnce() {
        var list = MemberListing()
        list.add([Self.member(3, "bob"), Self.member(5, "ann")])
        // The same person, through the node it moved to.
        let secondJoin = list.joined(Self.member(9, "ann", muted: true))
        #expect(!secondJoin)
        #expect(list.entries.map(\.identity) == ["ann", "bob"])
        #expect(list.entries.first?.memberID == 9 && list.entries.first?.flags.contains(.muted) == true)
        let oldLeaves = list.left(Self.member(5, "ann"))  // the node it left drops the old session: ann is still here
        #expect(!oldLeaves)
        #expect(list.entries.map(\.memberID) == [9, 3])
        let reallyLeaves = list.left(Self.member(9, "ann"))  // and when she leaves, it is said
        #expect(reallyLeaves)
        #expect(list.entries.map(\.identity) == ["bob"])
    }

    @Test("members who come and go one at a time are announced as before; a mute updates the entry")
    func plainJoinAndLeave() {
        var list = MemberListing()
        let announced = [list.joined(Self.member(1, "cat")), list.joined(Self.member(2, "dan"))]
        #expect(announced == [true, true])
        list.update(Self.member(2, "dan", muted: true))
        #expect(list[id: 2]?.flags.contains(.muted) == true && list.member(ssrc: 1001)?.identity == "cat")
        let left = list.left(Self.member(1, "cat"))
        #expect(left)
        #expect(list.entries.map(\.identity) == ["dan"])
    }

    @Test("the mover itself: the node it moved to lists its old session for a moment; not listed, its leave not said")
    func moverSeesNotItself() {
        var list = MemberListing(me: "ann")
        list.add([Self.member(1, "bob"), Self.member(2, "ann")])
        #expect(list.entries.map(\.identity) == ["bob"])
        let oldLeaves = list.left(Self.member(2, "ann"))
        let joins = list.joined(Self.member(4, "ann"))
        #expect(!oldLeaves && !joins && list.byID.count == 1)
    }

    @Test("a new welcome (a rejoin on another node) starts the list afresh: the old node's ids leave nothing behind")
    func resetOnWelcome() {
        var list = MemberListing()
        list.add([Self.member(3, "bob")])
        list.reset()
        list.add([Self.member(40, "bob")])
        #expect(list.entries.map(\.memberID) == [40] && list.byID.count == 1)
    }
}
