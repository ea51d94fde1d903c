import Foundation

/// The summary table and the JSON report.
enum Report {
    static func table(_ runs: [RunResult], mix: Bool) -> String {
        var lines: [String] = []
        func row(_ name: String, _ f: (RunResult) -> String) {
            lines.append(name.padding(toLength: 34, withPad: " ", startingAt: 0) + runs.map { f($0).leftPadded(18) }.joined())
        }
        row("") { $0.label }
        row("members (joined) / speakers") { "\($0.members) (\($0.joined)) / \($0.speakers)" }
        row("duration s") { String(format: "%.0f", $0.durationSeconds) }
        row("packets sent by speakers") { "\($0.packetsSent)" }
        row(mix ? "packets expected (seq range)" : "packets expected") { "\($0.packetsExpected)" }
        row("packets received (unique)") { "\($0.packetsReceived)" }
        row("delivery") { String(format: "%.4f %%", $0.deliveryRatio * 100) }
        row("lost / duplicated / out of order") { "\($0.lost) / \($0.duplicated) / \($0.outOfOrder)" }
        row(mix ? "late (> limit, rel. to 1st pkt)" : "late (one-way > limit)") { "\($0.late)" }
        row(mix ? "delay vs 1st pkt p50/p99/max ms" : "latency p50 / p99 / max ms") {
            String(format: "%.2f/%.2f/%.2f", $0.latency.quantileMilliseconds(0.5), $0.latency.quantileMilliseconds(0.99), $0.latency.maxMilliseconds)
        }
        row("target CPU s (relay / raw thread)") { String(format: "%.2f", $0.targetCPUSeconds) }
        row("target RSS MB") { $0.targetRSSMegabytes > 0 ? String(format: "%.1f", $0.targetRSSMegabytes) : "-" }
        row("out pps (received by members)") { String(format: "%.0f", $0.outPacketsPerSecond) }
        row("out pkts per target CPU-second") { String(format: "%.0f", $0.outPacketsPerCPUSecond) }
        row("load generator CPU s") { String(format: "%.2f", $0.generatorCPUSeconds) }
        row("send tick lateness max ms") { String(format: "%.2f", $0.sendLatenessMaxMilliseconds) }
        row("join p50 / p99 ms") { String(format: "%.1f / %.1f", $0.joinQuantile(0.5), $0.joinQuantile(0.99)) }
        return lines.joined(separator: "\n")
    }

    static func json(_ p: RunResult, raw: RunResult?, options: Options, extra: [String: Any] = [:]) -> String {
        var o: [String: Any] = [
            "mode": options.mode, "rooms": options.rooms, "members": p.members, "members_joined": p.joined, "speakers": p.speakers,
            "duration_s": p.durationSeconds, "pkts_sent": p.packetsSent, "pkts_expected": p.packetsExpected,
            "pkts_received": p.packetsReceived, "pkts_lost": p.lost, "pkts_duplicated": p.duplicated, "pkts_out_of_order": p.outOfOrder,
            "pkts_late": p.late, "late_threshold_ms": options.lateMilliseconds,
            "delivery_ratio": p.deliveryRatio,
            "latency_p50_ms": p.latency.quantileMilliseconds(0.5), "latency_p99_ms": p.latency.quantileMilliseconds(0.99),
            "latency_max_ms": p.latency.maxMilliseconds,
            "latency_kind": options.mode == "mix" ? "delay relative to the first mixed packet (mix RTP clock); not one-way" : "one-way, send timestamp in RTP extension id 2",
            "relay_cpu_s": p.targetCPUSeconds, "relay_rss_mb": p.targetRSSMegabytes, "out_pps": p.outPacketsPerSecond,
            "out_pkts_per_relay_cpu_s": p.outPacketsPerCPUSecond, "join_p50_ms": p.joinQuantile(0.5), "join_p99_ms": p.joinQuantile(0.99),
            "loadgen_cpu_s": p.generatorCPUSeconds, "send_tick_lateness_max_ms": p.sendLatenessMaxMilliseconds,
        ]
        if let raw {
            o["raw_pkts_received"] = raw.packetsReceived
            o["raw_delivery_ratio"] = raw.deliveryRatio
            o["raw_cpu_s"] = raw.targetCPUSeconds
            o["raw_out_pkts_per_cpu_s"] = raw.outPacketsPerCPUSecond
            o["raw_latency_p99_ms"] = raw.latency.quantileMilliseconds(0.99)
            o["raw_loadgen_cpu_s"] = raw.generatorCPUSeconds
            o["parley_vs_raw_efficiency"] = raw.outPacketsPerCPUSecond > 0 ? p.outPacketsPerCPUSecond / raw.outPacketsPerCPUSecond : 0
        }
        for (k, v) in extra { o[k] = v }
        let data = (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? " " + self : String(repeating: " ", count: width - count) + self }
}
