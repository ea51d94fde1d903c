// How much in-band FEC an Opus encoder should carry for the loss its receivers report.

/// Opus in-band FEC (LBRR) sized to reported loss. Protection costs bits the primary encoding loses: on the shared
/// traces at 40 kbit/s (`Benchmarks/quality/playout.py`), 1 % expected loss costs 0.24 PESQ-WB on a clean path and
/// gains 0.4 on the moderate trace (2.3 % loss), and settings above the loss bought less. So a path under 0.5 %
/// loss gets none and a lossy one about 0.6× its loss, at least 1 %, at most 20 %. Reports are smoothed: a rise is
/// taken at once, a fall slowly (each report moves a fifth of the way down). Pure.
public struct LossAdaptiveFEC: Sendable {
    /// The encoder's expected-loss setting, in percent.
    public private(set) var expectedLossPercent: Int32 = 0
    private var smoothedLoss = 0.0

    /// Nothing reported yet: no protection.
    public init() {}

    /// Takes one report (RTCP fraction lost, /256); returns true when `expectedLossPercent` changed.
    public mutating func report(fractionLost: UInt8) -> Bool {
        let percent = Double(fractionLost) * 100 / 256
        smoothedLoss = percent > smoothedLoss ? percent : smoothedLoss * 0.8 + percent * 0.2
        let wanted = Self.protection(forLoss: smoothedLoss)
        guard wanted != expectedLossPercent else { return false }
        expectedLossPercent = wanted
        return true
    }

    /// The expected-loss setting (percent) for a loss (percent).
    public static func protection(forLoss loss: Double) -> Int32 {
        loss < 0.5 ? 0 : Int32(min(20, max(1, (loss * 0.6).rounded())))
    }
}
