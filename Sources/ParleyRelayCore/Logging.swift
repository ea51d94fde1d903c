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

/// What a log line is about, besides its message: ("room", "lobby"), ("identity", "alice"), ("member", "12"), …
/// A JSON log (`--log-format json`) writes them as fields; the text log leaves them out (its messages name them).
public typealias LogFields = [(key: String, value: String)]

/// Where log lines go; passed in, never global. Tests pass an in-memory sink.
public protocol LogSink: AnyObject, Sendable {
    /// Lines below this level are not produced at all.
    var threshold: LogLevel { get }
    /// Writes one line, with what it is about.
    func write(_ level: LogLevel, _ message: String, fields: LogFields)
}

extension LogSink {
    /// Writes one line about nothing in particular.
    public func write(_ level: LogLevel, _ message: String) { write(level, message, fields: []) }
}

/// A sink that keeps lines in memory (tests) — guarded by a mutex, as tests may read from another thread.
public final class MemoryLogSink: LogSink, Sendable {
    private let stored = Mutex<[(LogLevel, String)]>([])
    private let storedFields = Mutex<[[String]]>([])
    /// Threshold.
    public let threshold: LogLevel

    /// A sink that keeps every line at or above `threshold`.
    public init(threshold: LogLevel = .debug) { self.threshold = threshold }

    /// Writes one line (its fields are kept apart: `fieldsByLine`).
    public func write(_ level: LogLevel, _ message: String, fields: LogFields) {
        stored.withLock { $0.append((level, message)) }
        storedFields.withLock { $0.append(fields.map { "\($0.key)=\($0.value)" }) }
    }

    /// Each line's fields as `key=value`, in the order of `lines`.
    public var fieldsByLine: [[String]] { storedFields.withLock { $0 } }

    /// The lines so far.
    public var lines: [String] { stored.withLock { $0.map(\.1) } }

    /// The lines so far with their levels.
    public var entries: [(level: LogLevel, line: String)] { stored.withLock { $0.map { ($0.0, $0.1) } } }
}
