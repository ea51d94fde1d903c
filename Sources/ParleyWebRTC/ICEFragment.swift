import ParleyWire

/// A WHIP/WHEP `PATCH` body (`application/trickle-ice-sdpfrag`, RFC 8840; RFC 9725 §4.3): trickled candidates, or an
/// ICE restart when it carries new ICE credentials. The relay is ICE-lite: it learns a browser's addresses from its
/// checks, so candidates are only counted; new credentials restart ICE. At most `maxBytes`, lines of `x=…` only.
public struct ICEFragment: Equatable, Sendable {
    /// The new `a=ice-ufrag` and `a=ice-pwd` (both or neither).
    public var ufrag: String?
    public var password: String?
    /// The first `a=mid` (the answer's media line names it).
    public var mid: String?
    /// `a=candidate` lines seen.
    public var candidates = 0

    /// The longest body taken.
    public static let maxBytes = 16 * 1024

    /// Whether it restarts ICE (it carries credentials).
    public var isRestart: Bool { ufrag != nil }

    /// Parses a fragment; throws `bad_sdpfrag` naming what is wrong.
    public init(parsing bytes: [UInt8]) throws(WebRTCError) {
        func refuse(_ reason: String) -> WebRTCError { WebRTCError("bad_sdpfrag", reason) }
        guard bytes.count <= Self.maxBytes else { throw refuse("the fragment is over \(Self.maxBytes) bytes") }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw refuse("the fragment is not UTF-8") }
        for raw in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            guard line.count >= 2, line.dropFirst().first == "=", let kind = line.first, kind.isLetter else {
                throw refuse("a line is not SDP (type=value): \(line.prefix(40))")
            }
            guard kind == "a" else { continue }
            let attribute = line.dropFirst(2)
            if attribute.hasPrefix("ice-ufrag:") {
                let value = attribute.dropFirst("ice-ufrag:".count)
                guard SDPSyntax.isICEString(value, 4...256) else { throw refuse("ice-ufrag must be 4–256 of [A-Za-z0-9+/]") }
                guard ufrag == nil || ufrag == String(value) else { throw refuse("two different ice-ufrag values") }
                ufrag = String(value)
            } else if attribute.hasPrefix("ice-pwd:") {
                let value = attribute.dropFirst("ice-pwd:".count)
                guard SDPSyntax.isICEString(value, 22...256) else { throw refuse("ice-pwd must be 22–256 of [A-Za-z0-9+/]") }
                guard password == nil || password == String(value) else { throw refuse("two different ice-pwd values") }
                password = String(value)
            } else if attribute.hasPrefix("mid:") {
                let value = attribute.dropFirst("mid:".count)
                guard !value.isEmpty, value.count <= 32, value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                    throw refuse("a mid must be 1–32 letters, digits, - or _")
                }
                if mid == nil { mid = String(value) }
            } else if attribute.hasPrefix("candidate:") {
                candidates += 1
            }
        }
        guard (ufrag == nil) == (password == nil) else { throw refuse("an ICE restart needs both ice-ufrag and ice-pwd") }
    }

    /// The relay's answer to a restart (RFC 9725 §4.3.2): ICE-lite, its new credentials, and its candidates under the
    /// fragment's mid.
    public static func restartAnswer(ufrag: String, password: String, mid: String, candidates: [PeerAddress],
                                     tcpCandidates: [PeerAddress]) -> String {
        var lines = ["a=ice-lite", "a=ice-ufrag:\(ufrag)", "a=ice-pwd:\(password)", "m=audio 9 UDP/TLS/RTP/SAVPF 0", "a=mid:\(mid)"]
        lines += SDPAnswer.candidateLines(candidates, tcp: tcpCandidates)
        lines.append("a=end-of-candidates")
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
