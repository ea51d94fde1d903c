import Foundation
import Testing

/// Every test that starts real processes, one at a time: they share two cores, and real-time audio clients
/// starved of CPU would measure the machine, not Parley.
@Suite(.serialized) struct ProcessTests {}

/// Runs the package's own executables as real processes and collects what they print.
final class Spawned: @unchecked Sendable {
    // Invariant: `out` and `err` are appended only under `lock` by the pipes' handlers.
    let process = Process()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()

    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = Spawned.binary(executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let o = Pipe(), e = Pipe()
        process.standardOutput = o
        process.standardError = e
        o.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            self?.lock.withLock { self?.out.append(d) }
        }
        e.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            self?.lock.withLock { self?.err.append(d) }
        }
        try process.run()
    }

    /// The package's build folder (tests run from `.build/<config>/`), where `swift build` put the executables.
    static func binary(_ name: String) -> URL {
        if name.hasPrefix("/") { return URL(fileURLWithPath: name) }  // a system tool (curl)
        if let dir = ProcessInfo.processInfo.environment["PARLEY_BIN_DIR"] { return URL(fileURLWithPath: dir).appendingPathComponent(name) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/\(name)")
    }

    var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }

    /// Waits until `predicate` holds on stdout or `seconds` pass; returns whether it held.
    @discardableResult
    func waitFor(seconds: Double, _ predicate: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if predicate(stdout) { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return predicate(stdout)
    }

    /// Waits for the process to exit (killing it after `seconds`); returns its status.
    @discardableResult
    func wait(seconds: Double) -> Int32 {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        process.waitUntilExit()
        Thread.sleep(forTimeInterval: 0.05)  // let the pipe handlers drain
        return process.terminationStatus
    }

    func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    deinit { if process.isRunning { process.terminate() } }
}

/// A relay on an ephemeral loopback port, with the timeouts shortened for tests.
func startRelay(workers: Int = 2, environment: [String: String] = [:]) throws -> (Spawned, String) {
    let relay = try Spawned("parley-relay", ["--udp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "\(workers)", "--log-level", "info"],
                            environment: environment)
    guard relay.waitFor(seconds: 10, { $0.contains("ready on udp") }),
          let line = relay.lines.first(where: { $0.contains("ready on udp") }),
          let address = line.split(separator: " ").drop(while: { $0 != "udp" }).dropFirst().first else {
        throw RelayDidNotStart(output: relay.stdout + relay.stderr)
    }
    return (relay, String(address))
}

struct RelayDidNotStart: Error { var output: String }
