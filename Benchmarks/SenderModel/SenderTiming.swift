// A real sender's timing, for the benchmarks that model one (jitter-bench's synthetic traces, impair-proxy): capture
// stalls and clock drift, one model for both.
//
// Browsers and phone apps pause their capture now and then and go on at the nominal pace afterwards, so every later
// packet leaves late by the pause: a permanent step in delay, with no gap in the RTP timestamps. Chromium's fake
// capture on a loaded machine stepped 0 → 10 → 20 → 31 → 60 → 131 ms in 21 s. Their clocks drift, too (±0.5 %):
// packet k of 20 ms leaves at k · 20 · (1 + drift) ms of real time while its RTP time says k · 20.
import Glibc
import ParleyWire

/// How often a sender stalls and for how long. Every packet but the first has a chance of 20 ms / `meanGapSeconds`
/// to follow a stall (at 20 ms packets, gaps between stalls are geometric with that mean); a stall's length is
/// log-uniform between `minMs` and `maxMs` (mostly short, now and then long, as Chromium's were).
public struct SenderStalls: Sendable, Equatable {
    /// Mean time between stalls, in seconds of 20 ms packets.
    public var meanGapSeconds: Double
    /// The shortest stall, in ms.
    public var minMs: Double
    /// The longest stall, in ms.
    public var maxMs: Double

    /// Chromium's fake capture on a loaded machine, roughly: a stall every 4 s on average, 10–120 ms long.
    public static let typical = SenderStalls(meanGapSeconds: 4, minMs: 10, maxMs: 120)

    /// Stalls every `meanGapSeconds` on average, `minMs`–`maxMs` long.
    public init(meanGapSeconds: Double, minMs: Double, maxMs: Double) {
        self.meanGapSeconds = meanGapSeconds
        self.minMs = minMs
        self.maxMs = maxMs
    }

    /// Parses `GAP_S/MIN_MS/MAX_MS` (`4/10/120` is `typical`); nil unless 0 < GAP_S and 0 < MIN_MS ≤ MAX_MS.
    public init?(parsing spec: some StringProtocol) {
        let fields = spec.split(separator: "/").compactMap { Double($0) }
        guard fields.count == 3, fields[0] > 0, fields[1] > 0, fields[1] <= fields[2] else { return nil }
        self.init(meanGapSeconds: fields[0], minMs: fields[1], maxMs: fields[2])
    }

    /// `GAP_S/MIN_MS/MAX_MS`, as `init(parsing:)` reads it.
    public var spec: String {
        func short(_ x: Double) -> String { x == x.rounded() && abs(x) < 1e15 ? String(Int(x)) : String(x) }
        return "\(short(meanGapSeconds))/\(short(minMs))/\(short(maxMs))"
    }
}

/// One sender's lateness, packet after packet: the stalls so far plus its drift. Deterministic for a seed; the
/// stalls draw from their own generator, so a network model drawing from another stays the same with or without them.
public struct SenderTiming {
    /// The stall model, or nil for a sender that never stalls.
    public let stalls: SenderStalls?
    /// The sender's clock rate error: at +0.005 its 20 ms last 20.1 ms of real time (its packets fall behind).
    public let drift: Double
    /// How many stalls so far.
    public private(set) var stallCount = 0
    /// Their total length, in ms.
    public private(set) var stalledMs = 0.0
    private var random: SeededRandomNumberGenerator
    private var first = true

    /// A sender with `stalls` (nil: none) and `drift`, its stalls decided by `seed`.
    public init(stalls: SenderStalls?, drift: Double = 0, seed: UInt64) {
        self.stalls = stalls
        self.drift = drift
        random = SeededRandomNumberGenerator(seed: seed)
    }

    /// How late the next packet leaves against `nominalMs`, its time by the sender's clock since its first packet
    /// (k · 20 for packet k): the stalls so far, one maybe just before this packet, plus `drift × nominalMs`.
    /// Negative when the drift is and outweighs the stalls.
    public mutating func lateness(nominalMs: Double) -> Double {
        if let stalls, !first, random.unitInterval() < 0.020 / stalls.meanGapSeconds {
            stallCount += 1
            stalledMs += stalls.minMs * pow(stalls.maxMs / stalls.minMs, random.unitInterval())
        }
        first = false
        return stalledMs + drift * nominalMs
    }
}
