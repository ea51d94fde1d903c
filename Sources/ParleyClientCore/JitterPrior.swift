import ParleyWire

/// Where a new stream's jitter buffer starts, from the round trips of the pings sent at join (`SignallingSession
/// .probePath`): what the network has shown before any media has.
///
/// A buffer's estimate starts empty, so on a lossy, jittery path it learns in the first seconds, while the talker is
/// already speaking, that it needs room for late packets and for NACK repairs (a round trip and a frame); growing
/// there costs time-stretches and frames rebuilt from FEC. Through the `moderate` impairment profile that start-up is
/// most of what separates an adaptive buffer from one held at 100 ms. The spread of the round trips (with the largest
/// left out, so one delayed ping does not decide) says which path this is. Below a frame (a clean path: about 0; the
/// `mild` profile, by the proxy's delay model: 5–20 ms) the buffers start at that spread, so on a clean path the
/// first talkspurt plays at the steady-state delay; from a frame on (`moderate`: 15–60 ms) they start with room for
/// a repair as well. The prior
/// holds while a buffer's estimate is young and then fades (`JitterBuffer.startupPrior`).
public enum JitterPrior {
    /// Pings sent at join (20 ms apart: 320 ms).
    public static let probes = 16
    /// Round trips needed before a prior is given.
    public static let minimumSamples = 4
    /// The spread from which the path is taken as one whose losses will need repairs (a frame).
    public static let repairThreshold: Interval = .milliseconds(20)
    /// The largest prior: a path whose pings vary more than this is not one to talk over, and the estimate follows
    /// it within seconds anyway.
    public static let maximum: Interval = .milliseconds(250)
    /// Round trips outside `0…maximumRoundTrip` are not the path's (a relay's clock does not enter: a pong echoes
    /// our own timestamp).
    public static let maximumRoundTrip: Interval = .seconds(10)

    /// The spread of these round trips: the second largest less the smallest (nil with fewer than `minimumSamples`
    /// between 0 and `maximumRoundTrip`), and the smallest.
    public static func spread(roundTrips: [Interval]) -> (spread: Interval, fastest: Interval)? {
        let usable = roundTrips.filter { $0 >= .zero && $0 <= maximumRoundTrip }.sorted()
        guard usable.count >= minimumSamples else { return nil }
        return (usable[usable.count - 2] - usable[0], usable[0])
    }

    /// The prior for these round trips: their `spread`, plus room for a repair when the spread reaches
    /// `repairThreshold` (at most `maximum`); nil without enough round trips. The repair is a NACK's (the fastest
    /// round trip and a frame) unless the streams carry RFC 2198 redundancy (`redundancy` frames back, the relay
    /// agreed at join): then a lost frame comes with the packets `redundancy` frames later, and the room left is
    /// those frames, with no round trip.
    public static func delay(roundTrips: [Interval], redundancy: Int = 0) -> Interval? {
        guard let (spread, fastest) = spread(roundTrips: roundTrips) else { return nil }
        guard spread >= repairThreshold else { return min(spread, maximum) }
        let repair: Interval = redundancy > 0 ? .milliseconds(20 * Int64(redundancy)) : fastest + .milliseconds(20)
        return min(spread + repair, maximum)
    }
}
