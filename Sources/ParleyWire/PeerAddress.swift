/// A UDP peer: IPv4 or IPv6 address and port, as a small hashable value.
///
/// The relay core keys members by the address their datagrams come from; the socket layer converts
/// to and from `sockaddr`. IPv4 addresses are stored as IPv4-mapped IPv6 (`::ffff:a.b.c.d`) so one
/// representation serves both families.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    /// The high 64 bits of the (mapped) IPv6 address, network order folded big-endian.
    public var high: UInt64
    /// The low 64 bits of the (mapped) IPv6 address.
    public var low: UInt64
    /// The UDP port in host byte order.
    public var port: UInt16

    /// An address from its 128-bit parts and port.
    public init(high: UInt64, low: UInt64, port: UInt16) {
        self.high = high
        self.low = low
        self.port = port
    }

    /// An IPv4 address `a.b.c.d:port`.
    public init(ipv4 a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) {
        self.high = 0
        self.low = 0x0000_FFFF_0000_0000 | UInt64(a) << 24 | UInt64(b) << 16 | UInt64(c) << 8 | UInt64(d)
        self.port = port
    }

    /// An IPv4 address from its 32-bit value in host order.
    public init(ipv4 value: UInt32, port: UInt16) {
        self.high = 0
        self.low = 0x0000_FFFF_0000_0000 | UInt64(value)
        self.port = port
    }

    /// True when this is an IPv4-mapped address.
    public var isIPv4: Bool { high == 0 && (low >> 32) == 0x0000_FFFF }

    /// The IPv4 address in host order (meaningful only when `isIPv4`).
    public var ipv4Value: UInt32 { UInt32(truncatingIfNeeded: low) }

    /// True for a loopback address, which only this host can reach: 127.0.0.0/8 or `::1`.
    public var isLoopback: Bool { isIPv4 ? ipv4Value >> 24 == 127 : high == 0 && low == 1 }

    /// True for a wildcard bind address, which names no one interface: 0.0.0.0 or `::`.
    public var isWildcard: Bool { high == 0 && (low == 0 || low == 0x0000_FFFF_0000_0000) }

    /// True for a link-local address, which only the same link can reach: 169.254.0.0/16 or fe80::/10.
    public var isLinkLocal: Bool { isIPv4 ? ipv4Value >> 16 == 0xA9FE : high >> 54 == 0x3FA }

    /// The address without its port, as a host in a URL or `HOST:PORT`: `a.b.c.d` or `[v6]`.
    public var host: String {
        let text = description
        return String(text[..<text.lastIndex(of: ":")!])
    }

    /// The address without its port and without brackets, as SDP's `c=` and candidates write it: `a.b.c.d` or `v6`.
    public var bareHost: String { isIPv4 ? host : String(host.dropFirst().dropLast()) }

    /// The same address with another port.
    public func withPort(_ port: UInt16) -> PeerAddress { PeerAddress(high: high, low: low, port: port) }

    /// The sixteen address bytes in network order.
    public var addressBytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            out[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * i))
            out[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * i))
        }
        return out
    }

    /// `a.b.c.d:port` or `[v6]:port`.
    public var description: String {
        if isIPv4 {
            let v = ipv4Value
            return "\(v >> 24).\((v >> 16) & 0xFF).\((v >> 8) & 0xFF).\(v & 0xFF):\(port)"
        }
        // RFC 5952: lower-case hex groups without leading zeros, the longest run of two or more zero groups (the
        // first of equals) as "::".
        let b = addressBytes
        let groups = stride(from: 0, to: 16, by: 2).map { UInt16(b[$0]) << 8 | UInt16(b[$0 + 1]) }
        var best = (start: 0, count: 0), run = (start: 0, count: 0)
        for (i, g) in groups.enumerated() {
            if g == 0 {
                run = run.count == 0 ? (i, 1) : (run.start, run.count + 1)
                if run.count > best.count { best = run }
            } else {
                run = (0, 0)
            }
        }
        func hex(_ part: ArraySlice<UInt16>) -> String { part.map { String($0, radix: 16) }.joined(separator: ":") }
        let text = best.count < 2 ? hex(groups[...])
            : hex(groups[..<best.start]) + "::" + hex(groups[(best.start + best.count)...])
        return "[\(text)]:\(port)"
    }

    /// Parses `HOST:PORT` where HOST is a dotted IPv4 address, `localhost`, or a bracketed IPv6 address.
    public init?(parsing text: String) {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
            guard let port = UInt16(portText), let parsed = PeerAddress.parseIPv6(host) else { return nil }
            self.init(high: parsed.0, low: parsed.1, port: port)
            return
        }
        guard let colon = text.lastIndex(of: ":") else { return nil }
        host = text[..<colon]
        portText = text[text.index(after: colon)...]
        guard let port = UInt16(portText) else { return nil }
        if host == "localhost" { host = "127.0.0.1" }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard !part.isEmpty, part.count <= 3, let octet = UInt8(part) else { return nil }
            value = value << 8 | UInt32(octet)
        }
        self.init(ipv4: value, port: port)
    }

    private static func parseIPv6(_ text: Substring) -> (UInt64, UInt64)? {
        let chars = Array(text)
        var halves: [String] = []
        var current = ""
        var i = 0
        while i < chars.count {
            if chars[i] == ":" && i + 1 < chars.count && chars[i + 1] == ":" {
                halves.append(current)
                current = ""
                i += 2
            } else {
                current.append(chars[i])
                i += 1
            }
        }
        halves.append(current)
        guard halves.count <= 2 else { return nil }
        func groups(_ s: String) -> [UInt16]? {
            if s.isEmpty { return [] }
            var out: [UInt16] = []
            for g in s.split(separator: ":", omittingEmptySubsequences: false) {
                guard !g.isEmpty, g.count <= 4, let v = UInt16(g, radix: 16) else { return nil }
                out.append(v)
            }
            return out
        }
        guard let head = groups(halves[0]) else { return nil }
        var all = head
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count <= 7 else { return nil }
            all += [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        }
        guard all.count == 8 else { return nil }
        var high: UInt64 = 0, low: UInt64 = 0
        for i in 0..<4 { high = high << 16 | UInt64(all[i]) }
        for i in 4..<8 { low = low << 16 | UInt64(all[i]) }
        return (high, low)
    }
}
