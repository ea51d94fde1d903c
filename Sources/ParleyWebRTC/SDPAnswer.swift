import ParleyWire

/// The relay's SDP answer to a browser's offer (JSEP RFC 8829 §5.3): ICE-lite with host candidates (RFC 8839,
/// RFC 8445 §2.5), DTLS passive (RFC 8842), Opus (RFC 7587), BUNDLE (RFC 8843); CRLF line ends.
///
/// Every offered media section is answered, in order. Those named in `sections` are accepted audio; all others —
/// video, data channels, audio without Opus, audio the caller does not take — are rejected with port 0, the same
/// protocol and formats, and their `a=mid` (RFC 8829 §5.3.1). The BUNDLE group lists the accepted mids only. Nothing
/// is copied from the offer except values its parser restricted to `[A-Za-z0-9-_./]` (mids, kinds, protocols,
/// formats) and numbers (payload types, extension IDs).
///
///     v=0
///     o=- <sessionID> 2 IN IP4 127.0.0.1
///     s=-
///     t=0 0
///     a=group:BUNDLE 0
///     a=ice-lite
///     m=audio 9 UDP/TLS/RTP/SAVPF 111
///     c=IN IP4 0.0.0.0
///     a=candidate:1 1 udp 2130706431 203.0.113.5 3478 typ host  (these six in every accepted section)
///     a=end-of-candidates
///     a=ice-ufrag:… / a=ice-pwd:… / a=fingerprint:sha-256 AB:… / a=setup:passive
///     a=mid:0
///     a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level   (and sdes:mid, when offered)
///     a=sendrecv
///     a=msid:parley-<cname> audio-<mid>                         (when the relay sends)
///     a=rtcp-mux
///     a=rtpmap:111 opus/48000/2
///     a=rtcp-fb:111 nack                                         (when offered)
///     a=fmtp:111 minptime=10;useinbandfec=1;stereo=0;sprop-stereo=0
///     a=ssrc:<ssrc> cname:<cname>                                (when the relay sends)
///
/// Not answered even when offered: rtcp-rsize (the relay sends and expects compound RTCP), transport-cc and the
/// other header extensions, RED, DTMF, ptime.
public struct SDPAnswer: Equatable, Sendable {
    /// What the relay does with one offered audio section.
    public struct Section: Equatable, Sendable {
        /// The offered section's `a=mid`.
        public var mid: String
        /// The direction the relay wants; the answer intersects it with the offer's (RFC 3264 §6.1): an offer that
        /// only sends gets at most recvonly, one that only receives at most sendonly.
        public var direction: SDPDirection
        /// The SSRC the relay sends with, announced when the answered direction sends.
        public var ssrc: UInt32
        /// The RTCP CNAME of that stream: 1 to 64 of `[A-Za-z0-9+/=_.-]`.
        public var cname: String

        /// A decision for the offered section `mid`.
        public init(mid: String, direction: SDPDirection, ssrc: UInt32, cname: String) {
            self.mid = mid
            self.direction = direction
            self.ssrc = ssrc
            self.cname = cname
        }
    }

    /// The answer, CRLF line ends.
    public let text: String
    /// The accepted mids, in offer order: the BUNDLE group when the offer had one.
    public let acceptedMids: [String]

    /// The fmtp the relay answers for Opus: mono both ways (RFC 7587 §7), in-band FEC, 10 ms minimum packets, and
    /// up to 56 kb/s to the relay (`maxaveragebitrate`, what Parley's own client sends): a browser otherwise encodes
    /// voice at 32 kb/s, audibly worse (PESQ-WB 3.69 against 3.8+ through the same path).
    public static let opusParameters = "minptime=10;useinbandfec=1;stereo=0;sprop-stereo=0;maxaveragebitrate=56000"

