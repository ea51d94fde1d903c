import ParleyWire

/// The SIP devices registered for identities (REGISTER with the credentials the backend minted): each binding is a
/// contact URI, the address its REGISTER came from (where the gateway sends its INVITEs: a device behind a NAT is
/// reached at its mapping, whatever its Contact says) and an expiry. Each binding is one device of its identity
/// online for calls (`stream`: its presence in the relay). Bounded: `maxPerIdentity` per identity (a new contact
/// replaces the oldest), `capacity` in all (a new identity is refused when full). Pure: the caller gives the time
/// (monotonic nanoseconds).
public struct SIPRegistrations: Sendable {
    /// One registered device.
    public struct Binding: Equatable, Sendable {
        /// The identity it registered as.
        public var identity: String
        /// Its Contact URI (`sip:USER@HOST:PORT…`).
        public var contact: String
        /// Where its REGISTER came from.
        public var source: PeerAddress
        /// When it lapses (monotonic nanoseconds).
        public var expiresAt: Int64
        /// Its presence stream in the relay.
        public var stream: UInt64
    }

    /// Devices per identity at most.
    public let maxPerIdentity: Int
    /// Devices in all at most.
    public let capacity: Int
    /// The shortest and longest registration granted (seconds).
    public static let expiryRange: ClosedRange<Int64> = 60...3_600
    private var byIdentity: [String: [Binding]] = [:]
    private var count = 0

    /// A table of at most `capacity` devices, `maxPerIdentity` per identity.
    public init(maxPerIdentity: Int = 4, capacity: Int = 10_000) {
        self.maxPerIdentity = max(1, maxPerIdentity)
        self.capacity = max(1, capacity)
    }

    /// Devices registered now.
    public var devices: Int { count }

    /// What a REGISTER did.
    public enum Outcome: Equatable, Sendable {
        /// A new device: open its presence. `replaced`: the identity's oldest device it pushed out (close that one's).
        case added(Binding, replaced: Binding?)
        /// A known contact registered again: its new expiry.
        case refreshed(Binding)
        /// The table is full.
        case full
    }

    /// `identity` registers `contact` from `source` for `seconds` (clamped to `expiryRange`); `stream` is the
    /// presence stream a new binding gets.
    public mutating func register(identity: String, contact: String, source: PeerAddress, seconds: Int64, now: Int64,
                                  stream: UInt64) -> Outcome {
        let expiresAt = now + Self.granted(seconds) * 1_000_000_000
        var list = byIdentity[identity] ?? []
        if let i = list.firstIndex(where: { $0.contact == contact }) {
            list[i].expiresAt = expiresAt
            list[i].source = source
            byIdentity[identity] = list
            return .refreshed(list[i])
        }
        var replaced: Binding?
        if list.count >= maxPerIdentity {
            replaced = list.removeFirst()
            count -= 1
        } else if count >= capacity {
            return .full
        }
        let binding = Binding(identity: identity, contact: contact, source: source, expiresAt: expiresAt,
                              stream: stream)
        list.append(binding)
        count += 1
        byIdentity[identity] = list
        return .added(binding, replaced: replaced)
    }

    /// The granted lifetime in seconds for a request of `seconds`.
    public static func granted(_ seconds: Int64) -> Int64 {
        min(max(seconds, expiryRange.lowerBound), expiryRange.upperBound)
    }

    /// Removes `identity`'s binding of `contact` (`nil`: every binding of it, `Contact: *`); what was removed.
    public mutating func remove(identity: String, contact: String?) -> [Binding] {
        guard let list = byIdentity[identity] else { return [] }
        let gone = list.filter { contact == nil || $0.contact == contact }
        let kept = list.filter { !(contact == nil || $0.contact == contact) }
        byIdentity[identity] = kept.isEmpty ? nil : kept
        count -= gone.count
        return gone
    }

    /// Removes and returns every binding lapsed at `now`.
    public mutating func expire(now: Int64) -> [Binding] {
        var gone: [Binding] = []
        for (identity, list) in byIdentity where list.contains(where: { $0.expiresAt <= now }) {
            gone += list.filter { $0.expiresAt <= now }
            let kept = list.filter { $0.expiresAt > now }
            byIdentity[identity] = kept.isEmpty ? nil : kept
        }
        count -= gone.count
        return gone.sorted { $0.stream < $1.stream }
    }

    /// The binding whose presence is `stream`.
    public func binding(stream: UInt64) -> Binding? {
        for list in byIdentity.values { if let b = list.first(where: { $0.stream == stream }) { return b } }
        return nil
    }

    /// `identity`'s bindings, oldest first.
    public func bindings(of identity: String) -> [Binding] { byIdentity[identity] ?? [] }

    /// Whether a device registered from `host` (any port): its INVITEs are challenged for credentials rather than
    /// refused as a stranger's.
    public func hasDevice(at host: PeerAddress) -> Bool {
        byIdentity.values.contains { $0.contains { $0.source.high == host.high && $0.source.low == host.low } }
    }

    /// The earliest expiry, if any device is registered.
    public var nextExpiry: Int64? { byIdentity.values.flatMap { $0 }.map(\.expiresAt).min() }
}
