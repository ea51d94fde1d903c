import Foundation
import ParleyNet

/// CPU time and memory of a process from /proc/<pid>/stat (utime + stime, clock ticks) and /proc/<pid>/status (VmRSS).
struct ProcessProbe {
    let pid: Int32
    private static let ticksPerSecond = Double(Clock.accountingTicksPerSecond())

    /// CPU seconds so far, in ns resolution: the sum over the process's threads of /proc/<pid>/task/<tid>/schedstat's
    /// first field (time on CPU); falls back to /proc/<pid>/stat utime + stime (10 ms ticks). Nil when the process is gone.
    func cpuSeconds() -> Double? {
        if let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"), !tasks.isEmpty {
            var total = 0.0
            var ok = true
            for t in tasks {
                guard let text = readProcFile("/proc/\(pid)/task/\(t)/schedstat"), let first = text.split(separator: " ").first,
                      let ns = Double(first) else { ok = false; break }
                total += ns
            }
            if ok { return total / 1e9 }
        }
        return statCPUSeconds()
    }

    /// User + system CPU seconds from /proc/<pid>/stat (clock ticks).
    func statCPUSeconds() -> Double? {
        guard let text = readProcFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        // After "pid (comm) ": state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Self.ticksPerSecond
    }

    /// Context switches so far, summed over the process's threads (/proc/<pid>/task/<tid>/status): those it made
    /// waiting (voluntary: its poll slept) and those forced on it (involuntary: another task took its CPU mid-work).
    func contextSwitches() -> (voluntary: Int, involuntary: Int) {
        var total = (voluntary: 0, involuntary: 0)
        let directory = "/proc/\(pid)/task"
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return total }
        for t in tasks {
            guard let text = readProcFile("/proc/\(pid)/task/\(t)/status") else { continue }
            for line in text.split(separator: "\n") {
                let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard parts.count == 2, let n = Int(parts[1]) else { continue }
                if parts[0].hasPrefix("voluntary_ctxt_switches") { total.voluntary += n }
                if parts[0].hasPrefix("nonvoluntary_ctxt_switches") { total.involuntary += n }
            }
        }
        return total
    }

    /// Resident set size in MB.
    func rssMegabytes() -> Double? {
        guard let text = readProcFile("/proc/\(pid)/status") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if parts.count >= 2, let kb = Double(parts[1]) { return kb / 1024 }
        }
        return nil
    }

    /// The first process whose /proc/<pid>/comm is `name`.
    static func find(named name: String) -> ProcessProbe? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        for e in entries {
            guard let pid = Int32(e), let comm = readProcFile("/proc/\(e)/comm") else { continue }
            if comm.trimmingCharacters(in: .whitespacesAndNewlines) == String(name.prefix(15)) { return ProcessProbe(pid: pid) }
        }
        return nil
    }
}

/// Reads a small file with one open/read (procfs files report size 0, so read until EOF).
func readProcFile(_ path: String) -> String? {
    SmallFile.contents(of: path).map { String(decoding: $0, as: UTF8.self) }
}
