import Foundation
import ParleyNet
import ParleyRelayCore

/// Log lines to standard error (fd 2), one `write(2)` per line so threads never interleave within a line.
public final class StderrLog: LogSink {
    /// Lines below this level are skipped.
    public let threshold: LogLevel
    /// A sink at `threshold`.
    public init(threshold: LogLevel) { self.threshold = threshold }
    /// Writes `2026-11-30T09:00:00.123Z info message`.
    public func write(_ level: LogLevel, _ message: String) {
        guard level >= threshold else { return }
        let ms = Clock.unixMilliseconds()
        let date = Date(timeIntervalSince1970: Double(ms) / 1000)
        let stamp = date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
        writeLine("\(stamp) \(level.name) \(message)", fd: 2)
    }
}