    /// Builds the answer. `iceUfrag` (4-256) and `icePwd` (22-256) are the relay's, of `[A-Za-z0-9+/]`;
    /// `fingerprint` the SHA-256 of its DTLS certificate (32 bytes); `candidates` its host candidates' addresses and
    /// UDP ports, most preferred first (at least one); `sessionID` the `o=` session ID. Throws `bad_answer` when a section names a mid that is not an
    /// audio section `offer.audioSections()` would return, names one twice, has a bad CNAME, when accepted sections
    /// fall outside the offer's BUNDLE group (or are several without one), or a local value is malformed.
    public init(
        offer: SDPOffer, iceUfrag: String, icePwd: String, fingerprint: [UInt8], candidates: [PeerAddress],
        tcpCandidates: [PeerAddress] = [],
        sessionID: UInt64, sections: [Section]
    ) throws(WebRTCError) {
        func refuse(_ reason: String) -> WebRTCError { WebRTCError("bad_answer", reason) }
        guard SDPSyntax.isICEString(Substring(iceUfrag), 4...256), SDPSyntax.isICEString(Substring(icePwd), 22...256) else {
            throw refuse("the relay's ICE credentials must be 4+ and 22+ of [A-Za-z0-9+/]")
        }
        guard fingerprint.count == 32 else { throw refuse("the relay's fingerprint is a 32-byte SHA-256") }
        guard !candidates.isEmpty, candidates.count + tcpCandidates.count <= 16,
              (candidates + tcpCandidates).allSatisfy({ $0.port != 0 && !$0.isWildcard }) else {
            throw refuse("the relay needs 1-16 host candidates, each an address and a port")
        }
        var decisions: [String: Section] = [:]
        for section in sections {
            guard let offered = offer.media.first(where: { $0.mid == section.mid }), offered.kind == "audio",
                  !offered.isRejected, offered.opusPayloadType != nil
            else { throw refuse("mid \(section.mid) is not an offered audio section with Opus") }
            guard decisions.updateValue(section, forKey: section.mid) == nil else { throw refuse("mid \(section.mid) is answered twice") }
            guard SDPSyntax.isCNAME(Substring(section.cname)) else { throw refuse("a CNAME must be 1-64 of [A-Za-z0-9+/=_.-]") }
        }
        do throws(WebRTCError) {
            try offer.checkBundled(sections.map(\.mid))
        } catch {
            throw refuse(error.reason)
        }
        let accepted = offer.media.compactMap { $0.mid.flatMap { decisions[$0] == nil ? nil : $0 } }

        var lines: [String] = [
            "v=0",
            "o=- \(sessionID) 2 IN IP4 127.0.0.1",
            "s=-",
            "t=0 0",
        ]
        if !offer.bundle.isEmpty && !accepted.isEmpty {
            lines.append("a=group:BUNDLE " + accepted.joined(separator: " "))
        }
        lines.append("a=ice-lite")
        // Host candidates (RFC 8445 §5.1.2.1: type preference 126, local preference 65535 down, component 1).
        // Passive TCP ones (RFC 6544 §4.5) below every UDP one: local preference 2¹³ × 4 (passive) + 8191 down.
        let transport = candidates.enumerated().map { k, c in
            "a=candidate:\(k + 1) 1 udp \(126 << 24 | (65_535 - k) << 8 | 255) \(c.bareHost) \(c.port) typ host"
        } + tcpCandidates.enumerated().map { k, c in
            "a=candidate:\(candidates.count + k + 1) 1 tcp \(126 << 24 | (40_959 - k) << 8 | 255) \(c.bareHost) \(c.port) typ host tcptype passive"
        } + [
            "a=end-of-candidates",
            "a=ice-ufrag:\(iceUfrag)",
            "a=ice-pwd:\(icePwd)",
            "a=fingerprint:sha-256 \(SDPSyntax.fingerprintText(fingerprint))",
            "a=setup:passive",
        ]
        for media in offer.media {
            guard let mid = media.mid, let decision = decisions[mid], let pt = media.opusPayloadType else {
                lines.append("m=\(media.kind) 0 \(media.proto) \(media.formats.joined(separator: " "))")
                lines.append("c=IN IP4 0.0.0.0")
                if let mid = media.mid { lines.append("a=mid:\(mid)") }
                lines.append("a=inactive")
                continue
            }
            let direction = SDPDirection(sends: decision.direction.sends && media.direction.receives,
                                         receives: decision.direction.receives && media.direction.sends)
            lines.append("m=audio 9 \(media.proto) \(pt)")
            lines.append("c=IN IP4 0.0.0.0")
            lines += transport
            lines.append("a=mid:\(mid)")
            if let id = media.audioLevelExtensionID { lines.append("a=extmap:\(id) urn:ietf:params:rtp-hdrext:ssrc-audio-level") }
            if let id = media.midExtensionID { lines.append("a=extmap:\(id) urn:ietf:params:rtp-hdrext:sdes:mid") }
            lines.append("a=\(direction.rawValue)")
            if direction.sends { lines.append("a=msid:parley-\(decision.cname) audio-\(mid)") }
            lines.append("a=rtcp-mux")
            lines.append("a=rtpmap:\(pt) opus/48000/2")
            if media.nackPayloadTypes.contains(pt) { lines.append("a=rtcp-fb:\(pt) nack") }
            lines.append("a=fmtp:\(pt) \(Self.opusParameters)")
            if direction.sends { lines.append("a=ssrc:\(decision.ssrc) cname:\(decision.cname)") }
        }
        text = lines.joined(separator: "\r\n") + "\r\n"
        acceptedMids = accepted
    }

    /// Fresh ICE credentials for one session from `generator`: an 8-character ufrag (48 bits) and a 24-character
    /// password (144 bits) of `[A-Za-z0-9+/]`, above RFC 8839's minimums of 4 characters and 22 (128 bits).
    public static func randomICECredentials<R: RandomNumberGenerator>(using generator: inout R) -> (ufrag: String, pwd: String) {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        func draw(_ count: Int) -> String {
            // 64 symbols: six bits of each draw, no modulo bias.
            String(decoding: (0..<count).map { _ in alphabet[Int(generator.next() & 63)] }, as: UTF8.self)
        }
        return (draw(8), draw(24))
    }
}
