// libFuzzer target for SDP offers (Sources/ParleyWebRTC/SDPOffer*.swift, SDPSyntax) and the answers built from them.
// The input is decoded as the HTTP route decodes a request body (`String(decoding:as: UTF8.self)`: invalid UTF-8
// becomes U+FFFD), then `SDPOffer(parsing:)`; an accepted offer's values must lie within the bounds its parser
// documents (the character sets of everything an answer echoes, the counts, the ranges). `audioSections()` follows,
// and for an offer the relay can answer, `SDPAnswer` with the sections the route would choose: it must refuse exactly
// when its documented rules say, and an answer it writes must be plain CRLF text that the offer parser reads back
// section by section.
//
// Compiled by Tests/Fuzz/run.sh together with Sources/ParleyWebRTC/*.swift and Sources/ParleyWire/*.swift into one
// module named ParleyWire (the files' own `import ParleyWire` is then ignored; internal API is visible), with
// `-I Sources/COpenSSL -lssl -lcrypto` for the module's DTLS and STUN files. Invariant violations trap through
// `precondition`.

private let ufrag = "R3layUfr"
private let pwd = "Wh4tEv3rTheRelayPicks22x"
private let fingerprint = (0..<32).map { UInt8($0) }
private let candidates = [PeerAddress(ipv4: 203, 0, 113, 5, port: 3478),
                          PeerAddress(high: 0x2001_0db8_0000_0000, low: 0x0000_0000_0000_0005, port: 3478)]
private let cname = "r7Kd2Qx9"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let offer: SDPOffer
    do { offer = try SDPOffer(parsing: text) } catch {
        precondition(["too_large", "bad_sdp", "bad_fingerprint"].contains(error.code),
                     "offer refused with \(error.code)")
        return 0
    }
    checkBounds(offer)
    let audio: [SDPOffer.Media]
    do { audio = try offer.audioSections() } catch {
        let codes = ["no_audio", "no_opus", "bad_sdp", "no_ice_credentials", "no_fingerprint", "bad_fingerprint",
                     "unsupported_setup", "no_rtcp_mux"]
        precondition(codes.contains(error.code), "audioSections refused with \(error.code)")
        return 0
    }
    checkAnswerable(audio, of: offer)

    // The route's choice: the first section as offered, then receive-only ones as further forwarding slots.
    let first = SDPAnswer.Section(mid: audio[0].mid!, direction: .sendrecv, ssrc: 0x5000_0001, cname: cname)
    let extra = audio.dropFirst().filter { $0.direction == .recvonly }.prefix(3).enumerated().map { k, media in
        SDPAnswer.Section(mid: media.mid!, direction: .sendonly, ssrc: 0x5000_0002 + UInt32(k), cname: cname)
    }
    answer(offer, [first], candidate: candidates[size & 1])
    if !extra.isEmpty { answer(offer, [first] + extra, candidate: candidates[size & 1]) }
    return 0
}

/// What the parser promises of an offer it accepted.
private func checkBounds(_ offer: SDPOffer) {
    precondition(offer.media.count <= SDPOffer.maxMediaSections, "too many media sections")
    if let ufrag = offer.iceUfrag {
        precondition(SDPSyntax.isICEString(Substring(ufrag), 4...256), "session ice-ufrag")
    }
    if let pwd = offer.icePwd { precondition(SDPSyntax.isICEString(Substring(pwd), 22...256), "session ice-pwd") }
    if let fingerprint = offer.fingerprint { precondition(fingerprint.count == 32, "session fingerprint") }
    var mids: Set<String> = []
    for media in offer.media {
        precondition(SDPSyntax.isIdentifier(Substring(media.kind)), "media kind \(media.kind)")
        precondition(SDPSyntax.isProto(Substring(media.proto)), "protocol \(media.proto)")
        precondition(!media.formats.isEmpty && media.formats.allSatisfy { SDPSyntax.isIdentifier(Substring($0)) },
                     "formats")
        if let mid = media.mid {
            precondition(SDPSyntax.isIdentifier(Substring(mid)), "mid \(mid)")
            precondition(mids.insert(mid).inserted, "mid \(mid) twice")
        }
        if let ufrag = media.iceUfrag { precondition(SDPSyntax.isICEString(Substring(ufrag), 4...256), "ice-ufrag") }
        if let pwd = media.icePwd { precondition(SDPSyntax.isICEString(Substring(pwd), 22...256), "ice-pwd") }
        if let fingerprint = media.fingerprint { precondition(fingerprint.count == 32, "fingerprint") }
        for map in media.rtpmaps {
            precondition(map.payloadType < 128 && SDPSyntax.isIdentifier(Substring(map.encodingName)), "rtpmap")
        }
        precondition(media.fmtps.keys.allSatisfy { $0 < 128 } && media.nackPayloadTypes.allSatisfy { $0 < 128 },
                     "payload types")
        precondition(media.payloadTypes.allSatisfy { $0 < 128 }, "m= payload types")
        for id in [media.audioLevelExtensionID, media.csrcAudioLevelExtensionID, media.midExtensionID] {
            if let id { precondition((1...14).contains(id), "extension id \(id)") }
        }
        let ids = [media.audioLevelExtensionID, media.csrcAudioLevelExtensionID, media.midExtensionID].compactMap { $0 }
        precondition(Set(ids).count == ids.count, "one extension id for two extensions")
        precondition(Set(media.ssrcs).count == media.ssrcs.count, "an SSRC listed twice")
        if let pt = media.opusPayloadType {
            precondition(media.isRTP && media.payloadTypes.contains(pt), "Opus payload type")
        }
        if !media.isRTP {
            precondition(media.rtpmaps.isEmpty && media.fmtps.isEmpty && media.nackPayloadTypes.isEmpty
                         && media.ssrcs.isEmpty && media.audioLevelExtensionID == nil && media.midExtensionID == nil,
                         "RTP attributes outside RTP")
        }
    }
    precondition(offer.bundle.allSatisfy { mids.contains($0) }, "a BUNDLE mid names no section")
}

