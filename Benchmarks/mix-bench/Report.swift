import BenchmarkSupport
import Glibc
import ParleyRelayCore

/// Prints `message` to standard error and exits: a scenario that cannot be set up has no figures to give.
func fail(_ message: String) -> Never {
    printToStandardError("mix-bench: \(message)")
    exit(1)
}


extension String {
    /// Left-aligned in `width` columns.
    func padding(_ width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
}

/// The median of `values` (the mean of the middle two for an even count).
func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// Every figure the program reports.
struct Results {
    var options: Options
    var shape: Shape
    /// The core over the whole measured window.
    var core: Window
    /// The floor over the same frames.
    var floor: CallCost
    var floorDecodes: Int
    var floorEncodes: Int
    /// Rooms per core of the core and of the floor in each 1 s block (noise).
    var coreBlocks: [Double]
    var floorBlocks: [Double]
    /// Median cost of one empty measured span, and spans measured.
    var spanOverheadNanoseconds: Double
    /// Mixed packets each client received (min over clients), and the decode check.
    var minimumMixedPerClient: Int
    var decodeCheck: (frames: Int, errors: Int, level: Double)
    var ringDTXShare: Double
    var ringPayloadBytes: Double
    var wallSeconds: Double
    var problems: [String]

    var frames: Int { core.frames }
    var audioSeconds: Double { Double(frames) / 50 }
    var roomTicks: Double { Double(shape.rooms * frames) }
    var cpuSeconds: Double { Double(core.total.nanoseconds) / 1e9 }
    var cpuPerRoomSecond: Double { cpuSeconds / (Double(shape.rooms) * audioSeconds) }
    var roomsPerCore: Double { 1 / cpuPerRoomSecond }
    var floorCPUPerRoomSecond: Double { Double(floor.nanoseconds) / 1e9 / (Double(shape.rooms) * audioSeconds) }
    var floorRoomsPerCore: Double { 1 / floorCPUPerRoomSecond }
    /// The core's cost as a multiple of the floor's.
    var ratioToFloor: Double { cpuPerRoomSecond / floorCPUPerRoomSecond }
    var encodesPerRoomTick: Double { Double(core.encodes) / roomTicks }
    /// CPU of `runMixes` per room per 20 ms.
    var microsecondsPerRoomTick: Double { Double(core.mixes.nanoseconds) / 1e3 / roomTicks }
    /// CPU of every core call per room per 20 ms.
    var totalMicrosecondsPerRoomTick: Double { Double(core.total.nanoseconds) / 1e3 / roomTicks }
    var mixedPacketsPerSecond: Double { Double(core.mixedPackets) / audioSeconds }
    var allocationsPerMixTick: Double { Double(core.mixes.allocations) / roomTicks }
    var allocationsPerPacketIn: Double { Double(core.rtp.allocations) / Double(max(1, core.rtp.calls)) }
    var spans: Int { core.total.calls }
    var timerShare: Double { spanOverheadNanoseconds * Double(spans) / Double(max(1, core.total.nanoseconds)) }

