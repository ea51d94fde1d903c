extension SDPOffer {
    /// One `m=` section of an offer and the attributes the relay reads from it.
    ///
    /// `iceUfrag`, `icePwd`, `fingerprint`, `setup` and `direction` are effective values: the section's own, else
    /// the session's. RTP attributes (`rtpmap`, `fmtp`, `rtcp-fb`, `extmap`, `ssrc`) are read only in sections whose
    /// protocol is RTP. Header extension IDs are recorded for three URIs, and only in the one-byte range 1-14 (RFC
    /// 8285 §4.2); an ID of 15-255 is valid syntax but leaves the extension unrecorded, so it is never answered.
    public struct Media: Equatable, Sendable {
        /// `audio`, `video`, `application`, …
        public var kind: String
        /// The port of the `m=` line; 0 rejects the section unless `bundleOnly`.
        public var port: UInt16
        /// The transport protocol, e.g. `UDP/TLS/RTP/SAVPF`.
        public var proto: String
        /// The formats of the `m=` line: RTP payload types as text, or e.g. `webrtc-datachannel`.
        public var formats: [String]
        /// `a=mid`.
        public var mid: String?
        /// The effective direction (default sendrecv).
        public var direction: SDPDirection
        /// `a=bundle-only`: port 0 here means "bundled", not "rejected" (JSEP §5.2.1).
        public var bundleOnly: Bool
        /// Effective `a=ice-ufrag`.
        public var iceUfrag: String?
        /// Effective `a=ice-pwd`.
        public var icePwd: String?
        /// Effective sha-256 `a=fingerprint`, 32 bytes.
        public var fingerprint: [UInt8]?
        /// Effective `a=setup`.
        public var setup: SDPSetup?
        /// `a=rtcp-mux`.
        public var rtcpMux: Bool
        /// `a=rtcp-rsize`.
        public var rtcpRsize: Bool
        /// `a=rtpmap` lines, in order.
        public var rtpmaps: [RTPMap]
        /// `a=fmtp` parameter text by payload type.
        public var fmtps: [UInt8: String]
        /// Payload types with `a=rtcp-fb:PT nack` (generic NACK; `nack pli` does not count).
        public var nackPayloadTypes: Set<UInt8>
        /// ID of `urn:ietf:params:rtp-hdrext:ssrc-audio-level` (RFC 6464).
        public var audioLevelExtensionID: UInt8?
        /// ID of `urn:ietf:params:rtp-hdrext:csrc-audio-level` (RFC 6465).
        public var csrcAudioLevelExtensionID: UInt8?
        /// ID of `urn:ietf:params:rtp-hdrext:sdes:mid` (RFC 8843 §15.2).
        public var midExtensionID: UInt8?
        /// The SSRCs of `a=ssrc` lines, each once, in order.
        public var ssrcs: [UInt32]
        /// `a=msid` text (`stream-id track-id`).
        public var msid: String?

        /// The section's own direction attribute, before the session's default applies.
        var ownDirection: SDPDirection?
        /// Extension IDs seen, to refuse one ID mapped twice.
        var extensionIDs: Set<UInt16> = []

        /// True when port 0 rejects the section (RFC 3264 §6): port 0 without `a=bundle-only`.
        public var isRejected: Bool { port == 0 && !bundleOnly }

        /// True when `proto` carries RTP (`RTP/AVP`, `UDP/TLS/RTP/SAVPF`, …).
        public var isRTP: Bool { proto.split(separator: "/").contains("RTP") }

        /// The numeric formats of the `m=` line (0-127), in order.
        public var payloadTypes: [UInt8] { formats.compactMap { SDPSyntax.decimal(Substring($0), as: UInt8.self) }.filter { $0 < 128 } }

        /// The first payload type of the `m=` line mapped to `opus/48000/2` (RFC 7587 §7; the encoding name in any case).
        public var opusPayloadType: UInt8? {
            guard isRTP else { return nil }
            return payloadTypes.first { pt in
                rtpmaps.contains {
                    $0.payloadType == pt && $0.encodingName.lowercased() == "opus" && $0.clockRate == 48_000 && $0.channels == 2
                }
            }
        }

        /// The `a=fmtp` text of the Opus payload type.
        public var opusFmtp: String? { opusPayloadType.flatMap { fmtps[$0] } }

        /// True when the Opus payload type has generic NACK.
        public var opusNack: Bool { opusPayloadType.map { nackPayloadTypes.contains($0) } ?? false }

        /// Reads `kind port proto fmt…` (RFC 8866 §5.14). A port count (`9/2`) is `bad_sdp`.
        init(mediaLine: Substring) throws(WebRTCError) {
            let fields = SDPSyntax.fields(mediaLine)
            guard fields.count >= 4 else { throw SDPSyntax.bad("an m= line needs a kind, port, protocol and a format") }
            guard SDPSyntax.isIdentifier(fields[0]) else { throw SDPSyntax.bad("m= media kind must be 1-32 of [A-Za-z0-9-_.]") }
            guard let port = SDPSyntax.decimal(fields[1], as: UInt16.self) else { throw SDPSyntax.bad("m= port is not a number of 0-65535") }
            guard SDPSyntax.isProto(fields[2]) else { throw SDPSyntax.bad("m= protocol must be 1-64 of [A-Za-z0-9/_.-]") }
            for format in fields[3...] where !SDPSyntax.isIdentifier(format) {
                throw SDPSyntax.bad("m= format must be 1-32 of [A-Za-z0-9-_.]")
            }
            kind = String(fields[0])
            self.port = port
            proto = String(fields[2])
            formats = fields[3...].map(String.init)
            direction = .sendrecv
            bundleOnly = false
            rtcpMux = false
            rtcpRsize = false
            rtpmaps = []
            fmtps = [:]
            nackPayloadTypes = []
            ssrcs = []
        }

        /// Reads one media-level attribute.
        mutating func apply(_ name: Substring, _ value: Substring?, unsupportedAlgorithm: inout String?) throws(WebRTCError) {
            switch name {
            case "mid":
                guard let value, SDPSyntax.isIdentifier(value) else { throw SDPSyntax.bad("a=mid must be 1-32 of [A-Za-z0-9-_.]") }
                guard mid == nil else { throw SDPSyntax.bad("a media section has two a=mid lines") }
                mid = String(value)
            case "sendrecv", "sendonly", "recvonly", "inactive": ownDirection = SDPDirection(rawValue: String(name))
            case "bundle-only": bundleOnly = true
            case "ice-ufrag": iceUfrag = try Self.iceString(value, name: "ice-ufrag", lengths: 4...256)
            case "ice-pwd": icePwd = try Self.iceString(value, name: "ice-pwd", lengths: 22...256)
            case "fingerprint":
                if let bytes = try Self.sha256Fingerprint(value, unsupportedAlgorithm: &unsupportedAlgorithm), fingerprint == nil {
                    fingerprint = bytes
                }
            case "setup": setup = try Self.setup(value)
            case "rtcp-mux": rtcpMux = true
            case "rtcp-rsize": rtcpRsize = true
            case "msid": msid = value.map(String.init)
            case "rtpmap" where isRTP: rtpmaps.append(try RTPMap(value ?? ""))
            case "fmtp" where isRTP:
                guard let value, let space = value.firstIndex(of: " "),
                      let pt = SDPSyntax.decimal(value[..<space], as: UInt8.self), pt < 128
                else { throw SDPSyntax.bad("a=fmtp needs a payload type and parameters") }
                if fmtps[pt] == nil { fmtps[pt] = String(value[value.index(after: space)...]) }
            case "rtcp-fb" where isRTP:
                let fields = SDPSyntax.fields(value ?? "")
                guard fields.count >= 2 else { throw SDPSyntax.bad("a=rtcp-fb needs a payload type and a feedback type") }
                guard fields.count == 2, fields[1] == "nack" else { return } // transport-cc, nack pli, ccm fir, …
                if fields[0] == "*" {
                    nackPayloadTypes.formUnion(payloadTypes)
                } else if let pt = SDPSyntax.decimal(fields[0], as: UInt8.self), pt < 128 {
                    nackPayloadTypes.insert(pt)
                } else {
                    throw SDPSyntax.bad("a=rtcp-fb payload type is not 0-127 or *")
                }
            case "extmap" where isRTP: try applyExtmap(value ?? "")
            case "ssrc" where isRTP:
                guard let value, let ssrc = SDPSyntax.decimal(value.prefix { $0 != " " }, as: UInt32.self) else {
                    throw SDPSyntax.bad("a=ssrc needs an SSRC of 0-4294967295")
                }
                if !ssrcs.contains(ssrc) { ssrcs.append(ssrc) }
            default:
                break
            }
        }

        /// `a=extmap:ID[/direction] URI [attributes]` (RFC 8285 §8).
        private mutating func applyExtmap(_ value: Substring) throws(WebRTCError) {
            let fields = SDPSyntax.fields(value)
            guard fields.count >= 2 else { throw SDPSyntax.bad("a=extmap needs an ID and a URI") }
            let idAndDirection = fields[0].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let id = SDPSyntax.decimal(idAndDirection[0], as: UInt16.self), (1...255).contains(id) else {
                throw SDPSyntax.bad("a=extmap ID must be 1-255")
            }
            if idAndDirection.count == 2, SDPDirection(rawValue: String(idAndDirection[1])) == nil {
                throw SDPSyntax.bad("a=extmap direction must be sendrecv, sendonly, recvonly or inactive")
            }
            guard extensionIDs.insert(id).inserted else { throw SDPSyntax.bad("a=extmap ID \(id) is mapped twice") }
            guard id <= 14 else { return }
            switch fields[1] {
            case "urn:ietf:params:rtp-hdrext:ssrc-audio-level": audioLevelExtensionID = UInt8(id)
            case "urn:ietf:params:rtp-hdrext:csrc-audio-level": csrcAudioLevelExtensionID = UInt8(id)
            case "urn:ietf:params:rtp-hdrext:sdes:mid": midExtensionID = UInt8(id)
            default: break
            }
        }

        /// An `ice-ufrag` or `ice-pwd` value (RFC 8839 §5.4: ice-chars, ufrag 4-256, pwd 22-256).
        static func iceString(_ value: Substring?, name: String, lengths: ClosedRange<Int>) throws(WebRTCError) -> String {
            guard let value, SDPSyntax.isICEString(value, lengths) else {
                throw SDPSyntax.bad("a=\(name) must be \(lengths.lowerBound)-\(lengths.upperBound) of [A-Za-z0-9+/]")
            }
            return String(value)
        }

        /// The 32 bytes of a `sha-256` fingerprint; nil for another hash algorithm, whose name goes to
        /// `unsupportedAlgorithm` (the first one seen) for `audioSections()`'s error.
        static func sha256Fingerprint(_ value: Substring?, unsupportedAlgorithm: inout String?) throws(WebRTCError) -> [UInt8]? {
            let fields = SDPSyntax.fields(value ?? "")
            guard fields.count == 2 else { throw WebRTCError("bad_fingerprint", "a=fingerprint needs a hash algorithm and a value") }
            guard fields[0].lowercased() == "sha-256" else {
                if unsupportedAlgorithm == nil {
                    unsupportedAlgorithm = SDPSyntax.isIdentifier(fields[0]) ? String(fields[0]) : "another algorithm"
                }
                return nil
            }
            guard let bytes = SDPSyntax.fingerprintBytes(fields[1], count: 32) else {
                throw WebRTCError("bad_fingerprint", "a sha-256 fingerprint is 32 hex bytes separated by colons")
            }
            return bytes
        }

        /// An `a=setup` value.
        static func setup(_ value: Substring?) throws(WebRTCError) -> SDPSetup {
            guard let value, let setup = SDPSetup(rawValue: String(value)) else {
                throw SDPSyntax.bad("a=setup must be actpass, active, passive or holdconn")
            }
            return setup
        }
    }

    /// `a=rtpmap:PT name/clock[/channels]` (RFC 8866 §6.6).
    public struct RTPMap: Equatable, Sendable {
        /// The payload type, 0-127.
        public var payloadType: UInt8
        /// The encoding name as written (`opus`, `PCMU`, `telephone-event`, …).
        public var encodingName: String
        /// The RTP clock rate.
        public var clockRate: UInt32
        /// The channel count, when given.
        public var channels: UInt8?

        /// Reads the value of an `a=rtpmap` line.
        init(_ value: Substring) throws(WebRTCError) {
            let fields = SDPSyntax.fields(value)
            guard fields.count == 2, let pt = SDPSyntax.decimal(fields[0], as: UInt8.self), pt < 128 else {
                throw SDPSyntax.bad("a=rtpmap needs a payload type of 0-127 and an encoding")
            }
            let parts = fields[1].split(separator: "/", omittingEmptySubsequences: false)
            guard (2...3).contains(parts.count), SDPSyntax.isIdentifier(parts[0]),
                  let clock = SDPSyntax.decimal(parts[1], as: UInt32.self)
            else { throw SDPSyntax.bad("a=rtpmap encoding must be name/clock-rate[/channels]") }
            var channels: UInt8?
            if parts.count == 3 {
                guard let count = SDPSyntax.decimal(parts[2], as: UInt8.self) else {
                    throw SDPSyntax.bad("a=rtpmap channel count is not a number")
                }
                channels = count
            }
            payloadType = pt
            encodingName = String(parts[0])
            clockRate = clock
            self.channels = channels
        }
    }
}
