import ParleyWire

/// INVITEs per source address (any port), a token bucket each: `burst` at once, then `perSecond`. A source over its
/// budget is not answered at all (an answer would be a reflection for whoever spoofed the address). At most
/// `maxSources` addresses are tracked; past that, full buckets are forgotten first, and a new source is refused while
/// none is full (a flood from many addresses cannot make the table grow without bound). Pure: the caller gives the
/// time (monotonic nanoseconds).
public struct SIPRateLimit: Sendable {
    /// Requests a second a source gets once its burst is spent.
    public let perSecond: Double
    /// Requests a source may send at once.
    public let burst: Double
    /// Addresses tracked at most.
    public let maxSources: Int
    private struct Key: Hashable { let high: UInt64, low: UInt64 }
    private var buckets: [Key: (tokens: Double, at: Int64)] = [:]

    /// A limit of `perSecond` requests a second after a burst of `burst`, over at most `maxSources` addresses.
    public init(perSecond: Double, burst: Double, maxSources: Int = 10_000) {
        self.perSecond = perSecond
        self.burst = burst
        self.maxSources = maxSources
    }

    /// Addresses tracked now.
    public var sources: Int { buckets.count }

    /// True when a request from `source` at `now` is within its budget (and takes one token).
    public mutating func allow(_ source: PeerAddress, now: Int64) -> Bool {
        let key = Key(high: source.high, low: source.low)
        var bucket: (tokens: Double, at: Int64)
        if let known = buckets[key] {
            let seconds = Double(max(0, now - known.at)) / 1e9
            bucket = (min(burst, known.tokens + seconds * perSecond), now)
        } else {
            if buckets.count >= maxSources { forgetFull(now: now) }
            guard buckets.count < maxSources else { return false }
            bucket = (burst, now)
        }
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        buckets[key] = bucket
        return allowed
    }

    /// Drops the buckets that have refilled (their sources are as if never seen).
    private mutating func forgetFull(now: Int64) {
        let refill = Int64((burst / perSecond) * 1e9)
        buckets = buckets.filter { now - $0.value.at < refill }
    }
}
