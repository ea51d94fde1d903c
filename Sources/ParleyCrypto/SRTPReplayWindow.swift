/// The sliding replay window of RFC 3711 §3.3.2 over packet indices (48-bit SRTP or 31-bit SRTCP): the highest index
/// accepted and a bit per index of the 128 below and at it. `check` changes nothing; `accept` is called only after
/// the packet authenticated, so a forged packet cannot move the window.
///
///     index:  highest-127 … highest-2  highest-1  highest
///     bit:            127 …         2          1        0   (set = already accepted)
public struct SRTPReplayWindow: Equatable, Sendable {
    /// How many indices the window remembers, the highest included (RFC 3711 asks for at least 64).
    public static let size: UInt64 = 128

    /// The highest index accepted so far (0 while `isEmpty`).
    public private(set) var highest: UInt64 = 0
    /// Bit `n` set: index `highest - n` was accepted.
    private var seen: UInt128 = 0

    /// An empty window: any index is new.
    public init() {}

    /// True before the first `accept`.
    public var isEmpty: Bool { seen == 0 }

    /// Throws `replayed` when `index` was accepted already and `tooOld` when it is below the window; otherwise returns.
    public func check(_ index: UInt64) throws(SRTPError) {
        guard !isEmpty, index <= highest else { return }
        let age = highest - index
        guard age < Self.size else { throw .tooOld }
        if (seen >> age) & 1 != 0 { throw .replayed }
    }

    /// Records `index` as accepted, sliding the window forward when it is the new highest.
    public mutating func accept(_ index: UInt64) {
        if isEmpty {
            highest = index
            seen = 1
        } else if index > highest {
            let shift = index - highest
            seen = shift >= Self.size ? 1 : (seen << shift) | 1
            highest = index
        } else if highest - index < Self.size {
            seen |= UInt128(1) << (highest - index)
        }
    }
}
