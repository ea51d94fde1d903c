// Scoring one implementation's playout of one trace under the receiver convention of traces/README.md.

/// What one 20 ms output slot was.
enum SlotKind { case played, fec, concealed, expanded }

/// Per-packet and per-slot bookkeeping, and the JSON figures.
struct Scorer {
    let trace: Trace
    let impl: String
    private var playTime: [Double?]
    private var slots: [(kind: SlotKind, dueSeq: Int)] = []
    private var accelerations = 0
    private var started = false

    init(trace: Trace, impl: String) {
        self.trace = trace
        self.impl = impl
        playTime = Array(repeating: nil, count: trace.packets.count)
    }

    /// Packet `index` was played (decoded from its own payload) at `t`.
    mutating func played(_ index: Int, at t: Double) {
        if index >= 0 && index < playTime.count && playTime[index] == nil { playTime[index] = t }
        started = true
    }

    /// One output slot; slots before the first played packet are not output time.
    mutating func slot(_ kind: SlotKind, dueSeq: Int) {
        if kind == .played { started = true }
        guard started else { return }
        slots.append((kind, dueSeq))
    }

    /// One `.accelerate` (counted in its own slot, too).
    mutating func accelerated() { accelerations += 1 }

    /// Output time: from the first to the last slot that played something.
    private var output: ArraySlice<(kind: SlotKind, dueSeq: Int)> {
        slots.prefix((slots.lastIndex { $0.kind == .played } ?? -1) + 1)
    }

    /// Concealed output frames (lost in the network or not; FEC-rebuilt ones are not concealed).
    var concealedFrames: Int { output.count { $0.kind == .concealed } }

    /// The figures, as one JSON object.
    func json() -> String {
        let output = self.output
        let n = trace.packets.count
        let lost = trace.packets.filter { $0.arrivalMs == nil }.count
        var played = 0, late = 0
        var e2e: [Double] = [], buf: [Double] = []
        for (i, p) in trace.packets.enumerated() {
            guard let arrival = p.arrivalMs else { continue }
            if let t = playTime[i] {
                played += 1
                e2e.append(t - p.sendMs)
                buf.append(t - arrival)
            } else {
                late += 1
            }
        }
        func netLost(_ seq: Int) -> Bool { seq >= 0 && seq < n && trace.packets[seq].arrivalMs == nil }
        var concealed = 0, jico = 0, fec = 0, fecNotLost = 0, expanded = 0, events = 0, interruptions = 0, run = 0
        func endRun() {
            if run > 0 { events += 1; if run * 20 >= 150 { interruptions += 1 } }
            run = 0
        }
        for s in output {
            switch s.kind {
            case .concealed:
                concealed += 1
                if !netLost(s.dueSeq) { jico += 1 }
                run += 1
            case .fec:
                fec += 1
                if !netLost(s.dueSeq) { fecNotLost += 1 }
                endRun()
            case .expanded: expanded += 1; endRun()
            case .played: endRun()
            }
        }
        endRun()
        // Interruptions no jitter buffer can avoid: runs of 8+ packets (≥ 150 ms) lost in the network.
        var lossInterruptions = 0, lossRun = 0
        for p in trace.packets {
            if p.arrivalMs == nil { lossRun += 1 } else { if lossRun >= 8 { lossInterruptions += 1 }; lossRun = 0 }
        }
        if lossRun >= 8 { lossInterruptions += 1 }
        let slotsCount = Double(max(output.count, 1))
        let minutes = slotsCount * 20 / 60_000
        func mean(_ a: [Double]) -> Double { a.isEmpty ? 0 : a.reduce(0, +) / Double(a.count) }
        func p95(_ a: [Double]) -> Double {
            guard !a.isEmpty else { return 0 }
            let s = a.sorted()
            return s[min(s.count - 1, Int((Double(s.count) * 0.95).rounded(.down)))]
        }
        func f(_ x: Double, _ digits: Int = 4) -> String {
            var m = 1.0
            for _ in 0..<digits { m *= 10 }
            return String((x * m).rounded() / m)
        }
        let fields: [(String, String)] = [
            ("trace", "\"\(trace.name)\""), ("impl", "\"\(impl)\""),
            ("packets", "\(n)"), ("net_lost", "\(lost)"), ("played", "\(played)"), ("late", "\(late)"),
            ("played_frac", f(Double(played) / Double(n))), ("late_frac", f(Double(late) / Double(n))),
            ("buf_delay_mean_ms", f(mean(buf), 1)), ("buf_delay_p95_ms", f(p95(buf), 1)),
            ("e2e_mean_ms", f(mean(e2e), 1)), ("e2e_p95_ms", f(p95(e2e), 1)),
            ("jico_rate", f(Double(jico) / slotsCount)),
            ("conceal_events_per_min", f(Double(events) / minutes, 1)), ("interruptions", "\(interruptions)"),
            ("accelerate_rate", f(Double(accelerations) / slotsCount)),
            ("preemptive_rate", f(Double(expanded) / slotsCount)),
            // Extras: FEC-rebuilt output, and JICO if FEC-rebuilt frames of non-lost packets counted as concealed.
            ("concealed_rate", f(Double(concealed) / slotsCount)),
            ("fec_rate", f(Double(fec) / slotsCount)),
            ("jico_rate_fec_as_conceal", f(Double(jico + fecNotLost) / slotsCount)),
            ("loss_interruptions", "\(lossInterruptions)"),
            ("output_frames", "\(output.count)"),
            // The sender's stalls (null when a CSV trace does not say): the goal is concealed ≤ stall_frames.
            ("concealed", "\(concealed)"),
            ("stalls", trace.stallCount.map { "\($0)" } ?? "null"),
            ("stall_ms", trace.stallMs.map { f($0, 1) } ?? "null"),
            ("stall_frames", trace.stallFrames.map { "\($0)" } ?? "null"),
        ]
        return "{" + fields.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}"
    }
}
