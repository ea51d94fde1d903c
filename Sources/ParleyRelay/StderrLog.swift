import Foundation
import ParleyNet
import ParleyRelayCore
import Synchronization

/// Log lines to standard error (fd 2), one `write(2)` per line so threads never interleave within a line. Text by
/// default; JSON (one object per line, for journald, Loki and friends) with `LogFormat.json`. The threshold can change
/// while the relay runs (a reload).
public final class StderrLog: LogSink {
    /// How a line is written.
    public enum LogFormat: String, Sendable, CaseIterable {
        /// `2026-11-30T09:00:00.123Z info message` (UTC).
        case text
        /// `{"time":"2026-11-30T09:00:00.123Z","level":"info","msg":"message","node":"…","room":"…",…}`.
        case json
    }

    private let level: Atomic<Int>
    /// Lines below this level are skipped.
    public var threshold: LogLevel {
        get { LogLevel(rawValue: level.load(ordering: .relaxed)) ?? .info }
        set { level.store(newValue.rawValue, ordering: .relaxed) }
    }
    /// Text or JSON.
    public let format: LogFormat
    /// Fields every JSON line carries (the node's id, set once the relay has one).
    private let common = Mutex<LogFields>([])

    /// A sink at `threshold`, writing `format`.
    public init(threshold: LogLevel, format: LogFormat = .text) {
        level = Atomic(threshold.rawValue)
        self.format = format
    }

    /// Adds a field to every later JSON line (e.g. ("node", id)).
    public func addCommonField(_ key: String, _ value: String) { common.withLock { $0.append((key, value)) } }

    /// Writes one line.
    public func write(_ level: LogLevel, _ message: String, fields: LogFields) {
        guard level >= threshold else { return }
        writeLine(line(level, message, fields: fields, unixMilliseconds: Clock.unixMilliseconds()), fd: 2)
    }

    /// The line as written (without its newline).
    func line(_ level: LogLevel, _ message: String, fields: LogFields, unixMilliseconds ms: UInt64) -> String {
        // UTC to the millisecond: the whole seconds formatted, the milliseconds added as integers (through a Double
        // they could come out one less).
        let seconds = Date(timeIntervalSince1970: Double(ms / 1000)).formatted(.iso8601)  // …T08:00:00Z
        let stamp = seconds.dropLast() + String(format: ".%03dZ", Int(ms % 1000))
        guard format == .json else { return "\(stamp) \(level.name) \(message)" }
        var out = "{\"time\":\"\(stamp)\",\"level\":\"\(level.name)\",\"msg\":" + Self.jsonString(message)
        for (key, value) in common.withLock({ $0 }) + fields {
            out += "," + Self.jsonString(key) + ":" + Self.jsonString(value)
        }
        return out + "}"
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped (RFC 8259 §7).
    static func jsonString(_ text: String) -> String {
        var out = "\""
        for c in text.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where c.value < 0x20 || c.value == 0x7F || c.value == 0x2028 || c.value == 0x2029:
                out += String(format: "\\u%04x", c.value)
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "\""
    }
}
