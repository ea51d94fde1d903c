/// A point on the monotonic clock (nanoseconds since an arbitrary origin: the kernel's `CLOCK_MONOTONIC` in
/// production, 0 at the start of a test's manual clock). Only differences between instants mean anything.
@frozen
public struct Instant: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the clock's origin.
    public var nanoseconds: Int64

    /// The instant `nanoseconds` after the clock's origin.
    @inlinable public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// The clock's origin (where a test's manual clock starts).
    public static let origin = Instant(nanoseconds: 0)
    /// Long before any real instant, yet far enough from `Int64.min` that subtracting an `Interval` cannot wrap:
    /// the "never" of timers that are due at once (`now - distantPast` is larger than any setting).
    public static let distantPast = Instant(nanoseconds: .min / 2)
    /// Long after any real instant: the "never" of timers that are not due.
    public static let distantFuture = Instant(nanoseconds: .max / 2)

    @inlinable public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }
    /// The span from `b` to `a`.
    @inlinable public static func - (a: Instant, b: Instant) -> Interval { Interval(nanoseconds: a.nanoseconds &- b.nanoseconds) }
    @inlinable public static func + (a: Instant, d: Interval) -> Instant { Instant(nanoseconds: a.nanoseconds &+ d.nanoseconds) }
    @inlinable public static func - (a: Instant, d: Interval) -> Instant { Instant(nanoseconds: a.nanoseconds &- d.nanoseconds) }
    @inlinable public static func += (a: inout Instant, d: Interval) { a = a + d }

    /// "t+1.5 s" (from the origin).
    public var description: String { "t+\(Interval(nanoseconds: nanoseconds))" }
}
