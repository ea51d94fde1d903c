// NetEQ-style delay estimation: a histogram of relative arrival delay with exponential forgetting, and its quantile.

import ParleyWire

/// A histogram of relative delays (ms, 1 ms buckets up to a ceiling) whose old samples fade by a forgetting
/// factor per new sample; the target delay is a high quantile of it (NetEQ's DelayManager).
///
/// Forgetting is done lazily: each new sample is added with a weight `1/f` larger than the previous one and the
/// whole histogram is rescaled when the weights grow large, so an update is O(1) and a quantile query O(buckets).
/// The first samples use a weaker forgetting (`1 − 1/(n+1)`, an equal-weight average) so the estimate settles
/// quickly from a cold start, as NetEQ's start-up forget factor does.
///
/// There is no fixed start-up prior here: before the first sample the target is 0, so a stream's first talkspurt
/// starts at what the network has shown so far. (A fixed 40 ms prior held the first talkspurt 40 ms later than every
/// later one on a clean path, a jump in the timeline after it.) What the path showed before any media — the client's
/// pings at join — enters as `JitterBuffer.startupPrior`, a floor under this estimate while it is young; and
/// `JitterBuffer` waits for late frames while the estimate is young, see `JitterBuffer.startupPackets`.
struct JitterDelayEstimator {
    private var buckets: [Double]
    private var total: Double = 0
    private var weight: Double = 1
    /// Samples added so far.
    private(set) var samples = 0
    let forgetFactor: Double
    let quantile: Double

    /// - Parameters: `ceilingMilliseconds` is the largest delay represented (larger samples land in the top bucket).
    init(ceilingMilliseconds: Int, quantile: Double, forgetFactor: Double) {
        buckets = Array(repeating: 0, count: max(ceilingMilliseconds, 1) + 1)
        self.quantile = min(max(quantile, 0.5), 0.9999)
        self.forgetFactor = min(max(forgetFactor, 0.9), 0.99999)
    }

    @inline(__always) private func bucket(_ ms: Double) -> Int {
        guard ms > 0 else { return 0 }
        guard ms < Double(buckets.count - 1) else { return buckets.count - 1 }
        let whole = Int(ms)          // truncation, then up: no libm on the per-packet path
        return Double(whole) < ms ? whole + 1 : whole
    }

    /// Adds one relative delay sample (ms).
    mutating func add(_ milliseconds: Double) {
        samples += 1
        let f = min(forgetFactor, 1 - 1 / Double(samples + 1))
        weight /= f
        buckets[bucket(milliseconds)] += weight
        total += weight
        if weight > 1e200 {
            for i in buckets.indices { buckets[i] /= weight }
            total /= weight
            weight = 1
        }
    }

    /// The smallest delay (ms) that covers `quantile` of the weighted samples.
    func target() -> Double {
        let allowed = (1 - quantile) * total
        var above = 0.0
        var i = buckets.count - 1
        while i > 0 {
            above += buckets[i]
            if above > allowed { return Double(i) }
            i -= 1
        }
        return 0
    }
}
