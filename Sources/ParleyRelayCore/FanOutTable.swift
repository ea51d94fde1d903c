import ParleyCrypto
import ParleyWire

/// The listeners of one room as the per-packet fan-out reads them: a contiguous array of plain values
/// (where to send, who it is, what it was sent), so forwarding one packet to N listeners touches no class object,
/// takes no reference count and runs no exclusivity check per listener.
///
/// ```
/// entries ─▶ ┌──────────────┬────────┬──────┬──────┬────────────┬──────────┐
///            │ address (24) │ member │ kind │ srtp │ packetsOut │ bytesOut │  one listener (kind: endpoint, cleartext;
///                                                                             an endpoint's Member for its stream)
///            ├──────────────┼────────┼──────┼──────┼────────────┼──────────┤
///            │ …            │        │      │      │            │          │  `count` entries
/// members ─▶ [Member] in the same order (only `rebuild` and `foldCounters` read it)
/// ```
///
/// The table is derived from `Room.members` and each member's address, destination and subscribe grant. Whatever
/// changes those calls `invalidate()` (`Room.members` and `Member.address`/`hasDestination` do it in `didSet`);
/// the next forwarded packet rebuilds it (`refresh`). Per-listener out counters accumulate in the entries and are
/// folded into `Member.stats` when the table goes stale and whenever the stats are read (`foldCounters`), so the API
/// sees exact figures. A stale table is empty: it never keeps a member that left (members hold their room, and the
/// room holds this table). One worker thread owns it.
///
/// **Shares.** With several workers, a room of at least `spreadThreshold` listeners gives every other worker a share
/// of them to send to (`shares[k]`: addresses only, an immutable list): the owner passes each forwarded packet once
/// per share (`RelayCore.spread`) and that worker sends it, on the owner's socket. Only listeners that take the room's
/// one protected packet as it is join a share: encrypted members that cannot publish (a speaker would hear itself
/// there, an endpoint needs its own stream). The kernel's send, most of a packet's cost, is then spread over the cores.
final class FanOutTable {
    /// One listener.
    struct Entry {
        /// Where its media goes.
        var address: PeerAddress
        /// Its member id (the speaker skips its own entry).
        var memberID: UInt32
        /// A plain-RTP endpoint hears only the first forwarded speaker other than itself.
        var isRTPEndpoint: Bool
        /// An SRTP endpoint's outbound session (unretained: the member in `members` holds it), nil for cleartext.
        var srtp: Unmanaged<EndpointCipher>?
        /// An RTP endpoint's member (unretained, held by `members`): its one rewritten stream lives there.
        var endpoint: Unmanaged<Member>?
        /// It is sent packets as they arrived in the clear, not protected with the room's downstream key (a
        /// cleartext member, debugging only; an endpoint's packets are protected with `srtp` when it has one).
        var cleartext: Bool
        /// Forwarded to it since the last `foldCounters`.
        var packetsOut: UInt64
        /// Bytes of those packets.
        var bytesOut: UInt64
    }

    /// Notes this table and the start of its entries (`HotLines`): a big room's further entries are read in order,
    /// which the CPU's own prefetcher follows, and would take every line a wakeup may note.
    func noteLines(_ hot: HotLines) {
        hot.note(object: self, bytes: 128)
        hot.note(UnsafeRawPointer(entries), bytes: min(count, 16) * MemoryLayout<Entry>.stride)
    }

    /// The entries (valid until the next `refresh`).
    private(set) var entries: UnsafeMutablePointer<Entry>
    /// Entries in use.
    private(set) var count = 0
    private var capacity: Int
    /// The member behind each entry, in order.
    private var members: [Member] = []
    /// Every listener sent the room's one packet (all but endpoints, here and in the shares) took RFC 2198 RED at its
    /// join (`MemberTraits.redundancy`): a RED packet may go to them as it came (`RelayCore.fanOut`).
    private(set) var everyMemberTakesRedundancy = true
    /// Hybrid rooms: only members who may publish are sent forwarded packets (the others hear the mix).
    var publishersOnly = false { didSet { invalidate() } }
    /// True when `Room.members` or a listener's address changed since the last rebuild.
    private(set) var isStale = true
    /// Rebuilds so far (for tests).
    private(set) var rebuilds = 0
    /// Members the table holds references to (for `RelayCore.liveCounts`).
    var heldMembers: Int { members.count + shareMembers.reduce(0) { $0 + $1.count } }
    /// Per worker, the addresses of the listeners it sends to (empty for this worker and without spreading).
    private(set) var shares: [[PeerAddress]] = []
    /// The members behind `shares`, and what was passed to each share since the last fold (the same for all its members).
    private var shareMembers: [[Member]] = []
    private var shareCounters: [(packets: UInt64, bytes: UInt64)] = []
    /// Whether any other worker has a share.
    private(set) var hasShares = false
    /// This worker, the relay's workers, and the listeners a room needs before it shares them (0: never).
    private let workerIndex: Int, workerCount: Int, spreadThreshold: Int

