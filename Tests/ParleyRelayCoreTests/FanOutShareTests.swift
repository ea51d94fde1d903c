import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// A big room's listeners shared among the workers for sending (`FanOutTable.shares`, `RelayCore.spread`): each
/// listener gets each packet once, whichever worker sends it; speakers and endpoints stay with the owner; counters
/// stay exact.
@Suite("Fan-out shares: a big room's listeners sent to by every worker")
struct FanOutShareTests {
    func world(threshold: Int) -> FakeNetwork {
        var config = RelayCoreConfig()
        config.spreadThreshold = threshold
        return FakeNetwork(config: config, workers: 2, encrypted: true)
    }

    @Test("past the threshold, the other worker's share gets each packet once; every listener hears every packet exactly once")
    func sharesDeliverOnce() throws {
        let net = world(threshold: 4)
        let host = net.addClient("host")
        let listeners = (0..<8).map { net.addClient("l\($0)", token: net.token("l\($0)", grants: Grants(publish: false))) }
        net.joinAll()
        for _ in 0..<5 { host.speak(level: 20); net.advance(milliseconds: 20) }
        for l in listeners {
            #expect(l.media[host.ssrc]?.count == 5, "\(l.identity)")
            #expect(l.rejectedMedia == 0)
        }
        // Half the listeners (those that cannot publish, every other one) were the other worker's to send to.
        #expect(net.spreadDatagrams == 5 * 4)
        let owner = try #require(net.cores.first { $0.roomCount == 1 })
        let room = try #require(owner.snapshot().first)
        for m in room.members where m.identity != "host" { #expect(m.stats.packetsOut == 5, "\(m.identity)") }
        #expect(host.media.isEmpty)  // the speaker never hears itself
    }

    @Test("below the threshold, or with one worker, nothing is shared")
    func smallRoomsStayLocal() {
        for (threshold, workers) in [(100, 2), (4, 1)] {
            var config = RelayCoreConfig()
            config.spreadThreshold = threshold
            let net = FakeNetwork(config: config, workers: workers, encrypted: true)
            let host = net.addClient("host")
            let listeners = (0..<8).map { net.addClient("l\($0)", token: net.token("l\($0)", grants: Grants(publish: false))) }
            net.joinAll()
            for _ in 0..<3 { host.speak(level: 20); net.advance(milliseconds: 20) }
            #expect(listeners.allSatisfy { $0.media[host.ssrc]?.count == 3 })
            #expect(net.spreadDatagrams == 0)
        }
    }
}
