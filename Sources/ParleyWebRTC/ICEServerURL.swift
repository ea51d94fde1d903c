/// One STUN or TURN server's URL as a browser's `RTCIceServer.urls` takes it (RFC 7064 for `stun:`, RFC 7065 for
/// `turn:` and `turns:`):
///
///     stun:HOST[:PORT]
///     turn:HOST[:PORT][?transport=udp|tcp]
///     turns:HOST[:PORT][?transport=udp|tcp]
///
/// HOST is an IPv4 address, an IPv6 address in brackets, or a DNS name. There is no `//` and no path: `turn://h`
/// is refused with a sentence that says so. The scheme and the transport are lowercased; the text is otherwise
/// kept as given (`text`), since it is handed to browsers as it is.
public struct ICEServerURL: Equatable, Sendable, CustomStringConvertible {
    /// The URL's scheme.
    public enum Scheme: String, Sendable, CaseIterable {
        /// A STUN server: no credentials.
        case stun
        /// A TURN server over UDP or TCP.
        case turn
        /// A TURN server over TLS (or DTLS with `?transport=udp`).
        case turns

        /// True for `turn` and `turns`: the ones that need credentials.
        public var isTURN: Bool { self != .stun }
    }

    /// The transport a TURN URL names (`?transport=`).
    public enum Transport: String, Sendable {
        case udp
        case tcp
    }

    /// The scheme.
    public var scheme: Scheme
    /// The host as written (an IPv6 address with its brackets).
    public var host: String
    /// The port, if the URL names one.
    public var port: UInt16?
    /// The transport, if a TURN URL names one.
    public var transport: Transport?

    /// The URL as browsers take it: `scheme:host[:port][?transport=…]`.
    public var text: String {
        "\(scheme.rawValue):\(host)" + (port.map { ":\($0)" } ?? "")
            + (transport.map { "?transport=\($0.rawValue)" } ?? "")
    }

    /// `text`.
    public var description: String { text }

    /// Parses `text`; throws `bad_ice_server_url` with a sentence naming what is wrong.
    public init(parsing text: String) throws(WebRTCError) {
        func bad(_ why: String) -> WebRTCError {
            WebRTCError("bad_ice_server_url", "\"\(text)\" is not a STUN or TURN URL (stun:HOST[:PORT], "
                                              + "turn:HOST[:PORT][?transport=udp|tcp] or turns:…): \(why)")
        }
        guard !text.isEmpty, text.utf8.count <= 512 else { throw bad("it must be 1–512 bytes") }
        guard let colon = text.firstIndex(of: ":") else { throw bad("it has no scheme") }
        guard let scheme = Scheme(rawValue: text[..<colon].lowercased()) else {
            throw bad("the scheme must be stun, turn or turns")
        }
        var rest = text[text.index(after: colon)...]
        guard !rest.hasPrefix("//") else { throw bad("these URLs have no // after the scheme (RFC 7064, RFC 7065)") }

        var transport: Transport?
        if let question = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: question)...]
            rest = rest[..<question]
            guard scheme.isTURN else { throw bad("a stun: URL takes no query") }
            guard query.hasPrefix("transport="),
                  let t = Transport(rawValue: query.dropFirst("transport=".count).lowercased()) else {
                throw bad("the only query is ?transport=udp or ?transport=tcp")
            }
            transport = t
        }

        let host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw bad("an IPv6 address needs its closing ]") }
            host = rest[...close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw bad("only :PORT may follow an IPv6 address") }
                portText = after.dropFirst()
            }
            guard Self.isIPv6Literal(host.dropFirst().dropLast()) else { throw bad("\(host) is not an IPv6 address") }
        } else {
            let parts = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            if parts.count == 2 { portText = parts[1] }
            guard Self.isIPv4(host) || Self.isDNSName(host) else {
                throw bad(host.isEmpty ? "it has no host"
                          : "\"\(host)\" is not an IPv4 address, an IPv6 address in brackets or a host name")
            }
        }
        var port: UInt16?
        if let portText {
            guard portText.allSatisfy(\.isASCII), let p = UInt16(portText), p > 0 else {
                throw bad("the port must be 1–65535")
            }
            port = p
        }
        self.scheme = scheme
        self.host = String(host)
        self.port = port
        self.transport = transport
    }

    /// Four decimal octets, each 0–255 without a leading zero.
    static func isIPv4(_ s: Substring) -> Bool {
        let octets = s.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.allSatisfy { o in
            (1...3).contains(o.count) && o.allSatisfy { $0.isASCII && $0.isNumber }
                && (o.count == 1 || o.first != "0") && Int(o)! <= 255
        }
    }

    /// RFC 1123 host names: dot-separated labels of 1–63 letters, digits and hyphens, not starting or ending with a
    /// hyphen, 253 bytes at most; the last label is not all digits (that would be a malformed IPv4 address).
    static func isDNSName(_ s: Substring) -> Bool {
        guard !s.isEmpty, s.utf8.count <= 253 else { return false }
        let labels = s.split(separator: ".", omittingEmptySubsequences: false)
        let labelsOK = labels.allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
        return labelsOK && !labels.last!.allSatisfy(\.isNumber)
    }

    /// Hex groups and colons (one `::` at most), optionally ending in a dotted IPv4 address.
    static func isIPv6Literal(_ s: Substring) -> Bool {
        guard (2...45).contains(s.utf8.count), s.contains(":") else { return false }
        var body = s
        var groupsFromIPv4 = 0
        if let lastColon = s.lastIndex(of: ":"), s[s.index(after: lastColon)...].contains(".") {
            guard isIPv4(s[s.index(after: lastColon)...]) else { return false }
            body = s[...lastColon]
            if !body.hasSuffix("::") { body = body.dropLast() }
            groupsFromIPv4 = 2
        }
        let compressed = body.ranges(of: "::").count
        guard compressed <= 1 else { return false }
        let groups = body.split(separator: ":", omittingEmptySubsequences: true)
        guard groups.allSatisfy({ (1...4).contains($0.count) && $0.allSatisfy(\.isHexDigit) }) else { return false }
        // Single colons only between groups: none at either end unless it is part of "::".
        if body.hasPrefix(":") && !body.hasPrefix("::") { return false }
        if body.hasSuffix(":") && !body.hasSuffix("::") { return false }
        let total = groups.count + groupsFromIPv4
        return compressed == 1 ? total <= 7 : total == 8
    }
}
