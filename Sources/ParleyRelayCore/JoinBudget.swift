import ParleyWire

/// The join budget of one worker: the joins and registers it starts a handshake or an admission for, shared fairly
/// among their sources. Each source has a share: its socket address (IP and port) a twentieth of the worker's rate,
/// its network (an IPv4 /24, an IPv6 /64) a quarter. Within its shares a join may take the worker's budget down to
/// nothing; beyond them only down to a reserve (a quarter of the burst), which is kept for everyone else:
///
///     join from S ─▶ S's bucket ─▶ S's network's bucket ─▶ within shares: the worker's bucket, to 0
///                        └──────── empty ──────┴──────────▶ beyond them:   the worker's bucket, to its reserve
///
/// So an idle relay admits a burst from one place as fast as before (a load test, a class joining at once), while a
/// flood from one place spends its own share and the tokens above the reserve, never the reserve the others draw on.
/// Sources are addresses that answered a cookie (their requests carry one), so the tables grow only with real
/// addresses; each holds at most `maxSources` entries, and `prune` forgets those whose buckets have refilled. Pure:
/// time comes in as `now`.
struct JoinBudget {
    private var total: TokenBucket
    private let reserve: Double
    private var bySocket: [PeerAddress: TokenBucket] = [:]
    private var byNetwork: [PeerAddress: TokenBucket] = [:]
    private let socketRate: Double, networkRate: Double
    /// When `prune` last ran.
    private var prunedAt = Instant.origin

    /// At most this many socket addresses (and networks) are tracked; beyond it, new sources share one bucket.
    static let maxSources = 16_384
    /// The key every source beyond `maxSources` shares.
    private static let overflow = PeerAddress(ipv4: 0, port: 0)

    /// A budget of `perSecond` joins, bursts of twice that; a socket address's share is a twentieth, a network's a
    /// quarter (each at least 5 a second).
    init(perSecond: Double) {
        total = TokenBucket(ratePerSecond: perSecond, burst: perSecond * 2)
        reserve = perSecond / 2
        socketRate = max(5, perSecond / 20)
        networkRate = max(5, perSecond / 4)
    }

    /// The network `address` belongs to for fairness: its IPv4 /24 or its IPv6 /64 (port dropped).
    static func network(of address: PeerAddress) -> PeerAddress {
        address.isIPv4 ? PeerAddress(ipv4: address.ipv4Value & 0xFFFF_FF00, port: 0) : PeerAddress(high: address.high, low: 0, port: 0)
    }

    /// Takes one join for `source`. False (nothing to do for it) when the budget it may draw on is empty.
    mutating func take(from source: PeerAddress, now: Instant) -> Bool {
        if now - prunedAt >= .seconds(10) { prune(now: now) }
        let withinShares = Self.take(&bySocket, source, rate: socketRate, now: now)
            && Self.take(&byNetwork, Self.network(of: source), rate: networkRate, now: now)
        return total.take(now: now, keeping: withinShares ? 0 : reserve)
    }

    private static func take(_ table: inout [PeerAddress: TokenBucket], _ key: PeerAddress, rate: Double, now: Instant) -> Bool {
        let key = table[key] != nil || table.count < maxSources ? key : overflow
        return table[key, default: TokenBucket(ratePerSecond: rate, burst: rate * 2)].take(now: now)
    }

    /// Forgets sources whose buckets would be full again by `now` (they took nothing for a while).
    mutating func prune(now: Instant) {
        prunedAt = now
        bySocket = bySocket.filter { !$0.value.isFull(at: now) }
        byNetwork = byNetwork.filter { !$0.value.isFull(at: now) }
    }

    /// Sources tracked (socket addresses, networks): for tests.
    var tracked: (sockets: Int, networks: Int) { (bySocket.count, byNetwork.count) }
}
