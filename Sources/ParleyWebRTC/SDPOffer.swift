/// An SDP offer as a browser writes it for WebRTC (RFC 8866, JSEP RFC 8829): the session-level ICE and DTLS
/// attributes, the BUNDLE group, and every media section (`Media`).
///
/// Parsing checks syntax and limits only: at most `maxSize` bytes, `maxLineLength` per line, `maxMediaSections`
/// media sections; LF or CRLF line ends. Whether the relay can answer is `audioSections()`'s question. Every value
/// the relay may echo into its answer — mids, media kinds, protocols, formats — is restricted to a small character
/// set (`[A-Za-z0-9-_.]`, 1 to 32 characters; protocols also `/`), and anything else is `bad_sdp`, so nothing from
/// the offer can inject a line into the answer. Unknown lines and attributes are ignored.
public struct SDPOffer: Equatable, Sendable {
    /// The largest offer accepted, in bytes.
    public static let maxSize = 65_536
    /// The most media sections accepted.
    public static let maxMediaSections = 16
    /// The longest line accepted, in bytes.
    public static let maxLineLength = 4096

    /// Session-level `a=ice-ufrag`.
    public var iceUfrag: String?
    /// Session-level `a=ice-pwd`.
    public var icePwd: String?
    /// Session-level `a=fingerprint:sha-256`, 32 bytes.
    public var fingerprint: [UInt8]?
    /// Session-level `a=setup`.
    public var setup: SDPSetup?
    /// The mids of the first `a=group:BUNDLE`, in order; empty without one.
    public var bundle: [String]
    /// Session-level `a=ice-options` (`trickle`, `ice2`, …).
    public var iceOptions: [String]
    /// True when the offerer is an ICE-lite agent (`a=ice-lite`): answers the relay writes say it.
    public var iceLite: Bool
    /// The media sections, in order.
    public var media: [Media]

    /// The first hash algorithm other than sha-256 among the offer's fingerprints, for the error when no sha-256
    /// one is there.
    var unsupportedFingerprintAlgorithm: String?

    /// Parses an offer. Throws `too_large` past the limits, `bad_sdp` for syntax (the reason names the line),
    /// `bad_fingerprint` for a sha-256 fingerprint that is not 32 colon-separated hex bytes.
    public init(parsing text: String) throws(WebRTCError) {
        guard text.utf8.count <= Self.maxSize else {
            throw WebRTCError("too_large", "the offer is larger than \(Self.maxSize) bytes")
        }
        let lines = try SDPSyntax.lines(of: text, maxLineLength: Self.maxLineLength)
        guard let first = lines.first, first.type == UInt8(ascii: "v"), first.value == "0" else {
            throw SDPSyntax.bad("an SDP description starts with v=0")
        }
        bundle = []
        iceOptions = []
        iceLite = false
        media = []
        var sessionDirection: SDPDirection?
        var current: Media?
        for line in lines.dropFirst() {
            if line.type == UInt8(ascii: "m") {
                if let section = current { media.append(section) }
                guard media.count < Self.maxMediaSections else {
                    throw WebRTCError("too_large", "the offer has more than \(Self.maxMediaSections) media sections")
                }
                current = try Media(mediaLine: line.value)
                continue
            }
            guard line.type == UInt8(ascii: "a") else { continue } // o=, s=, t=, c=, b=, …: nothing the relay uses
            let (name, value) = SDPSyntax.attribute(line.value)
            if current != nil {
                try current!.apply(name, value, unsupportedAlgorithm: &unsupportedFingerprintAlgorithm)
            } else {
                try applySessionAttribute(name, value, direction: &sessionDirection)
            }
        }
        if let section = current { media.append(section) }
        try resolve(sessionDirection: sessionDirection ?? .sendrecv)
    }

    /// Session-level attributes.
    private mutating func applySessionAttribute(
        _ name: Substring, _ value: Substring?, direction: inout SDPDirection?
    ) throws(WebRTCError) {
        switch name {
        case "ice-ufrag": iceUfrag = try Media.iceString(value, name: "ice-ufrag", lengths: 4...256)
        case "ice-pwd": icePwd = try Media.iceString(value, name: "ice-pwd", lengths: 22...256)
        case "fingerprint":
            if let bytes = try Media.sha256Fingerprint(value, unsupportedAlgorithm: &unsupportedFingerprintAlgorithm),
               fingerprint == nil {
                fingerprint = bytes
            }
        case "setup": setup = try Media.setup(value)
        case "ice-lite": iceLite = true
        case "ice-options": iceOptions = SDPSyntax.fields(value ?? "").map(String.init)
        case "group":
            let fields = SDPSyntax.fields(value ?? "")
            guard fields.first == "BUNDLE", bundle.isEmpty else { return } // other semantics, later BUNDLE groups
            for mid in fields.dropFirst() {
                guard SDPSyntax.isIdentifier(mid) else { throw SDPSyntax.bad("a BUNDLE mid must be 1-32 of [A-Za-z0-9-_.]") }
                bundle.append(String(mid))
            }
        case "sendrecv", "sendonly", "recvonly", "inactive":
            direction = SDPDirection(rawValue: String(name))
        default:
            break
        }
    }

