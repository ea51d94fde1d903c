import Foundation
import Glibc
import ParleyNet
import ParleyWire

/// A child process the benchmark starts and measures: it is ready when it prints a line containing
/// "ready on udp HOST:PORT", and that address is where its media goes. Both the relay and the raw forwarder are
/// started this way, so both are measured the same way: every thread of the process, through `ProcessProbe`.
final class SpawnedProcess {
    let process = Process()
    /// The UDP address from the ready line.
    let address: PeerAddress
    var probe: ProcessProbe { ProcessProbe(pid: process.processIdentifier) }

    init(name: String, binary: String, arguments: [String], environment extra: [String: String] = [:]) throws {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw SystemError("\(name) not found at \(binary); build it", ENOENT)
        }
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in extra { env[k] = v }
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        try process.run()
        guard let line = Self.readyLine(pipe.fileHandleForReading.fileDescriptor, timeoutNanoseconds: 10_000_000_000),
              let address = Self.address(inReadyLine: line) else {
            process.terminate()
            throw SystemError("\(name) did not report ready within 10 s", EIO)
        }
        self.address = address
    }

    /// Stops the child (SIGTERM, as a service manager would: SIGINT may be ignored by a child of a background job)
    /// and waits for it; SIGKILL after 10 s.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Clock.monotonicNanoseconds() + 10_000_000_000
        while process.isRunning && Clock.monotonicNanoseconds() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// The first line containing "ready" the child prints, or nil at EOF or after the timeout.
    private static func readyLine(_ fd: Int32, timeoutNanoseconds: Int64) -> String? {
        let deadline = Clock.monotonicNanoseconds() + timeoutNanoseconds
        var seen: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let remaining = deadline - Clock.monotonicNanoseconds()
            if remaining <= 0 { return nil }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if SystemCalls.kernel.poll(&pfd, 1, Int32(min(remaining / 1_000_000 + 1, 1000))) <= 0 { continue }
            let n = chunk.withUnsafeMutableBytes { SystemCalls.kernel.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return nil }
            seen += chunk[0..<n]
            for line in String(decoding: seen, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            where line.contains("ready") {
                return String(line)
            }
        }
    }

    /// The HOST:PORT after "ready on udp " in `line`.
    static func address(inReadyLine line: String) -> PeerAddress? {
        guard let marker = line.range(of: "ready on udp ") else { return nil }
        return PeerAddress(parsing: String(line[marker.upperBound...].prefix { $0 != " " }))
    }
}

/// The path of the running executable (/proc/self/exe), whose folder holds the other products of the same build.
func currentExecutablePath() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return CommandLine.arguments[0] }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension SpawnedProcess {
    /// A `parley-relay` from the folder parley-load lives in, on a free loopback port, with `environment` added to ours.
    static func relay(workers: Int, environment: [String: String], allowCleartext: Bool = false) throws -> SpawnedProcess {
        let binary = URL(fileURLWithPath: currentExecutablePath()).deletingLastPathComponent().appendingPathComponent("parley-relay").path
        return try SpawnedProcess(name: "parley-relay", binary: binary,
                                  arguments: ["--udp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "\(workers)", "--log-level", "warning"]
                                      + (allowCleartext ? ["--allow-cleartext"] : []),
                                  environment: environment)
    }

    /// The raw fan-out forwarder: parley-load itself, re-executed in its hidden serving mode.
    static func rawForwarder() throws -> SpawnedProcess {
        try SpawnedProcess(name: "the raw forwarder", binary: currentExecutablePath(), arguments: [RawForwarder.serveFlag])
    }
}
