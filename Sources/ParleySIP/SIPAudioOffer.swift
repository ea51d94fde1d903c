import ParleyWire

/// The codecs the gateway speaks to a phone: G.711 at 8 kHz (RFC 3551's static payload types).
public enum G711Law: Equatable, Sendable {
    /// µ-law (PCMU), North America and Japan.
    case mu
    /// A-law (PCMA), everywhere else.
    case a
    /// RFC 3551's payload type: PCMU 0, PCMA 8.
    public var payloadType: UInt8 { self == .mu ? 0 : 8 }
    /// The name SDP's `a=rtpmap` gives it.
    public var encodingName: String { self == .mu ? "PCMU" : "PCMA" }
}

/// What a phone's SDP offer (RFC 4566 lines, RFC 3264 offer/answer) asks for its audio, as far as the gateway needs:
/// where to send, which codec it takes — Opus straight through (RFC 7587) or G.711, whichever the phone lists first —,
/// its telephone-event payload type (RFC 4733), its direction. Only the first audio stream is used; others are
/// refused in the answer (port 0).
public struct SIPAudioOffer: Equatable, Sendable {
    /// Where the phone receives RTP (`c=` and the audio `m=` port).
    public var address: PeerAddress
    /// The G.711 the answer takes: the first of the offer's formats that is PCMU or PCMA (µ-law when it offers only
    /// Opus, unused then).
    public var law: G711Law
    /// The phone's payload type for `opus/48000/2` when the answer takes Opus: its packets go to the room and the
    /// room's to it as they are, no transcoding.
    public var opus: UInt8?
    /// The codec's name for logs: `opus`, `PCMU` or `PCMA`.
    public var codecName: String { opus == nil ? law.encodingName : "opus" }
    /// The payload type of the phone's `telephone-event/8000`, when it offered one.
    public var telephoneEvent: UInt8?
    /// `a=sendonly`/`recvonly`/`inactive` as the phone wrote it (`sendrecv` when absent): a hold is `sendonly` or
    /// `inactive` (RFC 3264 §8.4).
    public var direction: String
    /// The `m=` lines after the first audio one, for the answer to refuse each with port 0.
    public var otherMediaLines: [String]
    /// The phone's SDES key (RFC 4568) when its offer is RTP/SAVP: the call is SRTP both ways
    /// (AES_CM_128_HMAC_SHA1_80), the gateway's own key in the answer. Nil: plain RTP.
    public var srtp: SDES? = nil

    /// One `a=crypto` line the gateway takes: its tag and its `inline:` key (base64 text, checked when the call's
    /// SRTP is set up).
    public struct SDES: Equatable, Sendable {
        /// The line's tag, which the answer's line repeats.
        public var tag: Int
        /// The master key and salt, base64.
        public var key: String
        /// A line's tag and key.
        public init(tag: Int, key: String) {
            self.tag = tag
            self.key = key
        }
    }

    /// Why an offer cannot be answered: the SIP response's status and reason.
    public struct Refusal: Error, Equatable, Sendable {
        /// The SIP status (488).
        public let status: UInt16
        /// Its reason phrase, saying what was missing.
        public let reason: String
        /// A refusal with `status` and `reason`.
        public init(status: UInt16, reason: String) {
            self.status = status
            self.reason = reason
        }
    }

    /// Parses an offer; a refusal says what the answer is (488: nothing the gateway can play).
    public static func parse(_ sdp: String) -> Result<SIPAudioOffer, Refusal> {
        var sessionHost: String?, mediaHost: String?
        var port: UInt16?, profile = "", formats: [UInt8] = []
        var rtpmap: [UInt8: String] = [:]
        var direction = "sendrecv", inAudio = false, seenAudio = false
        var others: [String] = []
        var cryptos: [SDES] = []
        for raw in sdp.split(whereSeparator: \.isNewline) where raw.count >= 2 {  // "\r\n" is one Character
            let line = String(raw)
            if line.hasPrefix("m=") {
                let f = line.dropFirst(2).split(separator: " ")
                if !seenAudio, f.count >= 4, f[0] == "audio" {
                    seenAudio = true
                    inAudio = true
                    port = UInt16(f[1])
                    profile = String(f[2])
                    formats = f[3...].compactMap { UInt8($0) }.filter { $0 < 128 }
                } else {
                    inAudio = false
                    others.append(line)
                }
            } else if line.hasPrefix("c=") {
                let f = line.dropFirst(2).split(separator: " ")
                guard f.count == 3, f[0] == "IN", f[1] == "IP4" || f[1] == "IP6" else { continue }
                let host = String(f[2].split(separator: "/").first ?? "")
                if !seenAudio { sessionHost = host } else if inAudio { mediaHost = host }
            } else if inAudio, line.hasPrefix("a=crypto:") {
                if let sdes = Self.crypto(line) { cryptos.append(sdes) }
            } else if inAudio, line.hasPrefix("a=rtpmap:") {
                let f = line.dropFirst(9).split(separator: " ", maxSplits: 1)
                if f.count == 2, let pt = UInt8(f[0]) { rtpmap[pt] = f[1].lowercased() }
            } else if inAudio || !seenAudio,
                      ["a=sendrecv", "a=sendonly", "a=recvonly", "a=inactive"].contains(line) {
                direction = String(line.dropFirst(2))
            }
        }
        guard seenAudio, let port else { return .failure(Refusal(status: 488, reason: "No audio stream")) }
        let secure = profile == "RTP/SAVP" || profile == "RTP/SAVPF"
        guard profile == "RTP/AVP" || profile == "RTP/AVPF" || secure else {
            return .failure(Refusal(status: 488, reason: "Only RTP/AVP or RTP/SAVP audio (\(profile) offered)"))
        }
        guard !secure || !cryptos.isEmpty else {
            return .failure(Refusal(status: 488,
                                    reason: "No SRTP crypto the gateway takes (AES_CM_128_HMAC_SHA1_80, no MKI)"))
        }
        // Static payload types need no rtpmap; a dynamic one is known by its name.
        func name(_ pt: UInt8) -> String? {
            rtpmap[pt] ?? (pt == 0 ? "pcmu/8000" : pt == 8 ? "pcma/8000" : nil)
        }
        func isG711(_ pt: UInt8) -> Bool { name(pt) == "pcmu/8000" || name(pt) == "pcma/8000" }
        func isOpus(_ pt: UInt8) -> Bool { name(pt)?.hasPrefix("opus/48000") ?? false }
        guard let first = formats.first(where: { isG711($0) || isOpus($0) }) else {
            return .failure(Refusal(status: 488, reason: "No common codec (Opus, or PCMU or PCMA at 8000 Hz)"))
        }
        let chosen = isOpus(first) ? formats.first(where: isG711) : first
        let host = mediaHost ?? sessionHost ?? ""
        let text = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        guard let address = PeerAddress(parsing: text) ?? (port == 0 ? PeerAddress(ipv4: 0, 0, 0, 0, port: 0) : nil)
        else {
            return .failure(Refusal(status: 488, reason: "No usable connection address"))
        }
        let event = formats.first { name($0)?.hasPrefix("telephone-event/8000") ?? false }
        return .success(SIPAudioOffer(address: address, law: chosen.map { name($0) == "pcma/8000" ? .a : .mu } ?? .mu,
                                      opus: isOpus(first) ? first : nil, telephoneEvent: event, direction: direction,
                                      otherMediaLines: others, srtp: secure ? cryptos.first : nil))
    }

