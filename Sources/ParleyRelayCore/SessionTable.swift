import ParleyWire

/// Every session of one core by address and by connection id: room members (plain-RTP endpoints included, by their
/// source address) and presence sessions, in one table, so a datagram finds its session with one lookup whatever
/// kind it is; and the members by SSRC.
final class SessionTable {
    /// A session and what it belongs to.
    enum Entry {
        /// A room member (or a plain-RTP endpoint).
        case member(Member)
        /// An online identity.
        case presence(Presence)

        /// The signalling session.
        var session: RelaySession {
            switch self {
            case .member(let m): m.session
            case .presence(let p): p.session!  // only clients' presence sessions are in the table (pages have no address)
            }
        }

        /// Whether this entry and `other` are the same session.
        func isSame(as other: Entry) -> Bool { session === other.session }

        /// How the log names it.
        var label: String {
            switch self {
            case .member(let m): "\(m.identity) in \(m.room.name)"
            case .presence(let p): "\(p.identity) (presence)"
            }
        }
    }

    /// Sessions by the address their datagrams come from (every change goes through `add`, `link`, `unlink` or
    /// `removeAll`, which keep `recentSenders` in step).
    private(set) var byAddress: [PeerAddress: Entry] = [:]
    /// The members found at an address lately, for the media path (`RecentSenders`).
    private let recentSenders = RecentSenders()
    /// Sessions by connection id.
    private(set) var byConnection: [UInt32: Entry] = [:]
    /// Members by SSRC (RTCP and NACKs name streams by SSRC).
    var bySSRC: [UInt32: Member] = [:]
    /// WebRTC members by the relay's ICE username fragment (the first half of a STUN check's USERNAME).
    var byICEUfrag: [String: Member] = [:]
    /// Members among `byConnection`.
    private(set) var memberCount = 0

    /// Sessions in all.
    var count: Int { byConnection.count }
    /// Presence sessions among `byConnection`.
    var presenceCount: Int { byConnection.count - memberCount }

    /// The member whose datagrams come from `address`, if that is a member (the media path's one lookup).
    @inline(__always)
    func member(at address: PeerAddress) -> Member? {
        if let m = recentSenders.member(at: address) { return m }
        guard case .member(let m)? = byAddress[address] else { return nil }
        recentSenders.remember(m, at: address)
        return m
    }

    /// Whether `entry` is still in the table (false once removed while its datagram was being handled).
    func holds(_ entry: Entry) -> Bool { byConnection[entry.session.connectionID]?.isSame(as: entry) == true }

    /// A fresh connection id: never 0, never one in use.
    func newConnectionID(_ random: RelayRandom) -> UInt32 {
        var id: UInt32
        repeat { id = random.uint32() } while id == 0 || byConnection[id] != nil
        return id
    }

    /// Adds a session, reachable at `address` (nil: by connection id only, as a receive-only RTP endpoint).
    func add(_ entry: Entry, at address: PeerAddress?) {
        if let address { link(address, to: entry) }
        byConnection[entry.session.connectionID] = entry
        if case .member = entry { memberCount += 1 }
    }

    /// Forgets a session and `address` if that still leads to it.
    func remove(_ entry: Entry, at address: PeerAddress?) {
        if let address { unlink(address, from: entry) }
        if byConnection.removeValue(forKey: entry.session.connectionID) != nil, case .member = entry { memberCount -= 1 }
    }

    /// Points `address` at `entry`.
    func link(_ address: PeerAddress, to entry: Entry) {
        recentSenders.forget(address)
        byAddress[address] = entry
    }

    /// Forgets `address` if it leads to `entry`.
    func unlink(_ address: PeerAddress, from entry: Entry) {
        guard byAddress[address]?.isSame(as: entry) == true else { return }
        recentSenders.forget(address)
        byAddress[address] = nil
    }

    /// Forgets every session.
    func removeAll() {
        bySSRC.removeAll()
        byICEUfrag.removeAll()
        byAddress.removeAll()
        recentSenders.forgetAll()
        byConnection.removeAll()
        memberCount = 0
    }
}