    /// One line of JSON.
    var json: String {
        let fields: [(String, String)] = [
            ("rooms", "\(shape.rooms)"), ("members", "\(shape.membersPerRoom)"), ("speakers", "\(shape.speakersPerRoom)"),
            ("seconds", "\(options.seconds)"), ("complexity", "\(options.complexity)"), ("talk_pattern", "\"\(options.talkPattern.rawValue)\""), ("mode", "\"\(options.mode)\""),
            ("cpu_s", fixed(cpuSeconds, 4)),
            ("cpu_s_per_room_second", fixed(cpuPerRoomSecond, 6)),
            ("rooms_per_core", fixed(roomsPerCore, 2)),
            ("floor_rooms_per_core", fixed(floorRoomsPerCore, 2)),
            ("ratio_to_floor", fixed(ratioToFloor, 3)),
            ("encodes_per_room_tick", fixed(encodesPerRoomTick, 3)),
            ("us_per_room_tick", fixed(microsecondsPerRoomTick, 1)),
            ("us_total_per_room_tick", fixed(totalMicrosecondsPerRoomTick, 1)),
            ("mixed_packets_per_s", fixed(mixedPacketsPerSecond, 1)),
            ("allocations_per_mix_tick", fixed(allocationsPerMixTick, 4)),
            ("allocations_per_packet_in", fixed(allocationsPerPacketIn, 4)),
            ("checks_passed", problems.isEmpty ? "true" : "false"),
        ]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The human-readable report.
    var table: String {
        let o = options, s = shape
        var lines: [String] = []
        lines.append("mix-bench: one RelayCore (one worker = one core), \(s.rooms) \(o.mode) rooms × \(s.membersPerRoom) members, " +
                     "\(s.speakersPerRoom) speaking (\(o.talkPattern.rawValue)); mix complexity \(o.complexity), \(RelayCoreConfig().mixBitrate / 1000) kbit/s")
        lines.append("\(o.seconds) s of audio measured after \(o.warmupSeconds) s warm-up, manual clock; thread CPU of core calls only, " +
                     "core and floor alternating in 1 s blocks; speakers' Opus: \(fixed(ringPayloadBytes, 1)) B/packet, " +
                     "\(fixed(ringDTXShare * 100, 1)) % DTX")
        lines.append("")
        let widths = [34, 9, 9, 11, 15, 12]
        func row(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in i == 0 ? cell.padding(widths[0]) : column(cell, widths[i]) }.joined()
        }
        lines.append(row(["core call", "calls", "CPU s", "µs/call", "µs/room/20ms", "allocs/call"]))
        func costRow(_ name: String, _ c: CallCost) -> String {
            row([name, "\(c.calls)", fixed(Double(c.nanoseconds) / 1e9, 3), fixed(Double(c.nanoseconds) / 1e3 / Double(max(1, c.calls)), 2),
                 fixed(Double(c.nanoseconds) / 1e3 / roomTicks, 1), fixed(Double(c.allocations) / Double(max(1, c.calls)), 3)])
        }
        lines.append(costRow("handle (speakers' RTP)", core.rtp))
        lines.append(costRow("runMixes", core.mixes))
        lines.append(costRow("tick", core.ticks))
        lines.append(costRow("handle (acks, pings)", core.signalling))
        lines.append(costRow("all core calls", core.total))
        lines.append(costRow("floor: bare libopus", floor))
        lines.append("")
        lines.append(row(["", "rooms/core", "", "CPU s per room·s", "", ""]))
        lines.append(row(["Parley RelayCore (\(o.mode))", fixed(roomsPerCore, 1), "", fixed(cpuPerRoomSecond, 5), "", ""]))
        lines.append(row(["floor (\(s.speakersPerRoom) decode + \(s.expectedEncodesPerTick) encode)", fixed(floorRoomsPerCore, 1), "",
                          fixed(floorCPUPerRoomSecond, 5), "", ""]))
        lines.append("Parley cost / floor cost: \(fixed(ratioToFloor, 3))×   (issue: C limit ≈ 31 rooms/core, goal ≥ 25; Janus AudioBridge ≈ 10)")
        lines.append("per 1 s block, rooms/core min / median / max: core \(fixed(coreBlocks.min() ?? .nan, 1)) / \(fixed(median(coreBlocks), 1)) / " +
                     "\(fixed(coreBlocks.max() ?? .nan, 1)),  floor \(fixed(floorBlocks.min() ?? .nan, 1)) / \(fixed(median(floorBlocks), 1)) / " +
                     "\(fixed(floorBlocks.max() ?? .nan, 1))")
        lines.append("")
        lines.append("encodes per room per 20 ms: \(fixed(encodesPerRoomTick, 3)) (expected \(s.expectedEncodesPerTick)); floor: " +
                     "\(fixed(Double(floorDecodes) / roomTicks, 3)) decodes + \(fixed(Double(floorEncodes) / roomTicks, 3)) encodes")
        lines.append("runMixes: \(fixed(microsecondsPerRoomTick, 1)) µs per room per 20 ms; all core calls: \(fixed(totalMicrosecondsPerRoomTick, 1)) µs")
        let histogram = core.csrcCounts.enumerated().filter { $0.element > 0 }.map { "\($0.element) with \($0.offset)" }.joined(separator: ", ")
        if s.hybrid {
            lines.append("forwarded packets to the speakers (hybrid): \(fixed(Double(core.forwardedPackets) / audioSeconds, 1)) per s of audio")
        }
        lines.append("mixed packets out: \(fixed(mixedPacketsPerSecond, 1)) per s of audio (\(histogram) CSRCs); " +
                     "fewest received by one member: \(minimumMixedPerClient) of \(frames) frames")
        lines.append("allocations: \(fixed(allocationsPerMixTick, 4)) per room mix tick, \(fixed(allocationsPerPacketIn, 4)) per RTP packet in, " +
                     "\(fixed(Double(core.ticks.allocations) / Double(max(1, core.ticks.calls)), 3)) per tick; floor \(floor.allocations)")
        lines.append("decode check (one listener per room): \(decodeCheck.frames) frames decoded, \(decodeCheck.errors) errors, " +
                     "mean level −\(fixed(decodeCheck.level, 1)) dBov")
        lines.append("timer: \(fixed(spanOverheadNanoseconds, 0)) ns per measured span × \(spans) spans = \(fixed(timerShare * 100, 2)) % of core CPU " +
                     "(included, not subtracted); wall time \(fixed(wallSeconds, 1)) s")
        let passed = options.talkPattern == .continuous
            ? "checks: passed (every member that hears the mix received it in ≥ 98 % of frames, all still joined, no drops, encodes per tick as expected, mixes decode)"
            : "checks: passed (every member that hears the mix received it, all still joined, no drops, mixes decode; encodes per tick not checked with pauses)"
        lines.append(problems.isEmpty ? passed
                                      : "checks FAILED:\n  " + problems.joined(separator: "\n  "))
        return lines.joined(separator: "\n")
    }
}
