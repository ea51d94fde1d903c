/// When to send the next regular RTCP report: RFC 3550 §6.3.1 and the `rtcp_interval` of §A.7, pure, with the
/// randomness passed in.
///
/// ```
/// rtcp bandwidth   = 5 % of the session bandwidth
/// senders ≤ 25 %   → senders share 25 % of it (divided among the senders), receivers 75 % (among the receivers)
/// Td               = max(minimum, average RTCP size × n / share)        (minimum halved for the first report)
/// T                = Td × uniform(0.5, 1.5) / (e − 3/2)                  (the compensation for timer reconsideration)
/// ```
///
/// RFC 3550's minimum is 5 s; audio in Parley takes 1 s (`minimum`): the relay's and the clients' in-band FEC follow
/// the fraction lost in the other side's receiver reports, and a loss burst should reach the encoder within about a
/// second, not five. §6.2 allows a smaller minimum; the report of one participant is ~100 bytes, well inside 5 % of
/// a 56 kbit/s stream at that rate.
public struct RTCPInterval: Equatable, Sendable {
    /// The e − 3/2 divisor of §A.7, so that timer reconsideration's early returns average out.
    public static let compensation = 2.718_281_828_459_045 - 1.5
    /// Share of the RTCP bandwidth for senders when they are at most a quarter of the members.
    public static let senderFraction = 0.25

    /// Session bandwidth in bytes per second (RTP payload, headers and lower layers, as the application sees it).
    public var sessionBandwidth: Double
    /// Fraction of the session bandwidth for RTCP (5 %).
    public var rtcpFraction = 0.05
    /// The deterministic interval's floor (RFC 3550's Tmin).
    public var minimum: Interval

    /// A calculator for a session of `sessionBandwidth` bytes/s with a `minimum` floor.
    public init(sessionBandwidth: Double, minimum: Interval) {
        self.sessionBandwidth = sessionBandwidth
        self.minimum = minimum
    }

    /// The deterministic interval Td for a participant of a session with `members` members of which `senders` sent
    /// lately (`weSent`: this one among them), whose RTCP packets average `averageSize` bytes (with lower layers).
    public func deterministic(members: Int, senders: Int, weSent: Bool, averageSize: Double, initial: Bool = false) -> Interval {
        var rtcpBandwidth = sessionBandwidth * rtcpFraction
        var n = Double(max(1, members))
        let senders = max(0, min(senders, members))
        if Double(senders) <= Double(members) * Self.senderFraction {
            if weSent {
                rtcpBandwidth *= Self.senderFraction
                n = Double(max(1, senders))
            } else {
                rtcpBandwidth *= 1 - Self.senderFraction
                n = Double(max(1, members - senders))
            }
        }
        let floor = initial ? minimum / 2 : minimum
        guard rtcpBandwidth > 0 else { return floor }
        let seconds = averageSize * n / rtcpBandwidth
        return max(floor, Interval(seconds: min(seconds, 86_400)))
    }

    /// The randomized interval T to wait before the next report: `deterministic` × uniform(0.5, 1.5) / (e − 3/2),
    /// with the uniform value drawn from `random`.
    public func next(members: Int, senders: Int, weSent: Bool, averageSize: Double, initial: Bool = false,
                     using random: inout some RandomNumberGenerator) -> Interval {
        let td = deterministic(members: members, senders: senders, weSent: weSent, averageSize: averageSize, initial: initial)
        return Self.randomized(td, unit: Double.random(in: 0..<1, using: &random))
    }

    /// `td` × (`unit` + 0.5) / (e − 3/2), for `unit` in [0, 1).
    public static func randomized(_ td: Interval, unit: Double) -> Interval {
        Interval(seconds: td.seconds * (unit + 0.5) / compensation)
    }

    /// The running average RTCP packet size of §6.3.3: 1/16 of the new packet, 15/16 of the old average.
    public static func averageSize(_ average: Double, adding size: Int) -> Double {
        average + (Double(size) - average) / 16
    }
}
