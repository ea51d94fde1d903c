import BenchmarkSupport
import Glibc

/// Prints `message` to standard error and exits: a scenario that cannot be set up has no figures to give.
func fail(_ message: String) -> Never {
    printToStandardError("forward-bench: \(message)")
    exit(1)
}


/// The run with the median ns per forwarded packet (the lower middle one for an even count).
func median(_ runs: [PacketFigures]) -> PacketFigures {
    runs.sorted { $0.nanosecondsPerForwarded < $1.nanosecondsPerForwarded }[(runs.count - 1) / 2]
}

/// Allocations per forwarded packet over all runs together.
func allocationsPerForwarded(_ runs: [PacketFigures]) -> Double {
    Double(runs.reduce(0) { $0 + $1.allocations }) / Double(max(1, runs.reduce(0) { $0 + $1.forwarded }))
}

/// Every figure the program reports.
struct Results {
    var options: Options
    var core: [PacketFigures]
    var baseline: [PacketFigures]
    /// The same shape with encrypted members (SRTP in, the room's key out).
    var encrypted: [PacketFigures]
    /// Rooms of WebRTC members (DTLS-SRTP keys, libsrtp2; each listener its own rewritten stream and keys).
    var webrtc: [PacketFigures]
    /// A cluster node: the other node's speakers received over the link and fanned out here; and the encrypted run's
    /// speakers also sealed for the other node.
    var cascadeIn: [PacketFigures]
    var cascadeOut: [PacketFigures]
    /// The encrypted scenario's joins: initiations the core handled and the time inside `handle` for them.
    var initiations: (count: Int, nanoseconds: Int64)
    var ticks: TickFigures
    /// The selection scenario: a speaker beyond the forwarded slots.
    var droppedPackets: Int
    var droppedAllocations: UInt64
    var droppedSpeakerIndex: Int
    var slots: Int
    /// Problems the run's self-checks found (empty when all is as expected).
    var problems: [String]

    var ratio: Double { median(core).nanosecondsPerForwarded / median(baseline).nanosecondsPerForwarded }
    var microsecondsPerJoin: Double { Double(initiations.nanoseconds) / 1_000 / Double(max(1, initiations.count)) }
    var nanosecondsPerTick: Double { Double(ticks.nanoseconds) / Double(max(1, ticks.ticks)) }
    var allocationsPerTick: Double { Double(ticks.allocations) / Double(max(1, ticks.ticks)) }
    var droppedAllocationsPerPacket: Double { Double(droppedAllocations) / Double(max(1, droppedPackets)) }

