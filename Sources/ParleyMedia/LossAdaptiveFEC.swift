// How much in-band FEC an Opus encoder should carry for the loss and jitter its receivers report.

/// Opus in-band FEC (LBRR) sized to what receivers report. Protection costs bits the primary encoding loses, so a
/// clean path gets none; a lossy one about 0.6× its loss (at least 1 %, at most 20 %); and a jittery one some even
/// without loss, because a packet that arrives after its play-out time is lost to the listener all the same and
/// only the next packet's FEC rebuilds it (the RTCP interarrival jitter of 3 ms or more: 1 %, of 8 ms or more: 2 %).
/// From sweeps on the shared traces at 56 kbit/s (`Benchmarks/scripts/quality/playout.py`): 2 % costs 0.09 PESQ-WB on a
/// clean path, gains 0.7 on the moderate trace (2.6 % loss, jitter ~14 ms) and 3.5 → 3.6 on a jitter-only
/// two-leg trace; settings above the loss bought no more. Reports are smoothed: a rise is taken at once, a fall
/// slowly (each report moves a fifth of the way down). Pure.
public struct LossAdaptiveFEC: Sendable {
    /// The encoder's expected-loss setting, in percent.
    public private(set) var expectedLossPercent: Int32 = 0
    private var smoothedLoss = 0.0
    private var smoothedJitterMs = 0.0

    /// Nothing reported yet: no protection.
    public init() {}

    /// Takes one report block: RTCP fraction lost (/256) and interarrival jitter (RTP timestamp units at
    /// `clockRate`); returns true when `expectedLossPercent` changed.
    public mutating func report(fractionLost: UInt8, jitter: UInt32 = 0, clockRate: Int = 48_000) -> Bool {
        let percent = Double(fractionLost) * 100 / 256
        let jitterMs = Double(jitter) * 1000 / Double(clockRate)
        smoothedLoss = percent > smoothedLoss ? percent : smoothedLoss * 0.8 + percent * 0.2
        smoothedJitterMs = jitterMs > smoothedJitterMs ? jitterMs : smoothedJitterMs * 0.8 + jitterMs * 0.2
        let wanted = Self.protection(forLoss: smoothedLoss, jitterMilliseconds: smoothedJitterMs)
        guard wanted != expectedLossPercent else { return false }
        expectedLossPercent = wanted
        return true
    }

    /// The expected-loss setting (percent) for a loss (percent) and an interarrival jitter (ms).
    public static func protection(forLoss loss: Double, jitterMilliseconds jitter: Double = 0) -> Int32 {
        let forLoss: Int32 = loss < 0.5 ? 0 : Int32(min(20, max(1, (loss * 0.6).rounded())))
        let forJitter: Int32 = jitter >= 8 ? 2 : jitter >= 3 ? 1 : 0
        return max(forLoss, forJitter)
    }
}
