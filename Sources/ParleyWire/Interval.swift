// Spans of monotonic time. The pure cores take time as a parameter (`now`) and keep every setting and timer as one of
// these, so a reader never meets a bare `Int64` of nanoseconds or a hand-written `/ 1_000_000`.

/// A span of time, nanosecond resolution, signed (a difference of two `Instant`s may be negative).
///
/// Like the standard library's `Duration`, but one `Int64` wide: the per-packet path compares and subtracts these,
/// and 128-bit arithmetic there is measurable.
@frozen
public struct Interval: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The span in nanoseconds.
    public var nanoseconds: Int64

    /// A span of `nanoseconds`.
    @inlinable public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// Zero.
    public static let zero = Interval(nanoseconds: 0)

    /// `n` nanoseconds.
    @inlinable public static func nanoseconds(_ n: Int64) -> Interval { Interval(nanoseconds: n) }
    /// `n` microseconds.
    @inlinable public static func microseconds(_ n: Int64) -> Interval { Interval(nanoseconds: n * 1_000) }
    /// `n` milliseconds.
    @inlinable public static func milliseconds(_ n: Int64) -> Interval { Interval(nanoseconds: n * 1_000_000) }
    /// `n` seconds.
    @inlinable public static func seconds(_ n: Int64) -> Interval { Interval(nanoseconds: n * 1_000_000_000) }
    /// `seconds` (fractional), rounded to the nearest nanosecond.
    @inlinable public init(seconds: Double) { self.nanoseconds = Int64((seconds * 1e9).rounded()) }

    /// Whole milliseconds (truncated toward zero).
    @inlinable public var milliseconds: Int64 { nanoseconds / 1_000_000 }
    /// Whole seconds (truncated toward zero).
    @inlinable public var wholeSeconds: Int64 { nanoseconds / 1_000_000_000 }
    /// Seconds as a floating-point number.
    @inlinable public var seconds: Double { Double(nanoseconds) / 1e9 }

    @inlinable public static func < (a: Interval, b: Interval) -> Bool { a.nanoseconds < b.nanoseconds }
    @inlinable public static func + (a: Interval, b: Interval) -> Interval { Interval(nanoseconds: a.nanoseconds &+ b.nanoseconds) }
    @inlinable public static func - (a: Interval, b: Interval) -> Interval { Interval(nanoseconds: a.nanoseconds &- b.nanoseconds) }
    @inlinable public static func += (a: inout Interval, b: Interval) { a = a + b }
    @inlinable public static func -= (a: inout Interval, b: Interval) { a = a - b }
    @inlinable public static func * (a: Interval, n: Int64) -> Interval { Interval(nanoseconds: a.nanoseconds &* n) }
    @inlinable public static func * (n: Int64, a: Interval) -> Interval { a * n }
    @inlinable public static func / (a: Interval, n: Int64) -> Interval { Interval(nanoseconds: a.nanoseconds / n) }
    /// How many times `b` fits in `a` (truncated).
    @inlinable public static func / (a: Interval, b: Interval) -> Int64 { a.nanoseconds / b.nanoseconds }
    @inlinable public static prefix func - (a: Interval) -> Interval { Interval(nanoseconds: 0 &- a.nanoseconds) }

    /// "1.5 s", "20 ms", "750 µs" or "12 ns".
    public var description: String {
        let n = nanoseconds.magnitude
        let sign = nanoseconds < 0 ? "-" : ""
        if n >= 1_000_000_000 { return sign + Self.decimal(n, per: 1_000_000_000) + " s" }
        if n >= 1_000_000 { return sign + Self.decimal(n, per: 1_000_000) + " ms" }
        if n >= 1_000 { return sign + Self.decimal(n, per: 1_000) + " µs" }
        return "\(nanoseconds) ns"
    }

    /// `n / per` with up to three decimals, trailing zeros dropped.
    private static func decimal(_ n: UInt64, per: UInt64) -> String {
        let whole = n / per
        var fraction = (n % per) * 1000 / per
        guard fraction > 0 else { return "\(whole)" }
        var digits = 3
        while fraction % 10 == 0 { fraction /= 10; digits -= 1 }
        let text = String(fraction)
        return "\(whole)." + String(repeating: "0", count: digits - text.count) + text
    }
}
