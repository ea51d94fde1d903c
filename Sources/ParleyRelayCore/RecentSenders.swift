import ParleyWire

/// The media path's lookup in front of `SessionTable.byAddress`: a direct-mapped table of the members whose datagrams
/// were looked up last, each slot found by a cheap mix of the address and checked against the whole address.
///
/// A hit costs a multiply, a compare and two cache lines instead of the dictionary's keyed hash (SipHash over the
/// address) and its buckets: a worker's speakers send every 20 ms, so nearly every media packet hits. Only members
/// the dictionary found are written here, so a spoofed address can at most evict a slot (the next lookup of the
/// member it held goes to the dictionary again); it can never be answered for. The table holds no member the
/// dictionary does not: `SessionTable` forgets an address here whenever its entry there changes. Owned by one core.
final class RecentSenders {
    /// Slots (a power of two).
    static let slots = 1024
    private let addresses: UnsafeMutablePointer<PeerAddress>
    private let members: UnsafeMutablePointer<Member?>

    init() {
        addresses = .allocate(capacity: Self.slots)
        addresses.initialize(repeating: PeerAddress(high: 0, low: 0, port: 0), count: Self.slots)
        members = .allocate(capacity: Self.slots)
        members.initialize(repeating: nil, count: Self.slots)
    }

    deinit {
        members.deinitialize(count: Self.slots)
        members.deallocate()
        addresses.deallocate()
    }

    /// The slot `address` would take: the top bits of the address's words mixed by multiplication (not a defence
    /// against chosen collisions, which cost a hostile sender nothing here but a miss).
    @inline(__always)
    static func slot(of address: PeerAddress) -> Int {
        let mixed = (address.low ^ address.high &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(address.port) << 40)
            &* 0xD6E8_FEB8_6659_FD93
        return Int(truncatingIfNeeded: mixed >> 54)  // 10 bits: `slots`
    }

    /// The member remembered at `address`, if its slot holds that address.
    @inline(__always)
    func member(at address: PeerAddress) -> Member? {
        let i = Self.slot(of: address)
        return addresses[i] == address ? members[i] : nil
    }

    /// Remembers that `address` leads to `member` (found in the dictionary).
    @inline(__always)
    func remember(_ member: Member, at address: PeerAddress) {
        let i = Self.slot(of: address)
        addresses[i] = address
        members[i] = member
    }

    /// Forgets `address` (its entry in the dictionary changed or went).
    func forget(_ address: PeerAddress) {
        let i = Self.slot(of: address)
        if addresses[i] == address { members[i] = nil }
    }

    /// Forgets every address.
    func forgetAll() {
        for i in 0..<Self.slots { members[i] = nil }
    }
}
