/// A token bucket: `take()` succeeds while tokens remain, refilled at `ratePerSecond` up to `burst`.
struct TokenBucket {
    let ratePerSecond: Double
    let burst: Double
    var tokens: Double
    var last: Int64 = 0

    init(ratePerSecond: Double, burst: Double) {
        self.ratePerSecond = ratePerSecond
        self.burst = max(1, burst)
        self.tokens = max(1, burst)
    }

    mutating func take(now: Int64) -> Bool {
        let elapsed = Double(max(0, now - last)) / 1e9
        last = now
        tokens = min(burst, tokens + elapsed * ratePerSecond)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
