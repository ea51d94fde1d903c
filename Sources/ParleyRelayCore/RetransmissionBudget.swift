/// How many bytes of retransmissions (answers to its NACKs) a member may be sent: a token bucket in bytes, refilled
/// at a share of the media forwarded to it and holding at most a small burst, and never more in all than the media
/// it was forwarded. So a NACK — or a compound of ninety — pulls at most the burst at once, and a member that keeps
/// asking gets at most that share of its own stream on top of it, however it asks. Pure; one per member.
struct RetransmissionBudget {
    /// Bytes that may be resent now (a full bucket from the first `refill` on).
    private(set) var tokens: Int64 = 0
    /// Bytes forwarded to the member and not yet matched by resent bytes (the "never more than it was sent" cap).
    private(set) var owed: Int64 = 0
    /// The member's forwarded byte count at the last `refill`.
    private var forwardedSeen: UInt64 = 0
    private var primed = false

    /// An empty budget; the first `refill` fills the bucket (what is owed still caps it).
    init() {}

    /// Credits what was forwarded since the last call: `forwarded` is the member's running total of forwarded media
    /// bytes; `percent` of the new bytes refill the bucket, up to `burst`.
    mutating func refill(forwarded: UInt64, percent: Int, burst: Int) {
        if !primed {
            primed = true
            tokens = Int64(burst)
        }
        let new = Int64(clamping: forwarded &- forwardedSeen)
        forwardedSeen = forwarded
        owed = owed &+ new
        tokens = min(Int64(burst), tokens &+ new * Int64(percent) / 100)
    }

    /// Takes `bytes` for one retransmission; false (nothing taken) when the bucket or what is owed falls short.
    mutating func spend(_ bytes: Int) -> Bool {
        let n = Int64(bytes)
        guard tokens >= n, owed >= n else { return false }
        tokens -= n
        owed -= n
        return true
    }
}
