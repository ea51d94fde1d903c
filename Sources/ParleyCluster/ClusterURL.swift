/// Where the cluster's Redis is and how to reach it:
///
///     redis://HOST[:PORT]                    plain TCP (port 6379 when left out)
///     redis://:PASSWORD@HOST[:PORT]          AUTH PASSWORD after connecting (Redis's `requirepass`)
///     redis://USER:PASSWORD@HOST[:PORT]      AUTH USER PASSWORD (a Redis 6 ACL user)
///     rediss://…                             the same over TLS (OpenSSL; the server's certificate checked against the
///                                            system's CAs, or `cluster_tls_ca`, and its name or IP address)
///
/// HOST is a name, an IPv4 address or a bracketed IPv6 address; a path (`/0`) is ignored. The user and password may
/// be percent-encoded (`%40` for `@`). The password is never printed: `description` leaves it out.
public struct ClusterURL: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// `rediss://`: TLS to Redis.
    public var tls: Bool
    /// The ACL user AUTH names (nil: the default user).
    public var user: String?
    /// The password AUTH sends (nil: no AUTH).
    public var password: String?
    /// A PEM file of the CAs that may sign the server's certificate (`cluster_tls_ca`); nil: the system's.
    public var caFile: String?

    public init?(_ text: String) {
        let scheme: Substring
        if text.hasPrefix("redis://") { scheme = "redis://" } else if text.hasPrefix("rediss://") { scheme = "rediss://" } else { return nil }
        tls = scheme == "rediss://"
        var rest = text.dropFirst(scheme.count).split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = credentials.firstIndex(of: ":"),
                  let user = Self.percentDecoded(credentials[..<colon]),
                  let password = Self.percentDecoded(credentials[credentials.index(after: colon)...]), !password.isEmpty else { return nil }
            self.user = user.isEmpty ? nil : user
            self.password = password
        }
        let hostPart: Substring, portPart: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { return nil }
            portPart = after.isEmpty ? nil : after.dropFirst()
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return nil }
            hostPart = parts[0]
            portPart = parts.count == 2 ? parts[1] : nil
        }
        guard !hostPart.isEmpty, hostPart.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "%" }) else { return nil }
        host = String(hostPart)
        if let portPart {
            guard let p = Int(portPart), (1...65535).contains(p) else { return nil }
            port = p
        } else {
            port = 6379
        }
    }

    /// `redis://HOST:PORT` or `rediss://HOST:PORT`, with the user if any, never the password.
    public var description: String {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return (tls ? "rediss://" : "redis://") + (user.map { "\($0)@" } ?? "") + address
    }

    /// `%XX` escapes decoded; nil for a malformed escape or bytes that are not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        while i < utf8.endIndex {
            let b = utf8[i]
            if b == UInt8(ascii: "%") {
                let h = utf8.index(after: i)
                guard h < utf8.endIndex, utf8.index(after: h) < utf8.endIndex,
                      let value = UInt8(String(decoding: utf8[h...utf8.index(after: h)], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
                i = utf8.index(h, offsetBy: 2)
            } else {
                bytes.append(b)
                i = utf8.index(after: i)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
