import Glibc

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
public final class MemoryLogSink: LogSink, @unchecked Sendable {
    // Invariant: `lines` is only touched while holding `lock`.
    private let lock = NSLockLike()
    private var stored: [(LogLevel, String)] = []
    /// Threshold.
    public let threshold: LogLevel

    /// A sink that keeps every line at or above `threshold`.
    public init(threshold: LogLevel = .debug) { self.threshold = threshold }

    /// Writes one line.
    public func write(_ level: LogLevel, _ message: String) {
        lock.withLock { stored.append((level, message)) }
    }

    /// The lines so far.
    public var lines: [String] { lock.withLock { stored.map(\.1) } }
}

/// A minimal mutex so this target needs no Foundation.
final class NSLockLike: @unchecked Sendable {
    // Invariant: the pthread mutex lives as long as the object and is used only through withLock.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()
    deinit { pthread_mutex_destroy(mutex); mutex.deallocate() }
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
