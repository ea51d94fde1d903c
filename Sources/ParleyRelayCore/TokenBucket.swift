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

    /// Takes one token, leaving at least `keeping` behind; false when there is not that much.
    mutating func take(now: Instant, keeping: Double = 0) -> Bool {
        let elapsed = max(.zero, now - last).seconds
        last = now
        tokens = min(burst, tokens + elapsed * ratePerSecond)
        guard tokens >= 1 + keeping else { return false }
        tokens -= 1
        return true
    }

    /// Whether the bucket will have refilled to its burst by `now` (nothing taken for long enough).
    func isFull(at now: Instant) -> Bool {
        tokens + max(.zero, now - last).seconds * ratePerSecond >= burst
    }
}
