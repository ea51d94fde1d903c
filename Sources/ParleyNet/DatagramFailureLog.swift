/// Turns the growth of a batch's failure counters into log lines at a limited rate: at most one line per counter
/// (each send-failure kind, drop reason and receive-failure kind) per `interval`, carrying the count since that
/// counter's last line; the first failure of a kind is logged at once. Pure: the caller passes the counters and
/// `now` and writes the lines it gets to its log sink.
///
///     send failures: 1 message_too_large
///     send failures: 4210 no_buffers in the last 10 s
///     send drops: 96 queue_full in the last 31 s
public struct DatagramFailureLog {
    /// Shortest time between two lines about one counter, in nanoseconds.
    public let interval: Int64
    /// `counters.problems` when every counter was last logged in full (the quick check per loop).
    private var settled: UInt64 = 0
    /// Per counter slot (send failures, drops, receive failures, in that order): the count at its last line, and when.
    private var logged: [UInt64]
    private var lastLine: [Int64]

    private static let kinds = SocketError.Kind.allCases.count
    private static let reasons = SendDropReason.allCases.count

    /// A log at most one line per counter per `interval` nanoseconds (10 s by default).
    public init(interval: Int64 = 10_000_000_000) {
        self.interval = interval
        logged = [UInt64](repeating: 0, count: 2 * Self.kinds + Self.reasons)
        lastLine = [Int64](repeating: .min / 2, count: 2 * Self.kinds + Self.reasons)
    }

    /// The lines due at `now` (monotonic nanoseconds): empty, without allocating, when nothing failed since the last
    /// lines. A counter that grew within `interval` of its last line waits; a later call (the loop wakes at least
    /// once a second) writes it once the interval has passed, even if nothing else failed meanwhile.
    public mutating func lines(for counters: DatagramCounters, now: Int64) -> [String] {
        let total = counters.problems
        guard total != settled else { return [] }
        var lines: [String] = []
        var waiting = false
        func check(_ slot: Int, _ count: UInt64, _ what: String, _ kind: String) {
            let grown = count &- logged[slot]
            guard grown != 0 else { return }
            let since = now - lastLine[slot]
            guard since >= interval else { waiting = true; return }
            let window = since < .max / 4 ? " in the last \((since + 500_000_000) / 1_000_000_000) s" : ""
            lines.append("\(what): \(grown) \(kind)\(window)")
            logged[slot] = count
            lastLine[slot] = now
        }
        for kind in SocketError.Kind.allCases {
            check(kind.rawValue, counters.sendFailures(kind), "send failures", label(kind, counters))
        }
        for reason in SendDropReason.allCases {
            check(Self.kinds + reason.rawValue, counters.sendDrops(reason), "send drops", reason.label)
        }
        for kind in SocketError.Kind.allCases {
            check(Self.kinds + Self.reasons + kind.rawValue, counters.receiveFailures(kind), "receive failures", label(kind, counters))
        }
        if !waiting { settled = total }
        return lines
    }

    /// The kind's label; `other` names the last errno seen.
    private func label(_ kind: SocketError.Kind, _ counters: DatagramCounters) -> String {
        guard kind == .other, counters.lastOtherErrno != 0 else { return kind.label }
        return SocketError.other(counters.lastOtherErrno).description
    }
}
