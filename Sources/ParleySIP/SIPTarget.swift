import CLibre
import Glibc
import ParleyWire

/// A SIP address the gateway may call: `sip:USER@HOST[:PORT]` with a numeric host (the gateway resolves no names),
/// and the trunk whose rules let it out.
public struct SIPTarget: Equatable, Sendable, CustomStringConvertible {
    /// The user part (1-64 of RFC 3261's unreserved characters and `+`, as a phone number is written).
    public var user: String
    /// The host and port (5060 when not given).
    public var host: PeerAddress
    /// `sip:USER@HOST:PORT`.
    public var description: String { "sip:\(user)@\(host)" }

    /// Parses `sip:USER@HOST[:PORT]`; nil when malformed, a name instead of an address, or parameters follow.
    public init?(parsing text: String) {
        guard text.hasPrefix("sip:"), let at = text.firstIndex(of: "@") else { return nil }
        let user = text[text.index(text.startIndex, offsetBy: 4)..<at]
        guard !user.isEmpty, user.count <= 64,
              user.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.!~*'()+".contains($0)) }) else {
            return nil
        }
        var rest = String(text[text.index(after: at)...])
        guard !rest.isEmpty, !rest.contains(";"), !rest.contains("?") else { return nil }
        let hasPort = rest.hasPrefix("[") ? rest.contains("]:") : rest.contains(":")
        if !hasPort { rest += rest.hasPrefix("[") || !rest.contains(":") ? ":5060" : "" }
        guard let host = PeerAddress(parsing: rest), host.port != 0, !host.isWildcard else { return nil }
        self.user = String(user)
        self.host = host
    }
}

extension SIPTrunks {
    /// The trunk a call to `target` goes out through and where its INVITE is sent: the first trunk whose blocks hold
    /// the target's host (sent to its outbound proxy when it has one, else to the target), then the first whose
    /// outbound proxy is the target's host, then the first with an outbound proxy (the default, which routes on). Nil:
    /// no trunk allows it, and the gateway refuses (no open relay).
    public func outbound(for target: SIPTarget) -> (trunk: SIPTrunk, nextHop: PeerAddress)? {
        let host = target.host
        if let t = trunks.first(where: { $0.blocks.contains { $0.contains(host) } }) {
            return (t, t.outbound ?? host)
        }
        if let t = trunks.first(where: { $0.outbound.map { $0.high == host.high && $0.low == host.low } ?? false }) {
            return (t, t.outbound!)
        }
        if let t = trunks.first(where: { $0.outbound != nil }) { return (t, t.outbound!) }
        return nil
    }
}

/// A trunk's credentials for the digest challenges of the calls placed through it (its `user` and `password`), kept
/// alive by the call; libre asks `answer` for them when the trunk answers 401 or 407.
final class SIPTrunkAuth {
    let user: String
    let password: String

    /// The trunk's credentials, or nil when it has none.
    init?(_ trunk: SIPTrunk) {
        guard let user = trunk.user, let password = trunk.password else { return nil }
        self.user = user
        self.password = password
    }

    /// libre's authentication handler (`sip_auth_h`): the credentials for any realm, copied for libre to free.
    static let answer: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                       UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                       UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Int32 = {
        username, password, _, arg in
        guard let username, let password, let arg else { return EINVAL }
        let auth = Unmanaged<SIPTrunkAuth>.fromOpaque(arg).takeUnretainedValue()
        let err = str_dup(username, auth.user)
        return err != 0 ? err : str_dup(password, auth.password)
    }

    /// The pointer libre hands back to `answer`.
    var pointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
}