    /// An empty table; `workerCount` > 1 and `spreadThreshold` > 0 let big rooms share their listeners.
    init(capacity: Int = 16, workerIndex: Int = 0, workerCount: Int = 1, spreadThreshold: Int = 0) {
        self.workerIndex = workerIndex
        self.workerCount = workerCount
        self.spreadThreshold = spreadThreshold
        self.capacity = max(1, capacity)
        entries = .allocate(capacity: self.capacity)
    }

    deinit {
        entries.deinitialize(count: count)
        entries.deallocate()
    }

    /// Marks the table out of date; the next `refresh` rebuilds it. The members' counters are folded and the table
    /// lets go of them now: a stale table references no member. (It used to keep them until the next rebuild, which
    /// only a forwarded packet triggers: the members present when a room fell silent or emptied stayed referenced, each
    /// holding the room, whose table held them — a cycle that outlived the room and leaked ~60 KB per member.)
    @inline(__always)
    func invalidate() {
        if !isStale { release() }
    }

    /// Rebuilds the table from `roomMembers` when it is stale (allocation-free unless the room outgrew it).
    @inline(__always)
    func refresh(from roomMembers: [Member]) {
        if isStale { rebuild(from: roomMembers) }
    }

    /// Adds each entry's counters to its member's stats and zeroes them.
    func foldCounters() {
        for i in 0..<count where entries[i].packetsOut != 0 {
            members[i].stats.packetsOut &+= entries[i].packetsOut
            members[i].stats.bytesOut &+= entries[i].bytesOut
            entries[i].packetsOut = 0
            entries[i].bytesOut = 0
        }
        for k in shareCounters.indices where shareCounters[k].packets != 0 {
            for m in shareMembers[k] {
                m.stats.packetsOut &+= shareCounters[k].packets
                m.stats.bytesOut &+= shareCounters[k].bytes
            }
            shareCounters[k] = (0, 0)
        }
    }

    /// Counts one packet of `bytes` passed to share `k` (each of its listeners is sent it).
    @inline(__always)
    func countShare(_ k: Int, bytes: Int) {
        shareCounters[k].packets &+= 1
        shareCounters[k].bytes &+= UInt64(bytes)
    }

    /// Folds the counters into the members, then empties the table (keeping its storage) and marks it stale.
    private func release() {
        foldCounters()
        entries.deinitialize(count: count)
        count = 0
        members.removeAll(keepingCapacity: true)
        shares = []
        shareMembers = []
        shareCounters = []
        hasShares = false
        isStale = true
    }

    private func rebuild(from roomMembers: [Member]) {
        release()
        var listeners = roomMembers.filter { $0.canSubscribe && $0.hasDestination && ($0.canPublish || !publishersOnly) }
        everyMemberTakesRedundancy = listeners.allSatisfy { $0.isRTPEndpoint || $0.traits.redundancy }
        if workerCount > 1, spreadThreshold > 0, listeners.count >= spreadThreshold {
            // Every `workerCount`-th listener that takes the room's packet as it is goes to each other worker.
            shares = Array(repeating: [], count: workerCount)
            shareMembers = Array(repeating: [], count: workerCount)
            shareCounters = Array(repeating: (0, 0), count: workerCount)
            var local: [Member] = []
            var j = 0
            for m in listeners {
                guard !m.isRTPEndpoint, !m.canPublish, !m.receivesCleartext else { local.append(m); continue }
                let k = j % workerCount
                j += 1
                if k == workerIndex {
                    local.append(m)
                } else {
                    shares[k].append(m.address)
                    shareMembers[k].append(m)
                }
            }
            hasShares = shares.contains { !$0.isEmpty }
            listeners = local
        }
        let needed = listeners.count
        if needed > capacity {
            entries.deallocate()
            capacity = max(needed, capacity * 2)
            entries = .allocate(capacity: capacity)
        }
        for m in listeners {
            (entries + count).initialize(to: Entry(address: m.address, memberID: m.id, isRTPEndpoint: m.isRTPEndpoint,
                                                   srtp: m.endpointSRTP.map { .passUnretained($0.toEndpoint) },
                                                   endpoint: m.isRTPEndpoint ? .passUnretained(m) : nil,
                                                   cleartext: m.receivesCleartext, packetsOut: 0, bytesOut: 0))
            members.append(m)
            count += 1
        }
        isStale = false
        rebuilds &+= 1
    }
}
