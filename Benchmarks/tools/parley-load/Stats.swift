/// Latency histogram: 10 µs buckets up to 200 ms, one overflow bucket; no allocation after init.
struct LatencyHistogram {
    static let bucketNanoseconds: Int64 = 10_000
    static let buckets = 20_000
    private(set) var counts = [Int](repeating: 0, count: LatencyHistogram.buckets + 1)
    private(set) var total = 0
    private(set) var maxNanoseconds: Int64 = 0

    mutating func add(_ ns: Int64) {
        let b = min(Int(max(0, ns) / Self.bucketNanoseconds), Self.buckets)
        counts[b] += 1
        total += 1
        if ns > maxNanoseconds { maxNanoseconds = ns }
    }

    /// The `q` quantile in ms (upper edge of its bucket); 0 when empty.
    func quantileMilliseconds(_ q: Double) -> Double {
        guard total > 0 else { return 0 }
        let rank = max(1, Int((q * Double(total)).rounded(.up)))
        var seen = 0
        for (i, c) in counts.enumerated() {
            seen += c
            if seen >= rank { return i == Self.buckets ? Double(maxNanoseconds) / 1e6 : Double(Int64(i + 1) * Self.bucketNanoseconds) / 1e6 }
        }
        return Double(maxNanoseconds) / 1e6
    }

    var maxMilliseconds: Double { Double(maxNanoseconds) / 1e6 }

    /// Adds every sample of `other` (pooling runs).
    mutating func merge(_ other: LatencyHistogram) {
        for i in counts.indices { counts[i] += other.counts[i] }
        total += other.total
        maxNanoseconds = max(maxNanoseconds, other.maxNanoseconds)
    }

    mutating func reset() {
        for i in counts.indices { counts[i] = 0 }
        total = 0
        maxNanoseconds = 0
    }
}

/// What one listener received of one stream, by sequence offset from the stream's first packet: unique, duplicated,
/// out of order (below the highest offset seen), late. A bitset sized for the whole run, allocated once.
struct StreamTally {
    private var seen: [UInt64]
    /// The first sequence number (forward mode: the speaker's; mix mode: the first received).
    var firstSequence: UInt16?
    var received = 0, duplicated = 0, outOfOrder = 0, late = 0, beyondRange = 0
    var highestOffset = -1
    /// Mix mode: the first packet's arrival and RTP timestamp, to map later timestamps to expected arrivals.
    var firstArrival: Int64 = 0, firstTimestamp: UInt32 = 0

    init(capacity: Int) { seen = [UInt64](repeating: 0, count: capacity / 64 + 1) }

    /// Records sequence number `sequence`; returns false for a duplicate.
    mutating func record(sequence: UInt16) -> Bool {
        guard let first = firstSequence else { return false }
        let offset = Int(sequence &- first)
        guard offset < seen.count * 64 else { beyondRange += 1; return true }
        let word = offset >> 6, bit = UInt64(1) << UInt64(offset & 63)
        if seen[word] & bit != 0 { duplicated += 1; return false }
        seen[word] |= bit
        received += 1
        if offset < highestOffset { outOfOrder += 1 } else { highestOffset = offset }
        return true
    }
}