    /// An `a=crypto:TAG AES_CM_128_HMAC_SHA1_80 inline:KEY[|LIFETIME]` line; nil for another suite, a key with an
    /// MKI, several keys or session parameters.
    static func crypto(_ line: String) -> SDES? {
        let f = line.dropFirst(9).split(separator: " ")
        guard f.count == 3, let tag = Int(f[0]), (0...999_999_999).contains(tag), f[1] == "AES_CM_128_HMAC_SHA1_80",
              f[2].hasPrefix("inline:"), !f[2].contains(";") else { return nil }
        let parts = f[2].dropFirst(7).split(separator: "|", omittingEmptySubsequences: false)
        guard let key = parts.first, !key.isEmpty, key.count <= 64, parts.count <= 2,
              parts.dropFirst().allSatisfy({ !$0.contains(":") }) else { return nil }
        return SDES(tag: tag, key: String(key))
    }

    /// The gateway's own offer for a call it places: Opus (straight through when the phone takes it), PCMU, PCMA and
    /// telephone-event, 20 ms, both ways. The phone's answer is read with `parse` (an answer is an offer's subset,
    /// RFC 3264 §6).
    public static func offer(host: PeerAddress, port: UInt16, sessionID: UInt64) -> String {
        let family = host.isIPv4 ? "IP4" : "IP6"
        let lines = ["v=0", "o=parley \(sessionID) 1 IN \(family) \(host.bareHost)", "s=Parley",
                     "c=IN \(family) \(host.bareHost)", "t=0 0", "m=audio \(port) RTP/AVP 96 0 8 101",
                     "a=rtpmap:96 opus/48000/2", "a=fmtp:96 useinbandfec=1", "a=rtpmap:0 PCMU/8000",
                     "a=rtpmap:8 PCMA/8000", "a=rtpmap:101 telephone-event/8000",
                     "a=fmtp:101 0-15", "a=ptime:20", "a=sendrecv"]
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// The answer: the gateway's address and port, the chosen codec (and telephone-event when offered), 20 ms
    /// packets, the direction that mirrors the offer's; every other `m=` line refused with port 0.
    /// With SRTP (`srtp`), the profile is RTP/SAVP and `localKey` (the gateway's SDES key, base64) is its crypto line.
    public func answer(host: PeerAddress, port: UInt16, sessionID: UInt64, version: UInt64,
                       localKey: String? = nil) -> String {
        let family = host.isIPv4 ? "IP4" : "IP6"
        let mirrored = ["sendonly": "recvonly", "recvonly": "sendonly", "inactive": "inactive"][direction] ?? "sendrecv"
        var formats = "\(opus ?? law.payloadType)"
        if let telephoneEvent { formats += " \(telephoneEvent)" }
        var lines = ["v=0", "o=parley \(sessionID) \(version) IN \(family) \(host.bareHost)", "s=Parley",
                     "c=IN \(family) \(host.bareHost)", "t=0 0",
                     "m=audio \(port) \(srtp == nil ? "RTP/AVP" : "RTP/SAVP") \(formats)"]
        if let opus {
            lines += ["a=rtpmap:\(opus) opus/48000/2", "a=fmtp:\(opus) useinbandfec=1"]
        } else {
            lines.append("a=rtpmap:\(law.payloadType) \(law.encodingName)/8000")
        }
        if let telephoneEvent {
            lines += ["a=rtpmap:\(telephoneEvent) telephone-event/8000", "a=fmtp:\(telephoneEvent) 0-15"]
        }
        if let srtp, let localKey { lines.append("a=crypto:\(srtp.tag) AES_CM_128_HMAC_SHA1_80 inline:\(localKey)") }
        lines += ["a=ptime:20", "a=\(mirrored)"]
        for other in otherMediaLines {
            let f = other.dropFirst(2).split(separator: " ")
            if f.count >= 4 { lines.append("m=\(f[0]) 0 \(f[2]) \(f[3])") }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
