import Foundation

/// The summary table and the JSON report.
enum Report {
    static func table(_ runs: [RunResult], mix: Bool) -> String {
        var lines: [String] = []
        func row(_ name: String, _ f: (RunResult) -> String) {
            lines.append(name.padding(toLength: 34, withPad: " ", startingAt: 0) + runs.map { f($0).leftPadded(18) }.joined())
        }
        row("") { $0.label }
        row("members asked (joined) / speakers") { "\($0.members) (\($0.joined)) / \($0.speakers)" }
        row("missing at media start / late") { "\($0.missingReasons.count) / \($0.joinedLate)" }
        if runs.contains(where: { $0.redirects > 0 }) { row("joins sent to another node") { "\($0.redirects)" } }
        row("duration s") { String(format: "%.0f", $0.durationSeconds) }
        row("packets sent by speakers") { "\($0.packetsSent)" }
        if !mix { row("packets due (admitted or not)") { "\($0.packetsDue)" } }
        row(mix ? "packets expected (seq range)" : "packets expected (all asked)") { "\($0.packetsExpected)" }
        row("packets received (unique)") { "\($0.packetsReceived)" }
        row("delivery") { String(format: "%.4f %%", $0.deliveryRatio * 100) }
        row("lost / duplicated / out of order") { "\($0.lost) / \($0.duplicated) / \($0.outOfOrder)" }
        row(mix ? "late (> limit, rel. to 1st pkt)" : "late (one-way > limit)") { "\($0.late)" }
        row(mix ? "delay vs 1st pkt p50/p99/max ms" : "latency p50 / p99 / max ms") {
            String(format: "%.2f/%.2f/%.2f", $0.latency.quantileMilliseconds(0.5), $0.latency.quantileMilliseconds(0.99), $0.latency.maxMilliseconds)
        }
        row("target CPU s (all its threads)") { String(format: "%.2f", $0.targetCPUSeconds) }
        row("target switches per s: waiting / preempted") {
            String(format: "%.0f / %.0f", Double($0.targetSwitches.voluntary) / max($0.durationSeconds, 1e-9),
                   Double($0.targetSwitches.involuntary) / max($0.durationSeconds, 1e-9))
        }
        row("target RSS MB") { $0.targetRSSMegabytes > 0 ? String(format: "%.1f", $0.targetRSSMegabytes) : "-" }
        row("out pps (received by members)") { String(format: "%.0f", $0.outPacketsPerSecond) }
        row("out pkts per target CPU-second") { String(format: "%.0f", $0.outPacketsPerCPUSecond) }
        row("load generator CPU s") { String(format: "%.2f", $0.generatorCPUSeconds) }
        row("send tick lateness p99 / max ms") { String(format: "%.2f / %.2f", $0.sendLatenessP99Milliseconds, $0.sendLatenessMaxMilliseconds) }
        row("send ticks over the lateness limit") { "\($0.lateTicks)" }
        row("join p50 / p99 ms") { String(format: "%.1f / %.1f", $0.joinQuantile(0.5), $0.joinQuantile(0.99)) }
        return lines.joined(separator: "\n")
    }

    /// One line per block, in the order they ran, and the ratio of each pair.
    static func blocks(order: [Blocks.Side], parley: [RunResult], raw: [RunResult]) -> String {
        var lines: [String] = []
        var next = (parley: 0, raw: 0)
        for (k, side) in order.enumerated() {
            let r: RunResult
            if side == .parley { r = parley[next.parley]; next.parley += 1 } else { r = raw[next.raw]; next.raw += 1 }
            let format = "block %d %@ %.0f s: out %.0f pps, CPU %.2f s, %.0f out pkts per CPU-second, "
                + "delivery %.4f %%, tick lateness p99 %.2f max %.2f ms, switches per s %.0f waiting + %.0f preempted"
            lines.append(String(format: format, k + 1, (side == .parley ? "parley" : "raw   "), r.durationSeconds,
                                r.outPacketsPerSecond, r.targetCPUSeconds, r.outPacketsPerCPUSecond,
                                r.deliveryRatio * 100,
                                r.sendLatenessP99Milliseconds, r.sendLatenessMaxMilliseconds,
                                Double(r.targetSwitches.voluntary) / r.durationSeconds,
                                Double(r.targetSwitches.involuntary) / r.durationSeconds))
        }
        let ratios = Blocks.pairRatios(parley: parley.map(\.outPacketsPerCPUSecond), raw: raw.map(\.outPacketsPerCPUSecond))
        lines.append("parley ÷ raw per block pair: " + ratios.map { String(format: "%.3f", $0) }.joined(separator: ", "))
        let extra = Blocks.pairExtraNanoseconds(parley: parley.map(\.outPacketsPerCPUSecond),
            raw: raw.map(\.outPacketsPerCPUSecond))
        lines.append("parley − raw, ns per output datagram per block pair: "
                     + extra.map { String(format: "%.0f", $0) }.joined(separator: ", "))
        return lines.joined(separator: "\n")
    }

