import Synchronization

/// Severity of a log line.
public enum LogLevel: Int, Comparable, Sendable, CaseIterable {
    case debug = 0, info, warning, error

    /// Parses "debug", "info", "warning"/"warn", "error".
    public init?(name: String) {
        switch name.lowercased() {
        case "debug": self = .debug
        case "info": self = .info
        case "warning", "warn": self = .warning
        case "error": self = .error
        default: return nil
        }
    }

    /// Lower-case name.
    public var name: String { ["debug", "info", "warning", "error"][rawValue] }

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

/// Where log lines go; passed in, never global. Tests pass an in-memory sink.
public protocol LogSink: AnyObject, Sendable {
    /// Lines below this level are not produced at all.
    var threshold: LogLevel { get }
    /// Writes one line.
    func write(_ level: LogLevel, _ message: String)
}

/// A sink that keeps lines in memory (tests) — guarded by a mutex, as tests may read from another thread.
public final class MemoryLogSink: LogSink, Sendable {
    private let stored = Mutex<[(LogLevel, String)]>([])
    /// Threshold.
    public let threshold: LogLevel

    /// A sink that keeps every line at or above `threshold`.
    public init(threshold: LogLevel = .debug) { self.threshold = threshold }

    /// Writes one line.
    public func write(_ level: LogLevel, _ message: String) {
        stored.withLock { $0.append((level, message)) }
    }

    /// The lines so far.
    public var lines: [String] { stored.withLock { $0.map(\.1) } }

    /// The lines so far with their levels.
    public var entries: [(level: LogLevel, line: String)] { stored.withLock { $0.map { ($0.0, $0.1) } } }
}
