import ParleyWire

/// A token bucket: `take()` succeeds while tokens remain, refilled at `ratePerSecond` up to `burst`.
struct TokenBucket {
    let ratePerSecond: Double
    let burst: Double
    var tokens: Double
    var last = Instant.origin

    init(ratePerSecond: Double, burst: Double) {
        self.ratePerSecond = ratePerSecond
        self.burst = max(1, burst)
        self.tokens = max(1, burst)
    }

    mutating func take(now: Instant) -> Bool {
        let elapsed = max(.zero, now - last).seconds
        last = now
        tokens = min(burst, tokens + elapsed * ratePerSecond)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