    /// One line of JSON.
    var json: String {
        let c = median(core), b = median(baseline)
        let fields: [(String, String)] = [
            ("rooms", "\(options.rooms)"), ("members", "\(options.members)"), ("speakers", "\(options.speakers)"),
            ("runs", "\(options.runs)"), ("cold_mb", "\(options.coldMegabytes)"),
            ("packets_in", "\(c.packetsIn)"), ("packets_forwarded", "\(c.forwarded)"),
            ("ns_per_packet_in", fixed(c.nanosecondsPerPacketIn, 1)),
            ("ns_per_forwarded_packet", fixed(c.nanosecondsPerForwarded, 2)),
            ("allocations_per_forwarded_packet", fixed(allocationsPerForwarded(core), 4)),
            ("baseline_ns_per_forwarded_packet", fixed(b.nanosecondsPerForwarded, 2)),
            ("ratio_to_baseline", fixed(ratio, 2)),
            ("encrypted_ns_per_packet_in", fixed(median(encrypted).nanosecondsPerPacketIn, 1)),
            ("encrypted_ns_per_forwarded_packet", fixed(median(encrypted).nanosecondsPerForwarded, 2)),
            ("encrypted_allocations_per_forwarded_packet", fixed(allocationsPerForwarded(encrypted), 4)),
            ("webrtc_ns_per_packet_in", fixed(median(webrtc).nanosecondsPerPacketIn, 1)),
            ("webrtc_ns_per_forwarded_packet", fixed(median(webrtc).nanosecondsPerForwarded, 2)),
            ("webrtc_allocations_per_forwarded_packet", fixed(allocationsPerForwarded(webrtc), 4)),
            ("cascade_in_ns_per_packet_in", fixed(median(cascadeIn).nanosecondsPerPacketIn, 1)),
            ("cascade_in_ns_per_forwarded_packet", fixed(median(cascadeIn).nanosecondsPerForwarded, 2)),
            ("cascade_in_allocations_per_forwarded_packet", fixed(allocationsPerForwarded(cascadeIn), 4)),
            ("cascade_out_ns_per_packet_in", fixed(median(cascadeOut).nanosecondsPerPacketIn, 1)),
            ("cascade_out_allocations_per_forwarded_packet", fixed(allocationsPerForwarded(cascadeOut), 4)),
            ("encrypted_join_us", fixed(microsecondsPerJoin, 1)),
            ("encrypted_joins_per_cpu_second", fixed(1_000_000 / microsecondsPerJoin, 0)),
            ("allocations_per_tick", fixed(allocationsPerTick, 2)),
            ("ns_per_tick", fixed(nanosecondsPerTick, 0)),
            ("allocations_per_unforwarded_packet", fixed(droppedAllocationsPerPacket, 4)),
            ("checks_passed", problems.isEmpty ? "true" : "false"),
        ]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The human-readable table.
    var table: String {
        let o = options
        let c = median(core), b = median(baseline)
        var lines: [String] = []
        lines.append("forward-bench: RelayCore parse + route, \(o.rooms) rooms × \(o.members) members, \(o.speakers) speakers per room")
        lines.append("\(o.packets) packets per run, \(o.runs) runs (median shown), \(o.warmup) packets warm-up; " +
                     "manual clock +20 ms / \(o.rooms * o.speakers) streams per packet, tick every 20 ms")
        if o.coldMegabytes > 0 {
            lines.append("cold caches: \(o.coldMegabytes) MB written between 20 ms rounds (untimed), as the worker's "
                         + "sendmmsg does")
        }
        lines.append("")
        let widths = [34, 14, 14, 14, 18]
        func row(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in i == 0 ? cell.padding(widths[0]) : column(cell, widths[i]) }.joined()
        }
        lines.append(row(["", "ns/packet in", "ns/forwarded", "forwarded/in", "allocs/forwarded"]))
        lines.append(row(["RelayCore.handle (+ outputSent)", fixed(c.nanosecondsPerPacketIn, 1), fixed(c.nanosecondsPerForwarded, 2),
                          fixed(Double(c.forwarded) / Double(c.packetsIn), 2), fixed(allocationsPerForwarded(core), 4)]))
        lines.append(row(["baseline: parse, lookup, queue", fixed(b.nanosecondsPerPacketIn, 1), fixed(b.nanosecondsPerForwarded, 2),
                          fixed(Double(b.forwarded) / Double(b.packetsIn), 2), fixed(allocationsPerForwarded(baseline), 4)]))
        let e = median(encrypted)
        lines.append(row(["encrypted (SRTP in, room key out)", fixed(e.nanosecondsPerPacketIn, 1), fixed(e.nanosecondsPerForwarded, 2),
                          fixed(Double(e.forwarded) / Double(max(1, e.packetsIn)), 2), fixed(allocationsPerForwarded(encrypted), 4)]))
        let w = median(webrtc)
        lines.append(row(["WebRTC members (1 speaker/room)", fixed(w.nanosecondsPerPacketIn, 1), fixed(w.nanosecondsPerForwarded, 2),
                          fixed(Double(w.forwarded) / Double(max(1, w.packetsIn)), 2), fixed(allocationsPerForwarded(webrtc), 4)]))
        let ci = median(cascadeIn), co = median(cascadeOut)
        lines.append(row(["cluster: from the other node", fixed(ci.nanosecondsPerPacketIn, 1), fixed(ci.nanosecondsPerForwarded, 2),
                          fixed(Double(ci.forwarded) / Double(max(1, ci.packetsIn)), 2), fixed(allocationsPerForwarded(cascadeIn), 4)]))
        lines.append(row(["cluster: encrypted + sealed for it", fixed(co.nanosecondsPerPacketIn, 1), fixed(co.nanosecondsPerForwarded, 2),
                          fixed(Double(co.forwarded) / Double(max(1, co.packetsIn)), 2), fixed(allocationsPerForwarded(cascadeOut), 4)]))
        lines.append(row(["core / baseline", fixed(c.nanosecondsPerPacketIn / b.nanosecondsPerPacketIn, 2) + "×",
                          fixed(ratio, 2) + "×", "", ""]))
        lines.append("")
        let perRun = zip(core, baseline).map { "\(fixed($0.nanosecondsPerForwarded, 2)) | \(fixed($1.nanosecondsPerForwarded, 2))" }
        lines.append("ns/forwarded per run (core | baseline): " + perRun.joined(separator: ",  "))
        lines.append("per run: \(c.packetsIn) packets in, \(c.forwarded) forwarded")
        lines.append("")
        lines.append("encrypted joins on the relay (initiation in: cookie, Noise NK both ways, token check, admission, sealed " +
                     "welcome out), median of 3 runs of \(initiations.count): \(fixed(microsecondsPerJoin, 1)) µs per join = " +
                     "\(fixed(1_000_000 / microsecondsPerJoin, 0)) per CPU-second")
        lines.append("RelayCore.tick (not in the figures above): \(ticks.ticks / max(1, o.runs)) ticks per run, " +
                     "\(fixed(nanosecondsPerTick, 0)) ns/tick, \(fixed(allocationsPerTick, 2)) allocs/tick")
        lines.append("received but not forwarded (speaker \(droppedSpeakerIndex + 1) in a room of \(slots) slots): " +
                     "\(fixed(droppedAllocationsPerPacket, 4)) allocs/packet over \(droppedPackets) packets")
        lines.append(problems.isEmpty ? "checks: passed (all members kept, no drops, core and baseline queued the same datagrams)"
                                      : "checks FAILED:\n  " + problems.joined(separator: "\n  "))
        return lines.joined(separator: "\n")
    }
}

extension String {
    /// Left-aligned in `width` columns.
    func padding(_ width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
}
