import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// Who is told of whom in a big room (`RoomRoster`): batched deltas past the small-room limit, audience members counted
/// and not announced, a join and leave within one interval cancelling out — through a real core and real clients.
@Suite("Room roster: batched membership deltas and audience rooms")
struct RoomRosterTests {
    /// Member events (joined/left) a client has seen, as "kind identity".
    func seen(_ c: FakeClient) -> [String] {
        c.memberEvents.filter { $0.0 == .joined || $0.0 == .left }.map { "\($0.0 == .joined ? "+" : "-")\($0.1)" }
    }
    func leave(_ c: FakeClient, _ net: FakeNetwork) {
        c.session.leave(now: net.instant)
        net.exchange()
    }

    @Test("a small room is told of each join at once; past the limit, joins within an interval reach everyone as one delta")
    func batchedPastTheLimit() {
        var config = RelayCoreConfig()
        config.memberUpdateImmediateLimit = 3
        let net = FakeNetwork(config: config)
        let first = net.addClient("m0")
        net.joinAll()
        for i in 1..<3 { net.addClient("m\(i)") }
        net.joinAll()
        #expect(seen(first) == ["+m1", "+m2"])  // 2 and 3 members: at once
        for i in 3..<8 { net.addClient("m\(i)") }
        net.joinAll()
        // The fourth member's join opened an interval: nothing more until it ends, then one batch with the rest.
        #expect(seen(first) == ["+m1", "+m2"])
        net.advance(milliseconds: Int64(config.memberUpdateInterval.milliseconds))
        #expect(seen(first) == ["+m1", "+m2", "+m3", "+m4", "+m5", "+m6", "+m7"])
        let last = net.clients[7]
        // The last joiner had the others in its member list; the batch naming them repeats nothing for it.
        #expect(seen(last).isEmpty)
        #expect(Set(last.session.members.values.map(\.identity)) == Set((0..<7).map { "m\($0)" }))
        // Leaves batch the same way; a join and a leave within one interval cancel out.
        leave(net.clients[5], net)
        let late = net.addClient("late")
        net.joinAll()
        leave(late, net)
        net.advance(milliseconds: Int64(config.memberUpdateInterval.milliseconds))
        #expect(seen(first).suffix(1) == ["-m5"])
        #expect(net.core.snapshot().first?.members.count == 7)
    }

    @Test("an audience room: listeners are counted, not announced; a joiner's list has the speakers only and it is told the count")
    func audience() throws {
        var config = RelayCoreConfig()
        config.audienceUpdateInterval = .seconds(1)
        let net = FakeNetwork(config: config)
        let host = net.addClient("host", token: net.token("host", audience: true))
        net.joinAll()
        let listeners = (0..<20).map { i in
            net.addClient("l\(i)", token: net.token("l\(i)", grants: Grants(publish: false), audience: true))
        }
        net.joinAll()
        #expect(seen(host).isEmpty)
        #expect(host.events.filter { if case .audience = $0 { true } else { false } }.isEmpty)
        net.advance(milliseconds: 1_000)
        #expect(host.session.audience == 20)
        #expect(seen(host).isEmpty)
        // A listener's member list is the host alone; it knows the audience's size from the first message.
        let l = listeners[19]
        #expect(l.session.members.values.map(\.identity) == ["host"])
        #expect(l.events.contains(.audience(20)))
        // A second speaker is announced; listeners leaving move the count only.
        let guest = net.addClient("guest", token: net.token("guest", audience: true))
        net.joinAll()
        #expect(seen(host).isEmpty)  // 22 members (the audience included: it is told too): batched
        net.advance(milliseconds: Int64(config.memberUpdateInterval.milliseconds))
        #expect(seen(host) == ["+guest"])
        #expect(listeners[0].session.members.values.map(\.identity).sorted() == ["guest", "host"])
        for c in listeners.prefix(5) { leave(c, net) }
        net.advance(milliseconds: 1_000)
        #expect(host.session.audience == 15 && guest.session.audience == 15)
        #expect(seen(host) == ["+guest"])
        let room = try #require(net.core.snapshot().first)
        #expect(room.audienceMode && room.audience == 15)
        #expect(room.members.count(where: \.audience) == 15)
        // The API's event log: the count, not 25 joins and leaves.
        let events = net.core.drainEvents().map(\.kind)
        #expect(events.filter { $0 == .memberJoined }.count == 2)
        #expect(events.contains(.audience))
    }

    @Test("deltas split to fit a datagram: every entry once, in order, each with the count", arguments: [1, 40, 200])
    func split(count: Int) throws {
        let joined = (0..<count).map { MemberEntry(memberID: UInt32($0), ssrc: 1, flags: [], identity: String(repeating: "x", count: 60) + "\($0)", name: "N") }
        let left = (0..<count).map { MemberDelta.Departure(memberID: UInt32(10_000 + $0), reason: "timed out") }
        let deltas = RoomRoster.split(joined: joined, left: left, audience: 7)
        #expect(deltas.flatMap(\.joined) == joined && deltas.flatMap(\.left) == left)
        for d in deltas {
            #expect(d.audience == 7)
            let datagram = SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: .memberDelta(d))
            let bytes = try datagram.serialized()
            #expect(bytes.count <= Signalling.maxDatagramSize)
            #expect(try SignalDatagram(parsing: bytes) == datagram)
        }
    }
}
