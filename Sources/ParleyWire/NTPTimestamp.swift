// The 64-bit NTP timestamp of RTCP sender reports (RFC 3550 §4), and the round trip a report block's LSR and DLSR give
// the sender of the SR it answers (RFC 3550 §6.4.1):
//
//        [10 Nov 1995 11:33:25.125 UTC]       [10 Nov 1995 11:33:36.5 UTC]
//        n                 SR(n)              A=b710:8000 (46864.500 s)
//        ---------------------------------------------------------------->
//                           v                 ^
//        ntp_sec =0xb44db705 v               ^ dlsr=0x0005:4000 (    5.250s)
//        ntp_frac=0x20000000  v             ^  lsr =0xb705:2000 (46853.125s)
//          (3024992005.125 s)  v           ^
//        r                      v         ^ RR(n)
//        ---------------------------------------------------------------->
//                               |<-DLSR->|
//                                (5.250 s)
//
//        A     0xb710:8000 (46864.500 s)
//        DLSR -0x0005:4000 (    5.250 s)
//        LSR  -0xb705:2000 (46853.125 s)
//        -------------------------------
//        delay 0x0006:2000 (    6.125 s)

/// A 64-bit NTP timestamp: seconds since 1 January 1900 in the high word, the fraction of a second in the low word.
public struct NTPTimestamp: Equatable, Sendable {
    /// Seconds from the NTP epoch (1900) to the Unix epoch (1970).
    public static let unixEpochOffset: UInt64 = 2_208_988_800

    /// The 64 bits as sent.
    public var bits: UInt64

    /// A timestamp of `bits`.
    public init(bits: UInt64) { self.bits = bits }

    /// The NTP time of a wall-clock reading in milliseconds since the Unix epoch.
    public init(unixMilliseconds: Int64) {
        let ms = UInt64(max(0, unixMilliseconds))
        let seconds = ms / 1000 + Self.unixEpochOffset
        let fraction = ((ms % 1000) << 32) / 1000
        bits = seconds << 32 | fraction
    }

    /// The middle 32 bits (16.16 fixed point seconds): what a report block's LSR carries, and the clock its DLSR and
    /// the round trip are measured on (1/65536 s).
    public var middle: UInt32 { UInt32(truncatingIfNeeded: bits >> 16) }

    /// `interval` in the 1/65536 s units of DLSR (negative spans as 0, longer than the field as its largest value).
    public static func compactUnits(_ interval: Interval) -> UInt32 {
        let ns = max(0, interval.nanoseconds)
        let whole = ns / 1_000_000_000, fraction = ns % 1_000_000_000
        return UInt32(clamping: (whole << 16) + fraction * 65_536 / 1_000_000_000)
    }

    /// The round trip a report block gives the sender of the SR it names (RFC 3550 §6.4.1): the block arrived at NTP
    /// time `arrival` (middle 32 bits) and says the SR sent at `lastSR` was held `delaySinceLastSR` before the report
    /// went out. Nil when the block names no SR (LSR 0) or the result is negative (clock steps, a forged block).
    public static func roundTrip(arrival: UInt32, lastSR: UInt32, delaySinceLastSR: UInt32) -> Interval? {
        guard lastSR != 0 else { return nil }
        let units = Int32(bitPattern: arrival &- lastSR &- delaySinceLastSR)
        guard units >= 0 else { return nil }
        return .nanoseconds(Int64(units) * 1_000_000_000 / 65_536)
    }
}
