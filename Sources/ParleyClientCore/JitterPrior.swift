import ParleyWire

/// Where a new stream's jitter buffer starts, from the round trips of the pings sent at join (`SignallingSession
/// .probePath`): what the network has shown before any media has.
///
/// A buffer's estimate starts empty, so on a lossy, jittery path it learns in the first seconds, while the talker is
/// already speaking, that it needs room for late packets and for NACK repairs (a round trip and a frame); growing
/// there costs time-stretches and frames rebuilt from FEC. Through the `moderate` impairment profile that start-up is
/// most of what separates an adaptive buffer from one held at 100 ms. A path whose pings vary by less than a frame
/// starts with their spread alone (on a clean path about 0, so the first talkspurt plays at the steady-state delay); a
/// path whose pings vary by more starts with room for a repair as well. The prior holds while the buffer's estimate
/// is young and then fades (`JitterBuffer.startupPrior`).
public enum JitterPrior {
    /// Pings sent at join.
    public static let probes = 8
    /// Round trips needed before a prior is given.
    public static let minimumSamples = 4
    /// The spread from which the path is taken as a real network (queues, radio), whose losses will need repairs:
    /// half a frame. Loopback and a quiet LAN vary by well under a millisecond.
    public static let repairThreshold: Interval = .milliseconds(10)
    /// The largest prior: a path whose pings vary more than this is not one to talk over, and the estimate follows
    /// it within seconds anyway.
    public static let maximum: Interval = .milliseconds(250)
    /// Round trips outside `0…maximumRoundTrip` are not the path's (a relay's clock does not enter: a pong echoes
    /// our own timestamp).
    public static let maximumRoundTrip: Interval = .seconds(10)

    /// The prior for these round trips: their spread (largest − smallest), plus the smallest round trip and a frame
    /// when the spread reaches `repairThreshold`, at most `maximum`; nil with fewer than `minimumSamples` usable.
    public static func delay(roundTrips: [Interval]) -> Interval? {
        let usable = roundTrips.filter { $0 >= .zero && $0 <= maximumRoundTrip }
        guard usable.count >= minimumSamples, let low = usable.min(), let high = usable.max() else { return nil }
        let spread = high - low
        return min(spread >= repairThreshold ? spread + low + .milliseconds(20) : spread, maximum)
    }
}
