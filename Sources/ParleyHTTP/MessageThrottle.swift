/// Lets each distinct message through at most once per `interval`, saying how many were held back since: libmicrohttpd
/// writes a line for every connection it refuses, and a client opening connections in a loop must not flood the log.
/// Pure: `now` is passed in.
struct MessageThrottle {
    /// Nanoseconds between two lines of the same text.
    let interval: Int64
    /// Distinct texts remembered at most (older ones are forgotten first once past their interval).
    static let capacity = 64
    private var last: [String: (at: Int64, held: Int)] = [:]

    init(interval: Int64) { self.interval = interval }

    /// The line to write for `message` now, or nil to hold it back.
    mutating func admit(_ message: String, now: Int64) -> String? {
        if let seen = last[message], now - seen.at < interval {
            last[message] = (seen.at, seen.held + 1)
            return nil
        }
        let held = last[message]?.held ?? 0
        if last[message] == nil, last.count >= Self.capacity {
            last = last.filter { now - $0.value.at < interval }
            if last.count >= Self.capacity { return nil }
        }
        last[message] = (now, 0)
        return held == 0 ? message : "\(message) (and \(held) more like it)"
    }
}
