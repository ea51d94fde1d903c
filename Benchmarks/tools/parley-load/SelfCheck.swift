import Glibc
import ParleyNet

/// `parley-load --self-check`: the pure rules of the report — what is expected of members asked for, the verdict
/// and its exit status, the block order, the relay limits — against cases worked by hand. Returns the exit status.
enum SelfCheck {
    static func run() -> Int32 {
        var checks = 0
        var failures: [String] = []
        func expect<T: Equatable>(_ got: T, _ want: T, _ what: String) {
            checks += 1
            if got != want { failures.append("\(what): got \(got), want \(want)") }
        }
        typealias Receipt = ExpectedPackets.MixReceipt

        // Forward: the run — 1 room of 2,001 asked, one speaker due 600 packets — expects 600 × 2,000 whether
        // 1,000 or 2,001 members got in; a refused speaker's packets are still due to the 9 others.
        expect(ExpectedPackets.forward(packetsDue: [600], membersPerRoom: 2001), 1_200_000, "forward, 2,001 asked")
        expect(ExpectedPackets.forward(packetsDue: [100, 100, 0], membersPerRoom: 10), 1_800, "forward, a silent or refused speaker")
        expect(ExpectedPackets.forward(packetsDue: [], membersPerRoom: 10), 0, "forward, no speakers")

        // Mix: listeners of room 0 saw 50, one joined late (20), one was refused (0): both are due 50. Speakers are
        // compared among speakers (minus-one mixes): 30 and a refused one due 30. Room 1 lost everyone: its members are
        // due the widest of their role in any room.
        expect(ExpectedPackets.mix([Receipt(room: 0, isSpeaker: false, range: 50), Receipt(room: 0, isSpeaker: false, range: 20),
                                    Receipt(room: 0, isSpeaker: false, range: 0), Receipt(room: 0, isSpeaker: true, range: 30),
                                    Receipt(room: 0, isSpeaker: true, range: 0)]), 50 * 3 + 30 * 2, "mix, late and refused members")
        expect(ExpectedPackets.mix([Receipt(room: 0, isSpeaker: false, range: 40), Receipt(room: 1, isSpeaker: false, range: 0),
                                    Receipt(room: 1, isSpeaker: false, range: 0)]), 120, "mix, a room with nobody admitted")

        // Verdict and exit status. Tick lateness in ms, one entry per send tick.
        func verdict(missing: [String] = [], ticks: [Double] = Array(repeating: 1, count: 150), limit: Double = 10) -> Verdict {
            var lateness = LatencyHistogram()
            for t in ticks { lateness.add(Int64(t * 1e6)) }
            return Verdict(asked: 2001, missingReasons: missing, tickLateness: lateness, lateTicks: ticks.count { $0 > limit },
                           limitMilliseconds: limit)
        }
        let preemptedOnce = Array(repeating: 1.0, count: 149) + [218]
        let behind = Array(repeating: 1.0, count: 100) + [30, 30]       // 2 % of ticks late
        let swamped = Array(repeating: 1.0, count: 62) + Array(repeating: 1500.0, count: 688)
        expect(verdict().exitStatus, 0, "verdict, all present and on time")
        expect(verdict(ticks: preemptedOnce).exitStatus, 0, "verdict, one tick preempted")
        expect(verdict(ticks: Array(repeating: 9.98, count: 150)).exitStatus, 0, "verdict, every tick just under the limit")
        expect(verdict(ticks: behind).exitStatus, Verdict.generatorLateStatus, "verdict, 2 % of ticks 30 ms late")
        expect(verdict(ticks: swamped).exitStatus, Verdict.generatorLateStatus, "verdict, generator swamped")
        expect(verdict(missing: ["room r0 is full (1000 members)"]).exitStatus, Verdict.membersMissingStatus, "verdict, one refused")
        expect(verdict(missing: ["full"], ticks: swamped).exitStatus, Verdict.bothStatus, "verdict, both")
        expect(verdict(missing: ["b", "a", "b"]).problems,
               [.membersMissing(missing: 3, asked: 2001, reasons: [.init(text: "b", count: 2), .init(text: "a", count: 1)])],
               "verdict, reasons by count")
        expect(verdict().lines, [], "verdict, nothing to say")

        // Blocks alternate which side goes first; ratios pair the k-th blocks; the median.
        expect(Blocks.order(blocksPerSide: 1), [.parley, .raw], "order, 1 block")
        expect(Blocks.order(blocksPerSide: 2), [.parley, .raw, .raw, .parley], "order, 2 blocks")
        expect(Blocks.order(blocksPerSide: 3), [.parley, .raw, .raw, .parley, .parley, .raw], "order, 3 blocks")
        expect(Blocks.pairRatios(parley: [90, 80], raw: [100, 0]), [0.9], "pair ratios, a raw block with no CPU")
        expect(Blocks.pairExtraNanoseconds(parley: [200_000, 80], raw: [250_000, 0]), [1_000],
               "ns above raw per output datagram: 5 µs against 4 µs")
        expect(Options.cpus("0"), [0], "cpu list, one")
        expect(Options.cpus("3,0-1"), [0, 1, 3], "cpu list, a range and one")
        expect(Options.cpus("1-0"), nil, "cpu list, a backward range")
        expect(Options.cpus("0,,1"), nil, "cpu list, an empty part")
        expect(Blocks.median([3, 1, 2]), 2, "median, odd")
        expect(Blocks.median([4, 1, 2, 3]), 2.5, "median, even")
        expect(Blocks.median([]), nil, "median, empty")

        // Relay limits fit the shape; find-max steps (710 members is step 3, 10 rooms × 71).
        expect(RelayLimits.environment(membersPerRoom: 2001, roomsOverRun: 1, membersAtOnce: 2001, rampSeconds: 1),
               ["PARLEY_MAX_MEMBERS_PER_ROOM": "2001", "PARLEY_MAX_ROOMS": "1", "PARLEY_JOINS_PER_SECOND": "4002"], "limits, 1 × 2,001")
        expect(RelayLimits.environment(membersPerRoom: 200_000, roomsOverRun: 70, membersAtOnce: 100, rampSeconds: 0)["PARLEY_MAX_MEMBERS_PER_ROOM"],
               "100000", "limits, clamped to the relay's range")
        expect(RelayLimits.findMaxSteps(members: 10, speakers: 3, stepSeconds: 8, capSeconds: 60), [10, 20, 37, 71, 139, 275, 547],
               "find-max steps")
        expect(RelayLimits.findMaxSteps(members: 10, speakers: 3, stepSeconds: 0.01, capSeconds: 60).last.map { $0 <= 100_000 }, true,
               "find-max steps stop at the relay's largest room")

        // Pooling blocks: sums, the worst lateness, the block with the most members missing.
        var a = RunResult(), b = RunResult()
        a.members = 10; a.joined = 10; a.packetsExpected = 100; a.packetsReceived = 100; a.tickLateness.add(2_000_000)
        b.members = 10; b.joined = 8; b.packetsExpected = 100; b.packetsReceived = 80; b.tickLateness.add(12_000_000)
        b.missingReasons = ["full", "full"]
        a.targetSwitches = (voluntary: 50, involuntary: 3); b.targetSwitches = (voluntary: 40, involuntary: 7)
        let p = RunResult.pooled([a, b])
        expect(p.deliveryRatio, 0.9, "pooled delivery")
        expect(p.joined, 8, "pooled joined, the worst block")
        expect(p.presentAtStart, 8, "pooled present at start")
        expect(p.sendLatenessMaxMilliseconds, 12, "pooled lateness, the worst")
        expect(p.tickLateness.total, 2, "pooled ticks")
        expect([p.targetSwitches.voluntary, p.targetSwitches.involuntary], [90, 10], "pooled context switches")

        // The context-switch probe reads this process's threads: a millisecond's sleep is one wait at least.
        let before = ProcessProbe(pid: getpid()).contextSwitches()
        usleep(1_000)
        let own = ProcessProbe(pid: getpid()).contextSwitches()
        expect(own.voluntary > before.voluntary, true, "context switches read from /proc")

        for f in failures { writeLine("self-check FAILED: \(f)", fd: 2) }
        writeLine("self-check: \(checks - failures.count) of \(checks) checks passed")
        return failures.isEmpty ? 0 : 1
    }
}
