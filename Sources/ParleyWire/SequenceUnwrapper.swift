// Unwrapping 16-bit sequence numbers and 32-bit timestamps onto a 64-bit line, so later code can subtract freely.

/// Maps wrapping 16-bit RTP sequence numbers to a monotonic-ish 64-bit line.
///
/// The first value maps to itself. Each later value maps to the 64-bit number nearest to the previously
/// returned one that has the same low 16 bits, so reordering and duplicates across 65535 → 0 work in both
/// directions (a packet from before the first may map below 0). Exactly half the range away counts as older.
public struct SequenceUnwrapper: Sendable {
    private var last: Int64?

    /// An unwrapper that has not seen a value yet.
    public init() {}

    /// Returns the 64-bit value of `s` and remembers it as the reference for the next call.
    public mutating func unwrap(_ s: UInt16) -> Int64 {
        guard let last else {
            self.last = Int64(s)
            return Int64(s)
        }
        let step = Int64(Int16(bitPattern: s &- UInt16(truncatingIfNeeded: last)))
        let value = last + step
        self.last = value
        return value
    }
}

/// Maps wrapping 32-bit RTP timestamps to a 64-bit line, exactly as `SequenceUnwrapper` does for sequence numbers.
public struct TimestampUnwrapper: Sendable {
    private var last: Int64?

    /// An unwrapper that has not seen a value yet.
    public init() {}

    /// Returns the 64-bit value of `t` and remembers it as the reference for the next call.
    public mutating func unwrap(_ t: UInt32) -> Int64 {
        guard let last else {
            self.last = Int64(t)
            return Int64(t)
        }
        let step = Int64(Int32(bitPattern: t &- UInt32(truncatingIfNeeded: last)))
        let value = last + step
        self.last = value
        return value
    }
}
