import ParleyWire

/// An address block, `a.b.c.d/n` or `v6/n` (a bare address is one host), matched on `PeerAddress`'s 128-bit form
/// (IPv4 as IPv4-mapped IPv6, so an IPv4 block's prefix counts from bit 96).
public struct AddressBlock: Equatable, Sendable, CustomStringConvertible {
    /// The block's first address (port 0).
    public let base: PeerAddress
    /// Leading bits that must match, 0...128 on the mapped form.
    public let bits: Int
    /// The block as given (`a.b.c.d/32` for a bare address).
    public let description: String

    /// Parses `a.b.c.d/n`, `v6/n` or a bare address; nil when malformed or when host bits are set.
    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let first = parts.first, !first.isEmpty else { return nil }
        let host = first.contains(":") ? "[\(first)]:1" : "\(first):1"
        guard let address = PeerAddress(parsing: host) else { return nil }
        let familyBits = address.isIPv4 ? 32 : 128
        var bits = familyBits
        if parts.count == 2 {
            guard let n = Int(parts[1]), n >= 0, n <= familyBits else { return nil }
            bits = n
        }
        self.bits = bits + (address.isIPv4 ? 96 : 0)
        self.base = address.withPort(0)
        self.description = parts.count == 2 ? text : "\(first)/\(familyBits)"
        // Host bits set (10.0.0.1/8) are refused as a likely typo rather than masked.
        let low = self.bits - 64
        let lowMask = low <= 0 ? 0 : low >= 64 ? UInt64.max : ~(UInt64.max >> UInt64(low))
        let highMask = self.bits >= 64 ? UInt64.max : self.bits <= 0 ? 0 : ~(UInt64.max >> UInt64(self.bits))
        guard address.high & ~highMask == 0, address.low & ~lowMask == 0 else { return nil }
    }

    /// True when `address` (any port) lies in the block.
    public func contains(_ address: PeerAddress) -> Bool {
        func masked(_ word: UInt64, keep: Int) -> UInt64 {
            keep <= 0 ? 0 : keep >= 64 ? word : word & ~(UInt64.max >> UInt64(keep))
        }
        return masked(address.high, keep: bits) == masked(base.high, keep: bits)
            && masked(address.low, keep: bits - 64) == masked(base.low, keep: bits - 64)
    }
}

/// A SIP trunk (`--sip-trunk NAME=CIDR[,outbound=HOST:PORT][,user=U,password=P]`): calls from its address blocks are
/// let in without a digest; calls out go to its outbound proxy, authenticated as `user` when it asks. Calls from
/// outside every trunk are refused with 403 (no open relay, no toll fraud).
public struct SIPTrunk: Equatable, Sendable {
    /// The trunk's name, for logs.
    public var name: String
    /// The address blocks calls from it come from.
    public var blocks: [AddressBlock]
    /// The proxy calls out through it go to.
    public var outbound: PeerAddress?
    /// The user calls out authenticate as (with `password`).
    public var user: String?
    /// Never logged, never in an error.
    public var password: String?

    /// A trunk from its parts.
    public init(name: String, blocks: [AddressBlock], outbound: PeerAddress? = nil, user: String? = nil,
                password: String? = nil) {
        self.name = name
        self.blocks = blocks
        self.outbound = outbound
        self.user = user
        self.password = password
    }

    /// Parses `NAME=CIDR[;CIDR…][,outbound=HOST:PORT][,user=U,password=P]`; the error says what is wrong.
    public static func parse(_ text: String) -> Result<SIPTrunk, SIPConfigError> {
        guard let eq = text.firstIndex(of: "=") else {
            return .failure(SIPConfigError(
                "a SIP trunk is NAME=CIDR[,outbound=HOST:PORT][,user=U,password=P]: \(text)"))
        }
        let name = String(text[..<eq])
        guard !name.isEmpty, name.count <= 64,
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            return .failure(SIPConfigError("a SIP trunk's name is 1-64 letters, digits, '-' or '_': \(name)"))
        }
        let fields = text[text.index(after: eq)...].split(separator: ",", omittingEmptySubsequences: false)
        var trunk = SIPTrunk(name: name, blocks: [])
        for block in fields[0].split(separator: ";", omittingEmptySubsequences: false) {
            guard let b = AddressBlock(parsing: String(block)) else {
                return .failure(SIPConfigError("trunk \(name): not an address block (a.b.c.d/n or v6/n): \(block)"))
            }
            trunk.blocks.append(b)
        }
        for field in fields.dropFirst() {
            let kv = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard kv.count == 2, !kv[1].isEmpty else {
                return .failure(SIPConfigError("trunk \(name): expected KEY=VALUE, got \(field)"))
            }
            let value = String(kv[1])
            switch kv[0] {
            case "outbound":
                guard let a = PeerAddress(parsing: value), a.port != 0, !a.isWildcard else {
                    return .failure(
                        SIPConfigError("trunk \(name): outbound is HOST:PORT with a numeric host: \(value)"))
                }
                trunk.outbound = a
            case "user": trunk.user = value
            case "password": trunk.password = value
            default:
                return .failure(SIPConfigError("trunk \(name): unknown option \(kv[0]) (outbound, user, password)"))
            }
        }
        if (trunk.user == nil) != (trunk.password == nil) {
            return .failure(SIPConfigError("trunk \(name): user and password go together"))
        }
        return .success(trunk)
    }
}

/// What is wrong with the SIP configuration, said so that the operator can fix it.
public struct SIPConfigError: Error, Equatable, CustomStringConvertible {
    /// The message.
    public let description: String
    /// An error with a message.
    public init(_ description: String) { self.description = description }
}

/// The trunks of a gateway, in the order given: the first whose blocks hold a source wins.
public struct SIPTrunks: Sendable {
    /// The trunks, first match wins.
    public let trunks: [SIPTrunk]
    /// The trunks in the order given.
    public init(_ trunks: [SIPTrunk]) { self.trunks = trunks }

    /// The trunk a request from `source` came through, or nil: not from any trunk.
    public func trunk(for source: PeerAddress) -> SIPTrunk? {
        trunks.first { $0.blocks.contains { $0.contains(source) } }
    }
}