    /// The JSON report of `p` (Parley, its blocks pooled) and `raw` (the forwarder's, pooled). `members` is the count
    /// asked for and `delivery_ratio` is over them.
    static func json(_ p: RunResult, raw: RunResult?, options: Options, verdict: Verdict, blocks: (order: [Blocks.Side], parley: [RunResult], raw: [RunResult])? = nil,
                     extra: [String: Any] = [:]) -> String {
        var o: [String: Any] = [
            "mode": options.mode, "rooms": options.rooms, "members": p.members, "members_joined": p.joined, "speakers": p.speakers,
            "members_missing_at_start": p.missingReasons.count, "members_removed": p.removedReasons.count, "members_joined_late": p.joinedLate,
            "duration_s": p.durationSeconds, "pkts_sent": p.packetsSent, "pkts_due": p.packetsDue, "pkts_expected": p.packetsExpected,
            "pkts_received": p.packetsReceived, "pkts_lost": p.lost, "pkts_duplicated": p.duplicated, "pkts_out_of_order": p.outOfOrder,
            "pkts_late": p.late, "late_threshold_ms": options.lateMilliseconds,
            "delivery_ratio": p.deliveryRatio,
            "latency_p50_ms": p.latency.quantileMilliseconds(0.5), "latency_p99_ms": p.latency.quantileMilliseconds(0.99),
            "latency_max_ms": p.latency.maxMilliseconds,
            "latency_kind": options.mode == "mix" ? "delay relative to the first mixed packet (mix RTP clock); not one-way" : "one-way, send timestamp in RTP extension id 2",
            "relay_cpu_s": p.targetCPUSeconds, "relay_switches_waiting": p.targetSwitches.voluntary,
            "relay_switches_preempted": p.targetSwitches.involuntary,
            "relay_rss_mb": p.targetRSSMegabytes, "out_pps": p.outPacketsPerSecond,
            "out_pkts_per_relay_cpu_s": p.outPacketsPerCPUSecond, "join_p50_ms": p.joinQuantile(0.5), "join_p99_ms": p.joinQuantile(0.99),
            "loadgen_cpu_s": p.generatorCPUSeconds, "send_tick_lateness_max_ms": p.sendLatenessMaxMilliseconds,
            "send_tick_lateness_p99_ms": p.sendLatenessP99Milliseconds, "send_ticks_late": p.lateTicks, "max_tick_lateness_ms": options.maxTickLatenessMilliseconds,
            "members_missing": verdict.membersMissing, "generator_late": verdict.generatorLate, "exit_status": verdict.exitStatus,
            "problems": verdict.lines,
        ]
        if let raw {
            o["raw_pkts_received"] = raw.packetsReceived
            o["raw_delivery_ratio"] = raw.deliveryRatio
            o["raw_cpu_s"] = raw.targetCPUSeconds
            o["raw_switches_waiting"] = raw.targetSwitches.voluntary
            o["raw_switches_preempted"] = raw.targetSwitches.involuntary
            o["raw_out_pkts_per_cpu_s"] = raw.outPacketsPerCPUSecond
            o["raw_latency_p99_ms"] = raw.latency.quantileMilliseconds(0.99)
            o["raw_loadgen_cpu_s"] = raw.generatorCPUSeconds
            o["parley_vs_raw_efficiency"] = raw.outPacketsPerCPUSecond > 0 ? p.outPacketsPerCPUSecond / raw.outPacketsPerCPUSecond : 0
            o["ns_above_raw_per_output"] = Blocks.pairExtraNanoseconds(parley: [p.outPacketsPerCPUSecond],
                                                                       raw: [raw.outPacketsPerCPUSecond]).first ?? 0
            o["raw_send_tick_lateness_max_ms"] = raw.sendLatenessMaxMilliseconds
            o["raw_send_tick_lateness_p99_ms"] = raw.sendLatenessP99Milliseconds
            o["raw_rss_mb"] = raw.targetRSSMegabytes
        }
        if let blocks {
            let ratios = Blocks.pairRatios(parley: blocks.parley.map(\.outPacketsPerCPUSecond), raw: blocks.raw.map(\.outPacketsPerCPUSecond))
            o["blocks_per_side"] = blocks.parley.count
            o["block_order"] = blocks.order.map { $0 == .parley ? "parley" : "raw" }
            o["block_ratios"] = ratios
            o["parley_vs_raw_efficiency_median"] = Blocks.median(ratios) ?? 0
            let extra = Blocks.pairExtraNanoseconds(parley: blocks.parley.map(\.outPacketsPerCPUSecond),
                                                    raw: blocks.raw.map(\.outPacketsPerCPUSecond))
            o["block_ns_above_raw_per_output"] = extra
            o["ns_above_raw_per_output_median"] = Blocks.median(extra) ?? 0
            o["parley_block_out_pkts_per_cpu_s"] = blocks.parley.map(\.outPacketsPerCPUSecond)
            o["raw_block_out_pkts_per_cpu_s"] = blocks.raw.map(\.outPacketsPerCPUSecond)
        }
        for (k, v) in extra { o[k] = v }
        let data = (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? " " + self : String(repeating: " ", count: width - count) + self }
}
