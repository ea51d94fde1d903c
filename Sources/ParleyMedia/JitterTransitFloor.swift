// The jitter buffer's reference delay: the fastest transit of the last few seconds, carried forward at the rate the
// sender's clock drifts from ours.

import ParleyWire

/// The fastest transit (arrival − send time, in ns on the receiver's clock) seen over the last few seconds: the
/// reference that relative delays are measured from. A sliding minimum over `bucketCount` buckets of `bucket` of
/// arrival time follows a changed base delay within the window.
///
/// A sender whose clock runs slow (or fast) against ours makes every transit grow (or shrink) steadily: ffmpeg at
/// `-readrate 0.995` adds 5 ms a second. A plain sliding minimum then lags the path by the window's drift (up to 20 ms
/// over 4 s) and jumps by a second's drift each time a bucket expires, so packets read as that much more jitter and
/// the target grows by it. The floor therefore carries each bucket's minimum forward to the latest arrival at the
/// measured `skew` (`ClockSkew`) when the sender is slow, and reads as the path's current fastest transit.
struct JitterTransitFloor {
    private var minima: [Int64]
    /// Arrival time of each bucket's minimum.
    private var minimumArrival: [Int64]
    private var bucketStart: [Int64]
    private var current = 0
    /// One bucket's span of arrival time, in nanoseconds (the arithmetic here is on raw nanoseconds).
    let bucketNanoseconds: Int64
    /// The sender's clock against ours, from every sample (its own half-second minima).
    private(set) var skew = ClockSkew()
    private var latestArrival: Int64 = 0
    /// `value`, recomputed at each sample.
    private var cached: Int64 = 0

    init(bucketCount: Int = 4, bucket: Interval = .seconds(1)) {
        minima = Array(repeating: .max, count: bucketCount)
        minimumArrival = Array(repeating: 0, count: bucketCount)
        bucketStart = Array(repeating: .min, count: bucketCount)
        self.bucketNanoseconds = bucket.nanoseconds
    }

    /// True before the first sample.
    var isEmpty: Bool { bucketStart[current] == .min }

    /// Adds a transit sample taken at `arrival`.
    mutating func add(transit: Int64, arrival: Int64) {
        if isEmpty {
            bucketStart[current] = arrival
        } else if arrival - bucketStart[current] >= bucketNanoseconds {
            if arrival - bucketStart[current] >= bucketNanoseconds * Int64(minima.count) {
                // Nothing arrived for a whole window (a long DTX pause): older minima are stale.
                for i in minima.indices { minima[i] = .max }
            }
            current = (current + 1) % minima.count
            minima[current] = .max
            bucketStart[current] = arrival
        }
        skew.add(transit: transit, arrival: arrival)
        if transit < minima[current] {
            minima[current] = transit
            minimumArrival[current] = arrival
        }
        latestArrival = arrival
        cached = carriedMinimum()
    }

    /// The minimum transit over the window, each bucket's carried forward to the latest arrival at the skew (0 when
    /// empty).
    var value: Int64 { cached }

    private func carriedMinimum() -> Int64 {
        // Only a slow clock is carried: under a fast one transits fall, so the newest bucket's minimum is already the
        // least and the older ones never set the floor.
        let rate = max(0, skew.value)
        var m = Int64.max
        for i in minima.indices where minima[i] != .max {
            let carried = rate == 0 ? minima[i] : minima[i] + Int64(rate * Double(latestArrival - minimumArrival[i]))
            m = min(m, carried)
        }
        return m == .max ? 0 : m
    }

    /// Forgets the window (a step in the path's delay): the skew, which is the sender's clock, stays.
    mutating func clear() {
        for i in minima.indices { minima[i] = .max; bucketStart[i] = .min }
        current = 0
        cached = 0
    }

    /// Forgets the window and the skew (another sender).
    mutating func reset() {
        clear()
        skew = ClockSkew()
    }
}

/// How fast the path's fastest transit grows, in ns per ns of arrival time: + when the sender's clock runs slow
/// against ours (it sends less than 50 frames a second of our time, so the buffer drains), − when it runs fast. From
/// the least transit of each half second, the slopes between minima two seconds apart over the last `pointCount`. A
/// clock drifts evenly, so nearly every slope shows it: only when the quartile nearest zero is itself at least
/// `minimum` off zero is there a skew, and that quartile is its value. A sender's capture stalls (every later packet
/// late by the stall: steps up in the transit, which over a minute look like a slow clock but are not even) raise some
/// slopes and leave the rest at the clock's, and a half second whose minimum a burst of jitter raised moves one or
/// two: neither reaches the lower quartile. Below `minimum` it reads 0: crystal drift (50–100 ppm) and noise are not
/// corrected for, so ordinary paths are measured exactly as without it.
struct ClockSkew {
    private var arrivals = [Int64](repeating: 0, count: pointCount)
    private var transits = [Int64](repeating: 0, count: pointCount)
    /// The slopes of one estimate, sorted in place (allocated once).
    private var slopes = [Double](repeating: 0, count: pointCount)
    private var count = 0
    private var next = 0
    /// The open half second: its start, and its least transit with that packet's arrival.
    private var spanStart = Int64.min
    private var spanMinimum = (transit: Int64.max, arrival: Int64(0))
    /// The skew in use (0 below `minimum`, clamped to ±`maximum`).
    private(set) var value = 0.0

    static let span: Int64 = 500_000_000
    static let pointCount = 16
    /// Points between the two ends of a slope (2 s).
    static let slopePoints = 4
    /// Slopes needed before any skew is used (four seconds of minima).
    static let slopesNeeded = 4
    /// 0.15 %: 1.5 ms a second.
    static let minimum = 0.0015
    /// 1 %: no real sender's clock is further off; what looks further is not a clock.
    static let maximum = 0.01

    /// Adds a transit sample taken at `arrival`.
    mutating func add(transit: Int64, arrival: Int64) {
        if spanStart == .min { spanStart = arrival }
        if arrival - spanStart >= Self.span {
            if spanMinimum.transit != .max { close(spanMinimum) }
            // After a long pause (DTX) the points before it still hold: the sender's clock did not change.
            spanStart = arrival
            spanMinimum = (.max, 0)
        }
        if transit < spanMinimum.transit { spanMinimum = (transit, arrival) }
    }

    private mutating func close(_ point: (transit: Int64, arrival: Int64)) {
        arrivals[next] = point.arrival
        transits[next] = point.transit
        next = (next + 1) % Self.pointCount
        count = min(count + 1, Self.pointCount)
        value = estimate()
    }

    private mutating func estimate() -> Double {
        guard count >= Self.slopesNeeded + Self.slopePoints else { return 0 }
        var n = 0
        let oldest = (next - count + Self.pointCount) % Self.pointCount
        for k in 0..<(count - Self.slopePoints) {
            let a = (oldest + k) % Self.pointCount, b = (oldest + k + Self.slopePoints) % Self.pointCount
            let elapsed = arrivals[b] - arrivals[a]
            guard elapsed > 0 else { continue }
            slopes[n] = Double(transits[b] - transits[a]) / Double(elapsed)
            n += 1
        }
        guard n >= Self.slopesNeeded else { return 0 }
        slopes[0..<n].sort()
        let lower = slopes[n / 4], upper = slopes[n * 3 / 4]
        if lower >= Self.minimum { return min(lower, Self.maximum) }
        if upper <= -Self.minimum { return max(upper, -Self.maximum) }
        return 0
    }
}
