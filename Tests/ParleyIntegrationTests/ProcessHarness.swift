import Foundation
import Testing

/// Every test that starts real processes, one at a time: they share two cores, and real-time audio clients
/// starved of CPU would measure the machine, not Parley.
@Suite(.serialized) struct ProcessTests {}

/// Runs the package's own executables, or an `ExternalProgram`, as real processes and collects what they print.
/// Waiting is on facts (output seen, exit, pipes closed), each with a deadline; nothing waits by sleeping.
final class Spawned: @unchecked Sendable {
    // Invariant: `out`, `err` and `openPipes` change only under `condition`, from the pipes' handlers, which
    // broadcast after every change; waiters read them under the same lock.
    let process = Process()
    private let condition = NSCondition()
    private var out = Data()
    private var err = Data()
    private var openPipes = 2
    private var exited = false
    /// Where `send` writes the process's stdin; nil: its stdin is /dev/null (never the test runner's terminal).
    private let input: Pipe?

    /// Starts one of the package's executables (from the build folder) by name. Relays keep their identity key in
    /// `relayStateDirectory` unless `environment` names another `PARLEY_STATE_DIR`: never in the user's home. With
    /// `input`, its stdin is a pipe the test writes with `send` and closes with `closeInput`; else /dev/null.
    convenience init(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                     input: Bool = false) throws {
        var environment = environment
        if executable == "parley-relay" && environment["PARLEY_STATE_DIR"] == nil { environment["PARLEY_STATE_DIR"] = Spawned.relayStateDirectory }
        try self.init(url: Spawned.binary(executable), arguments, environment: environment, input: input)
    }

    /// Starts a script of the repository (`path` from the package root, e.g. "Samples/demo.sh") as a person runs it.
    convenience init(script path: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        try self.init(url: URL(fileURLWithPath: ExternalProgram.packageRoot + "/" + path), arguments,
                      environment: environment)
    }

    /// The state directory every relay the tests start shares, one per user so runs do not pile up directories (one key
    /// for all: relays starting at once, even from two test runs, agree on it).
    static let relayStateDirectory = NSTemporaryDirectory() + "parley-tests-\(geteuid())/relay-state"

    /// Starts a program from a Debian package; throws `MissingProgram`, naming the package, when it is not installed.
    /// With `input`, its stdin is a pipe the test writes with `send`.
    convenience init(_ program: ExternalProgram, _ arguments: [String], environment: [String: String] = [:],
                     input: Bool = false) throws {
        try self.init(url: program.url(), arguments, environment: environment, input: input)
    }

    private init(url: URL, _ arguments: [String], environment: [String: String], input: Bool = false) throws {
        process.executableURL = url
        process.arguments = arguments
        self.input = input ? Pipe() : nil
        // A write to a process that exited is an error for `send` to ignore, not a SIGPIPE that ends the test run.
        if input { _ = Glibc.signal(SIGPIPE, SIG_IGN) }
        process.standardInput = self.input ?? FileHandle.nullDevice
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let o = Pipe(), e = Pipe()
        process.standardOutput = o
        process.standardError = e
        o.fileHandleForReading.readabilityHandler = { [weak self] h in self?.take(h, stdout: true) }
        e.fileHandleForReading.readabilityHandler = { [weak self] h in self?.take(h, stdout: false) }
        process.terminationHandler = { [weak self] _ in
            guard let self else { return }
            self.condition.withLock { self.exited = true; self.condition.broadcast() }
        }
        try process.run()
    }

    private func take(_ handle: FileHandle, stdout: Bool) {
        let d = handle.availableData
        condition.withLock {
            if d.isEmpty {
                handle.readabilityHandler = nil
                openPipes -= 1
            } else if stdout {
                out.append(d)
            } else {
                err.append(d)
            }
            condition.broadcast()
        }
    }

    /// The package's build folder (tests run from `.build/<config>/`), where `swift build` put the executables.
    static func binary(_ name: String) -> URL {
        if let dir = ProcessInfo.processInfo.environment["PARLEY_BIN_DIR"] { return URL(fileURLWithPath: dir).appendingPathComponent(name) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/\(name)")
    }

    var stdout: String { condition.withLock { String(decoding: out, as: UTF8.self) } }
    var stderr: String { condition.withLock { String(decoding: err, as: UTF8.self) } }
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }

    /// Waits until `predicate` holds on stdout or `seconds` pass; returns whether it held. Wakes on each new output.
    @discardableResult
    func waitFor(seconds: Double, _ predicate: (String) -> Bool) -> Bool {
        waitFor(seconds: seconds, on: \.out, predicate)
    }

    /// `waitFor` on stderr (where the relay logs).
    @discardableResult
    func waitForStderr(seconds: Double, _ predicate: (String) -> Bool) -> Bool {
        waitFor(seconds: seconds, on: \.err, predicate)
    }

    private func waitFor(seconds: Double, on stream: KeyPath<Spawned, Data>, _ predicate: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if predicate(String(decoding: self[keyPath: stream], as: UTF8.self)) { return true }
            if openPipes == 0 || !condition.wait(until: deadline) { return predicate(String(decoding: self[keyPath: stream], as: UTF8.self)) }
        }
    }

    /// Waits for the process to exit (terminating it after `seconds`, killing it 3 s later if SIGTERM did not end it:
    /// ffmpeg blocked on a socket with nothing arriving ignores SIGTERM) and for its output pipes to close; returns
    /// its status.
    @discardableResult
    func wait(seconds: Double) -> Int32 {
        let deadline = Date().addingTimeInterval(seconds)
        condition.withLock { while !exited && condition.wait(until: deadline) {} }
        if process.isRunning {
            process.terminate()
            let grace = Date().addingTimeInterval(3)
            condition.withLock { while !exited && condition.wait(until: grace) {} }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        // A child that inherited the pipes may hold them open: give them a bounded moment, then go on.
        let drained = Date().addingTimeInterval(2)
        condition.withLock { while openPipes > 0 && condition.wait(until: drained) {} }
        return process.terminationStatus
    }

    /// Writes `text` to the process's stdin (started with `input`).
    func send(_ text: String) {
        try? input?.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    /// Closes the process's stdin (started with `input`): it reads the end of its input.
    func closeInput() { try? input?.fileHandleForWriting.close() }

    /// Sends `sig` while the process runs (after it exited and was reaped, its pid may belong to another process).
    func signal(_ sig: Int32) { if process.isRunning { kill(process.processIdentifier, sig) } }

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
