import ParleyWire

/// How long a client waits before opening a session afresh after one ended in a way a new session can mend (the
/// relay shut down, restarted and forgot us, timed us out, or went silent): 1 s, doubling to 30 s, and 1 s again once
/// a session was welcomed. Shared by `ClientEngine` (`parley join`) and `parley listen`, so both come back on the same
/// schedule.
public struct RejoinBackoff: Equatable, Sendable {
    /// The first wait.
    public static let first: Interval = .seconds(1)
    /// The longest wait.
    public static let longest: Interval = .seconds(30)

    /// The wait the next attempt will get.
    public private(set) var next: Interval = first

    /// A schedule that starts at `first`.
    public init() {}

    /// The wait before the next attempt; the one after it is twice as long (at most `longest`).
    public mutating func take() -> Interval {
        defer { next = min(next * 2, Self.longest) }
        return next
    }

    /// A session was welcomed: the next wait is `first` again.
    public mutating func reset() { next = Self.first }
}