/// What `audioSections()` promises of each section it returns.
private func checkAnswerable(_ audio: [SDPOffer.Media], of offer: SDPOffer) {
    precondition(!audio.isEmpty, "audioSections returned none")
    for section in audio {
        precondition(offer.media.contains(section), "a section that is not the offer's")
        precondition(section.kind == "audio" && !section.isRejected && section.opusPayloadType != nil,
                     "not live audio with Opus")
        precondition(section.mid != nil && section.iceUfrag != nil && section.icePwd != nil
                     && section.fingerprint != nil, "missing value")
        precondition(section.setup == nil || section.setup == .actpass || section.setup == .active,
                     "setup \(String(describing: section.setup))")
        precondition(section.rtcpMux, "no rtcp-mux")
    }
}

/// Builds the answer accepting `sections` (audio sections of `offer`, distinct mids, a valid CNAME): it is refused
/// exactly when the sections fall outside the offer's BUNDLE group, or are several without one; else it is CRLF ASCII
/// text that parses back with every offered section answered in order.
private func answer(_ offer: SDPOffer, _ sections: [SDPAnswer.Section], candidate: PeerAddress) {
    let outsideBundle = offer.bundle.isEmpty ? sections.count > 1 : sections.contains { !offer.bundle.contains($0.mid) }
    let answer: SDPAnswer
    do {
        answer = try SDPAnswer(offer: offer, iceUfrag: ufrag, icePwd: pwd, fingerprint: fingerprint,
                               candidates: [candidate], sessionID: 1_234_567_890_123, sections: sections)
    } catch {
        precondition(outsideBundle && error.code == "bad_answer", "answer refused: \(error)")
        return
    }
    precondition(!outsideBundle, "answered sections outside the BUNDLE group")
    let accepted = sections.map(\.mid)
    precondition(answer.acceptedMids == offer.media.compactMap { $0.mid }.filter { accepted.contains($0) },
                 "accepted mids")

    var previous: UInt8 = 0
    for byte in answer.text.utf8 {
        precondition(byte < 0x80 && (byte >= 0x20 || byte == 0x0D || byte == 0x0A), "answer byte \(byte)")
        precondition((byte == 0x0A) == (previous == 0x0D), "a line end that is not CRLF")
        previous = byte
    }
    precondition(previous == 0x0A, "the answer does not end its last line")

    let parsed: SDPOffer
    do { parsed = try SDPOffer(parsing: answer.text) } catch {
        preconditionFailure("the answer does not parse: \(error)\n\(answer.text)")
    }
    precondition(parsed.iceLite, "the answer is not ICE-lite")
    precondition(parsed.bundle == (offer.bundle.isEmpty ? [] : answer.acceptedMids), "answer BUNDLE \(parsed.bundle)")
    precondition(parsed.media.count == offer.media.count,
                 "the answer has \(parsed.media.count) sections for \(offer.media.count)")
    for (mine, theirs) in zip(parsed.media, offer.media) {
        precondition(mine.mid == theirs.mid,
                     "section mid \(String(describing: mine.mid)) for \(String(describing: theirs.mid))")
        if let mid = theirs.mid, let decision = sections.first(where: { $0.mid == mid }) {
            let opus = theirs.opusPayloadType!
            precondition(mine.kind == "audio" && mine.port == 9 && mine.proto == theirs.proto,
                         "accepted section's m= line")
            precondition(mine.formats == [String(opus)] && mine.opusPayloadType == opus, "Opus")
            precondition(mine.iceUfrag == ufrag && mine.icePwd == pwd && mine.fingerprint == fingerprint
                         && mine.setup == .passive, "the relay's transport")
            precondition(mine.rtcpMux && !mine.rtcpRsize, "rtcp-mux")
            precondition(mine.audioLevelExtensionID == theirs.audioLevelExtensionID
                         && mine.midExtensionID == theirs.midExtensionID && mine.csrcAudioLevelExtensionID == nil,
                         "extensions")
            precondition(mine.opusNack == theirs.nackPayloadTypes.contains(opus), "NACK")
            let direction = SDPDirection(sends: decision.direction.sends && theirs.direction.receives,
                                         receives: decision.direction.receives && theirs.direction.sends)
            precondition(mine.direction == direction, "direction \(mine.direction), not \(direction)")
            precondition(mine.ssrcs == (direction.sends ? [decision.ssrc] : []), "SSRC")
        } else {
            precondition(mine.kind == theirs.kind && mine.port == 0 && mine.proto == theirs.proto
                         && mine.formats == theirs.formats, "rejected section's m= line")
            precondition(mine.direction == .inactive && mine.iceUfrag == nil && mine.rtpmaps.isEmpty,
                         "rejected section's attributes")
        }
    }
}
