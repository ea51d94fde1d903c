import Foundation
import Glibc
import ParleyNet
import ParleyWire

/// CPU time and memory of a process from /proc/<pid>/stat (utime + stime, clock ticks) and /proc/<pid>/status (VmRSS).
struct ProcessProbe {
    let pid: Int32
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

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
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4096) }
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// A `parley-relay` started by the benchmark from the build folder it lives in, on a free loopback port.
final class SpawnedRelay {
    let process = Process()
    let address: PeerAddress
    var probe: ProcessProbe { ProcessProbe(pid: process.processIdentifier) }

    init(workers: Int, environment extra: [String: String]) throws {
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let binary = me.deletingLastPathComponent().appendingPathComponent("parley-relay")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw SystemError("parley-relay not found next to parley-load (\(binary.path)); build it", ENOENT)
        }
        // A free port: bind port 0, read it, let it go (the relay binds it a moment later).
        let probeSocket = try UDPSocket(bindingTo: PeerAddress(ipv4: 127, 0, 0, 1, port: 0))
        let port = probeSocket.localAddress!.port
        address = PeerAddress(ipv4: 127, 0, 0, 1, port: port)
        _ = consume probeSocket
        process.executableURL = binary
        process.arguments = ["--udp", "127.0.0.1:\(port)", "--http", "127.0.0.1:0", "--workers", "\(workers)", "--log-level", "warning"]
        var env = ProcessInfo.processInfo.environment
        for (k, v) in extra { env[k] = v }
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        try process.run()
        // Wait for the ready line (at most 10 s).
        let deadline = Date().addingTimeInterval(10)
        var seen = Data()
        while Date() < deadline {
            let d = pipe.fileHandleForReading.availableData
            if d.isEmpty { break }
            seen += d
            if String(decoding: seen, as: UTF8.self).contains("ready") { break }
        }
        guard String(decoding: seen, as: UTF8.self).contains("ready") else { throw SystemError("parley-relay did not start", EIO) }
    }

    func stop() {
        guard process.isRunning else { return }
        process.interrupt()
        process.waitUntilExit()
    }
}