    /// Gives each media section the session-level values it does not override, and checks mids: unique, and every
    /// BUNDLE mid names a section.
    private mutating func resolve(sessionDirection: SDPDirection) throws(WebRTCError) {
        var mids: Set<String> = []
        for index in media.indices {
            media[index].iceUfrag = media[index].iceUfrag ?? iceUfrag
            media[index].icePwd = media[index].icePwd ?? icePwd
            media[index].fingerprint = media[index].fingerprint ?? fingerprint
            media[index].setup = media[index].setup ?? setup
            media[index].direction = media[index].ownDirection ?? sessionDirection
            if let mid = media[index].mid {
                guard mids.insert(mid).inserted else { throw SDPSyntax.bad("mid \(mid) names two media sections") }
            }
        }
        for mid in bundle where !mids.contains(mid) {
            throw SDPSyntax.bad("BUNDLE mid \(mid) names no media section")
        }
    }

    /// Checks that the sections with `mids` can share the relay's one transport (its one candidate and DTLS session):
    /// one section alone, or sections all in the offer's BUNDLE group (RFC 8843). Throws `bundle_required` for several
    /// sections in an offer without BUNDLE, `not_bundled` for a section outside its group. The route calls it before
    /// anything is created; `SDPAnswer` applies the same rule to what it is asked to answer.
    public func checkBundled(_ mids: [String]) throws(WebRTCError) {
        if bundle.isEmpty {
            guard mids.count <= 1 else {
                throw WebRTCError("bundle_required", "the offer has \(mids.count) audio sections to answer but no a=group:BUNDLE: the relay answers several only bundled on one transport")
            }
            return
        }
        if let outside = mids.first(where: { !bundle.contains($0) }) {
            throw WebRTCError("not_bundled", "audio section \(outside) is not in the offer's BUNDLE group: the relay answers only bundled sections")
        }
    }

    /// The audio sections the relay can answer: not rejected (port 0 without `a=bundle-only`) and offering Opus at
    /// 48 kHz, each carrying its effective credentials, fingerprint and setup. Throws `no_audio`, `no_opus`, or —
    /// for the first such section that lacks it — `bad_sdp` (no mid), `no_ice_credentials`, `no_fingerprint`,
    /// `bad_fingerprint` (only hash algorithms other than sha-256), `unsupported_setup` (the relay is passive, so
    /// setup must be actpass or active; absent means active, RFC 4145 §4), `no_rtcp_mux`.
    public func audioSections() throws(WebRTCError) -> [Media] {
        let audio = media.filter { $0.kind == "audio" }
        guard !audio.isEmpty else { throw WebRTCError("no_audio", "the offer has no audio section") }
        let live = audio.filter { !$0.isRejected }
        guard !live.isEmpty else { throw WebRTCError("no_audio", "the offer has no audio section that is not rejected (port 0)") }
        let opus = live.filter { $0.opusPayloadType != nil }
        guard !opus.isEmpty else { throw WebRTCError("no_opus", "the offer's audio does not include Opus at 48 kHz") }
        for section in opus {
            guard let mid = section.mid else { throw SDPSyntax.bad("an audio section has no a=mid") }
            guard section.iceUfrag != nil, section.icePwd != nil else {
                throw WebRTCError("no_ice_credentials", "audio section \(mid) has no ice-ufrag and ice-pwd")
            }
            guard section.fingerprint != nil else {
                if let algorithm = unsupportedFingerprintAlgorithm {
                    throw WebRTCError("bad_fingerprint", "only sha-256 certificate fingerprints are supported, the offer has \(algorithm)")
                }
                throw WebRTCError("no_fingerprint", "audio section \(mid) has no certificate fingerprint")
            }
            switch section.setup {
            case nil, .actpass, .active: break
            case let setup?:
                throw WebRTCError("unsupported_setup", "audio section \(mid) has setup:\(setup.rawValue); the relay is passive and needs actpass or active")
            }
            guard section.rtcpMux else {
                throw WebRTCError("no_rtcp_mux", "audio section \(mid) does not offer rtcp-mux, which the relay requires")
            }
        }
        return opus
    }
}
