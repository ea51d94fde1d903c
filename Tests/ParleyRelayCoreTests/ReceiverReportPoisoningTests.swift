import ParleyAuth
import ParleyMedia
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// Listeners' receiver reports size a speaker's FEC (forward mode) or the mix's (mix mode). A listener's report is
/// checked against its own earlier one and clamped, and one outlier among three or more listeners cannot steer the
/// speaker; loss that several listeners genuinely share still turns FEC on.
@Suite("Receiver-report poisoning: implausible or lone reports do not steer FEC")
struct ReceiverReportPoisoningTests {
    /// Queues a receiver report from `client` with one block about `ssrc`.
    static func report(_ client: FakeClient, about ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32,
                       highestSequence: UInt32, jitter: UInt32) {
        let block = ReportBlock(ssrc: ssrc, fractionLost: fractionLost, cumulativeLost: cumulativeLost,
                                highestSequence: highestSequence, jitter: jitter, lastSR: 0, delaySinceLastSR: 0)
        var bytes = [UInt8](repeating: 0, count: 100)
        let n = bytes.withUnsafeMutableBytes { try! ReceiverReport(ssrc: client.ssrc, reports: [block]).serialize(into: $0) }
        client.pendingMedia.append(Array(bytes[0..<n]))
    }

    /// The blocks of the receiver reports the relay sent `speaker` after its first `skip` RTCP packets.
    static func reports(to speaker: FakeClient, after skip: Int) throws -> [ReportBlock] {
        try speaker.rtcp.dropFirst(skip).map { bytes in
            let report = try bytes.withUnsafeBytes { b in
                var it = rtcpPackets(in: b)
                return try ReceiverReport(parsing: try #require(try it.next()))
            }
            return try #require(report.reports.first)
        }
    }

    /// The worst fraction lost and jitter the relay told `speaker` since its first `skip` RTCP packets (at least one).
    static func worstTold(_ speaker: FakeClient, after skip: Int) throws -> (fractionLost: UInt8, jitter: UInt32) {
        let blocks = try reports(to: speaker, after: skip)
        #expect(!blocks.isEmpty)
        return (blocks.map(\.fractionLost).max() ?? 0, blocks.map(\.jitter).max() ?? 0)
    }

    /// alice speaks; `listeners` join to hear her; a second of speech passes.
    static func room(listeners: [String]) -> (FakeNetwork, FakeClient, [FakeClient]) {
        let net = FakeNetwork()
        let alice = net.addClient("alice")
        let others = listeners.map { net.addClient($0) }
        net.joinAll()
        net.advance(milliseconds: 1_200, stepMilliseconds: 20) { alice.speak(level: 30) }
        return (net, alice, others)
    }

    @Test("one listener of three reporting 255/256 lost and 134,217,727 jitter does not reach the speaker")
    func oneOutlierAmongThree() throws {
        let (net, alice, l) = Self.room(listeners: ["bob", "carol", "mallory"])
        Self.report(l[0], about: alice.ssrc, fractionLost: 0, cumulativeLost: 0, highestSequence: 60, jitter: 100)
        Self.report(l[1], about: alice.ssrc, fractionLost: 0, cumulativeLost: 0, highestSequence: 60, jitter: 120)
        Self.report(l[2], about: alice.ssrc, fractionLost: 255, cumulativeLost: 8_000_000, highestSequence: 60, jitter: 134_217_727)
        let before = alice.rtcp.count
        net.advance(milliseconds: 1_100, stepMilliseconds: 20) { alice.speak(level: 30) }
        let block = try Self.worstTold(alice, after: before)
        #expect(block.fractionLost == 0)
        #expect(block.jitter <= 120)
        var fec = LossAdaptiveFEC()
        _ = fec.report(fractionLost: block.fractionLost, jitter: block.jitter)
        #expect(fec.expectedLossPercent == 0)
        #expect(net.core.counters.implausibleReports == 1)
    }

    @Test("an outlier that reports alone among three listeners does not reach the speaker either")
    func outlierReportingAlone() throws {
        let (net, alice, l) = Self.room(listeners: ["bob", "carol", "mallory"])
        Self.report(l[2], about: alice.ssrc, fractionLost: 255, cumulativeLost: 8_000_000, highestSequence: 60, jitter: 40_000)
        let before = alice.rtcp.count
        net.advance(milliseconds: 1_100, stepMilliseconds: 20) { alice.speak(level: 30) }
        let block = try Self.worstTold(alice, after: before)
        #expect(block.fractionLost == 0)
        #expect(block.jitter < 480)
    }

    @Test("a lone listener that received most packets cannot claim to have lost them; > 1 s of jitter is ignored")
    func loneListenerIsCheckedAgainstItsOwnCounts() throws {
        let (net, alice, l) = Self.room(listeners: ["mallory"])
        let mallory = l[0]
        // Jitter of 134,217,727 (2,796 s): ignored.
        Self.report(mallory, about: alice.ssrc, fractionLost: 255, cumulativeLost: 0, highestSequence: 60, jitter: 134_217_727)
        var before = alice.rtcp.count
        net.advance(milliseconds: 1_100, stepMilliseconds: 20) { alice.speak(level: 30) }
        var block = try Self.worstTold(alice, after: before)
        #expect(block.fractionLost == 0 && block.jitter < 480)
        // 255/256 lost with nothing lost overall: 0.
        Self.report(mallory, about: alice.ssrc, fractionLost: 255, cumulativeLost: 0, highestSequence: 110, jitter: 100)
        before = alice.rtcp.count
        net.advance(milliseconds: 1_100, stepMilliseconds: 20) { alice.speak(level: 30) }
        block = try Self.worstTold(alice, after: before)
        #expect(block.fractionLost == 0)
        // 50 more expected, 1 more lost: at most ⌈256/50⌉ = 6, not 255.
        Self.report(mallory, about: alice.ssrc, fractionLost: 255, cumulativeLost: 1, highestSequence: 160, jitter: 100)
        before = alice.rtcp.count
        net.advance(milliseconds: 1_100, stepMilliseconds: 20) { alice.speak(level: 30) }
        block = try Self.worstTold(alice, after: before)
        #expect(block.fractionLost == 6)
        #expect(net.core.counters.implausibleReports == 3)
    }

    @Test("loss that four listeners genuinely share still turns the speaker's FEC on")
    func sharedLossStillCounts() throws {
        let (net, alice, l) = Self.room(listeners: ["bob", "carol", "dave", "erin"])
        for c in l { Self.report(c, about: alice.ssrc, fractionLost: 0, cumulativeLost: 0, highestSequence: 100, jitter: 200) }
        net.advance(milliseconds: 1_100, stepMilliseconds: 20) { alice.speak(level: 30) }
        // 50 packets later each lost 3 (15/256 ≈ 6 %), with interarrival jitter of 5–8 ms.
        for (i, c) in l.enumerated() {
            Self.report(c, about: alice.ssrc, fractionLost: 15, cumulativeLost: 3, highestSequence: 150, jitter: 240 + 48 * UInt32(i))
        }
        let before = alice.rtcp.count
        net.advance(milliseconds: 1_100, stepMilliseconds: 20) { alice.speak(level: 30) }
        let block = try Self.worstTold(alice, after: before)
        #expect(block.fractionLost == 15)
        #expect(block.jitter == 240 + 48 * 2)   // the second worst
        var fec = LossAdaptiveFEC()
        _ = fec.report(fractionLost: block.fractionLost, jitter: block.jitter)
        #expect(fec.expectedLossPercent == 4)
        #expect(net.core.counters.implausibleReports == 0)
    }

    @Test("in a mix room one listener's poisoned report about the mix does not raise every mix encoder's FEC")
    func mixOutlier() throws {
        let net = FakeNetwork()
        let grants = Grants(publish: false)
        let alice = net.addClient("alice", room: "mixroom", token: net.token("alice", room: "mixroom", mode: "mix"))
        let listeners = ["bob", "carol", "mallory"].map {
            net.addClient($0, room: "mixroom", token: net.token($0, room: "mixroom", grants: grants, mode: "mix"))
        }
        net.joinAll()
        net.advance(milliseconds: 400, stepMilliseconds: 20) { alice.speak(level: 30) }
        let mix = try #require(net.core.rooms["mixroom"]?.mix)
        Self.report(listeners[0], about: mix.ssrc, fractionLost: 0, cumulativeLost: 0, highestSequence: 20, jitter: 100)
        Self.report(listeners[1], about: mix.ssrc, fractionLost: 0, cumulativeLost: 0, highestSequence: 20, jitter: 100)
        Self.report(listeners[2], about: mix.ssrc, fractionLost: 255, cumulativeLost: 8_000_000, highestSequence: 20, jitter: 40_000)
        net.advance(milliseconds: 100, stepMilliseconds: 20)
        #expect(mix.expectedLossPercent == 0)
    }

    /// (listener, fraction lost, cumulative lost, highest sequence, jitter) in order, and the verdict on each.
    static let checks: [(UInt32, UInt8, Int32, UInt32, UInt32, ListenerReports.Verdict)] = [
        (1, 13, 3, 100, 480, .taken),            // first report, something lost overall: as reported
        (2, 13, 0, 100, 480, .clamped),          // first report, nothing lost overall: 0
        (3, 0, 0, 100, 48_001, .rejected),       // more than a second of jitter
        (1, 26, 8, 150, 480, .taken),            // 50 expected, 5 lost: up to ⌈1280/50⌉ = 26
        (1, 27, 13, 200, 480, .clamped),         // 50 expected, 5 lost: 27 > 26
        (1, 9, 13, 200, 480, .clamped),          // nothing new expected: 0
        (1, 1, 14, 0x0001_0010, 480, .taken),    // across a sequence wrap (cycles + 1): 65,352 expected, 1 lost: ≤ 1
    ]

    @Test("each report is checked against the same listener's previous one")
    func checksTable() {
        var reports = ListenerReports()
        for (i, c) in Self.checks.enumerated() {
            let block = ReportBlock(ssrc: 9, fractionLost: c.1, cumulativeLost: c.2, highestSequence: c.3, jitter: c.4,
                                    lastSR: 0, delaySinceLastSR: 0)
            #expect(reports.take(block, from: c.0, now: .origin + .nanoseconds(Int64(i))) == c.5, "row \(i)")
        }
        #expect(reports.entries.map(\.listener) == [1, 2])
        #expect(reports.entries.first?.fractionLost == 1)
    }

    @Test("aggregation: the worst below three listeners, the second worst from three on; old reports do not count",
          arguments: [(2, [40, 10], 40), (3, [40, 10], 10), (3, [40], 0), (5, [40, 30, 20, 0], 30)])
    func aggregation(listeners: Int, losses: [Int], expected: Int) {
        var reports = ListenerReports()
        _ = reports.take(ReportBlock(ssrc: 9, fractionLost: 200, cumulativeLost: 9, highestSequence: 1, jitter: 9,
                                     lastSR: 0, delaySinceLastSR: 0), from: 99, now: .origin)   // before `since`
        for (i, loss) in losses.enumerated() {
            _ = reports.take(ReportBlock(ssrc: 9, fractionLost: UInt8(loss), cumulativeLost: 5, highestSequence: 10,
                                         jitter: UInt32(loss), lastSR: 0, delaySinceLastSR: 0), from: UInt32(i), now: .origin + .nanoseconds(10))
        }
        let got = reports.aggregate(listeners: listeners, since: .origin + .nanoseconds(5))
        #expect(got.fractionLost == UInt8(expected) && got.jitter == UInt32(expected))
    }
}
