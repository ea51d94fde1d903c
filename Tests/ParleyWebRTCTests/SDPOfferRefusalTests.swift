import Testing
@testable import ParleyWebRTC

@Suite("SDP offer: every refusal has its code")
struct SDPOfferRefusalTests {
    /// Offers `SDPOffer(parsing:)` refuses, with the code.
    static let unparsable: [(String, String, String)] = [
        // syntax
        ("no v=0 first", chromeOffer(without: "v=0"), "bad_sdp"),
        ("v=1", chromeOffer(replacing: "v=0", with: "v=1"), "bad_sdp"),
        ("empty", "", "bad_sdp"),
        ("a line without =", chromeOffer(appending: ["a"]), "bad_sdp"),
        ("an uppercase type", chromeOffer(appending: ["A=rtcp-mux"]), "bad_sdp"),
        ("a lone CR inside a line", chromeOffer(appending: ["a=msid:x\ra=evil"]), "bad_sdp"),
        ("a NUL inside a line", chromeOffer(appending: ["a=msid:x\u{0}y"]), "bad_sdp"),
        ("mid with a space", chromeOffer(replacing: "a=mid:", with: "a=mid:0 1"), "bad_sdp"),
        ("mid with a semicolon", chromeOffer(replacing: "a=mid:", with: "a=mid:0;x"), "bad_sdp"),
        ("mid of 33 characters", chromeOffer(replacing: "a=mid:", with: "a=mid:" + String(repeating: "m", count: 33)), "bad_sdp"),
        ("mid not ASCII", chromeOffer(replacing: "a=mid:", with: "a=mid:é"), "bad_sdp"),
        ("empty mid", chromeOffer(replacing: "a=mid:", with: "a=mid:"), "bad_sdp"),
        ("two mids in a section", chromeOffer(appending: ["a=mid:1"]), "bad_sdp"),
        ("one mid in two sections", chromeOffer(appending: ["m=audio 9 UDP/TLS/RTP/SAVPF 111", "a=mid:0"]), "bad_sdp"),
        ("BUNDLE names a missing mid", chromeOffer(replacing: "a=group:BUNDLE", with: "a=group:BUNDLE 0 7"), "bad_sdp"),
        ("BUNDLE mid with a bad character", chromeOffer(replacing: "a=group:BUNDLE", with: "a=group:BUNDLE 0 <x>"), "bad_sdp"),
        ("port with a count", chromeOffer(replacing: "m=audio", with: "m=audio 9/2 UDP/TLS/RTP/SAVPF 111"), "bad_sdp"),
        ("port past 65535", chromeOffer(replacing: "m=audio", with: "m=audio 70000 UDP/TLS/RTP/SAVPF 111"), "bad_sdp"),
        ("m= line without formats", chromeOffer(replacing: "m=audio", with: "m=audio 9 UDP/TLS/RTP/SAVPF"), "bad_sdp"),
        ("format with markup", chromeOffer(replacing: "m=audio", with: "m=audio 9 UDP/TLS/RTP/SAVPF 111 <b>"), "bad_sdp"),
        ("protocol with a quote", chromeOffer(replacing: "m=audio", with: "m=audio 9 UDP/\"TLS 111"), "bad_sdp"),
        ("kind with a colon", chromeOffer(replacing: "m=audio", with: "m=au:dio 9 UDP/TLS/RTP/SAVPF 111"), "bad_sdp"),
        ("rtpmap without clock", chromeOffer(replacing: "a=rtpmap:111", with: "a=rtpmap:111 opus"), "bad_sdp"),
        ("rtpmap payload type 128", chromeOffer(replacing: "a=rtpmap:111", with: "a=rtpmap:128 opus/48000/2"), "bad_sdp"),
        ("rtpmap payload type signed", chromeOffer(replacing: "a=rtpmap:111", with: "a=rtpmap:+111 opus/48000/2"), "bad_sdp"),
        ("extmap ID 0", chromeOffer(replacing: "a=extmap:1 ", with: "a=extmap:0 urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad_sdp"),
        ("extmap ID 256", chromeOffer(replacing: "a=extmap:1 ", with: "a=extmap:256 urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad_sdp"),
        ("extmap ID mapped twice", chromeOffer(replacing: "a=extmap:4 ", with: "a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid"), "bad_sdp"),
        ("extmap bad direction", chromeOffer(replacing: "a=extmap:1 ", with: "a=extmap:1/sideways urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad_sdp"),
        ("ssrc not a number", chromeOffer(appending: ["a=ssrc:-1 cname:x"]), "bad_sdp"),
        ("ice-ufrag of 3 characters", chromeOffer(replacing: "a=ice-ufrag:", with: "a=ice-ufrag:Xq3"), "bad_sdp"),
        ("ice-ufrag with a dash", chromeOffer(replacing: "a=ice-ufrag:", with: "a=ice-ufrag:Xq-3F"), "bad_sdp"),
        ("ice-pwd of 21 characters", chromeOffer(replacing: "a=ice-pwd:", with: "a=ice-pwd:c3R8kT1pWm6vN0bYh2LsQ"), "bad_sdp"),
        ("setup unknown", chromeOffer(replacing: "a=setup:", with: "a=setup:whatever"), "bad_sdp"),
        // fingerprints
        ("sha-256 of 31 bytes", chromeOffer(replacing: "a=fingerprint:", with: "a=fingerprint:sha-256 " + Array(repeating: "AB", count: 31).joined(separator: ":")), "bad_fingerprint"),
        ("sha-256 not hex", chromeOffer(replacing: "a=fingerprint:", with: "a=fingerprint:sha-256 " + Array(repeating: "GG", count: 32).joined(separator: ":")), "bad_fingerprint"),
        ("sha-256 with a sign", chromeOffer(replacing: "a=fingerprint:", with: "a=fingerprint:sha-256 +A:" + Array(repeating: "AB", count: 31).joined(separator: ":")), "bad_fingerprint"),
        ("fingerprint without value", chromeOffer(replacing: "a=fingerprint:", with: "a=fingerprint:sha-256"), "bad_fingerprint"),
        // limits
        ("larger than 64 KiB", chromeOffer + String(repeating: "a=x-padding:" + String(repeating: "p", count: 1000) + "\r\n", count: 66), "too_large"),
        ("17 media sections", chromeOffer(appending: (1...16).flatMap { ["m=video 0 UDP/TLS/RTP/SAVPF 96", "a=mid:v\($0)"] }), "too_large"),
        ("a line of 4097 bytes", chromeOffer(appending: ["a=x-long:" + String(repeating: "l", count: 4088)]), "too_large"),
    ]

    @Test("unparsable offers", arguments: unparsable)
    func unparsableOffer(name: String, text: String, code: String) {
        #expect(errorCode { try SDPOffer(parsing: text) } == code, "\(name)")
    }

    /// Offers that parse but that the relay cannot answer, with the code `audioSections()` throws.
    static let unanswerable: [(String, String, String)] = [
        ("video only", audioVideoDataOffer.dropChromeAudio(), "no_audio"),
        ("audio rejected (port 0)", chromeOffer(replacing: "m=audio", with: "m=audio 0 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126"), "no_audio"),
        ("no Opus", chromeOffer { $0.filter { !$0.contains("opus") } }, "no_opus"),
        ("Opus mono (RFC 7587 says /2)", chromeOffer(replacing: "a=rtpmap:111", with: "a=rtpmap:111 opus/48000/1"), "no_opus"),
        ("Opus not on the m= line", chromeOffer(replacing: "m=audio", with: "m=audio 9 UDP/TLS/RTP/SAVPF 63 9 0 8 13 110 126"), "no_opus"),
        ("Opus at 16 kHz", chromeOffer(replacing: "a=rtpmap:111", with: "a=rtpmap:111 opus/16000/2"), "no_opus"),
        ("no ice-ufrag", chromeOffer(without: "a=ice-ufrag:"), "no_ice_credentials"),
        ("no ice-pwd", chromeOffer(without: "a=ice-pwd:"), "no_ice_credentials"),
        ("no fingerprint", chromeOffer(without: "a=fingerprint:"), "no_fingerprint"),
        ("sha-1 fingerprint only", chromeOffer(replacing: "a=fingerprint:", with: "a=fingerprint:sha-1 " + Array(repeating: "AB", count: 20).joined(separator: ":")), "bad_fingerprint"),
        ("setup passive", chromeOffer(replacing: "a=setup:", with: "a=setup:passive"), "unsupported_setup"),
        ("setup holdconn", chromeOffer(replacing: "a=setup:", with: "a=setup:holdconn"), "unsupported_setup"),
        ("no rtcp-mux", chromeOffer(without: "a=rtcp-mux"), "no_rtcp_mux"),
        ("no mid", chromeOffer { $0.filter { !$0.hasPrefix("a=mid:") && !$0.hasPrefix("a=group:") } }, "bad_sdp"),
    ]

    @Test("offers the relay cannot answer", arguments: unanswerable)
    func unanswerableOffer(name: String, text: String, code: String) throws {
        let offer = try SDPOffer(parsing: text)
        #expect(errorCode { try offer.audioSections() } == code, "\(name)")
    }

    @Test("reasons read as the codes promise")
    func reasons() throws {
        let video = try SDPOffer(parsing: audioVideoDataOffer.dropChromeAudio())
        #expect(throws: WebRTCError("no_audio", "the offer has no audio section")) { try video.audioSections() }
        let noOpus = try SDPOffer(parsing: chromeOffer { $0.filter { !$0.contains("opus") } })
        #expect(throws: WebRTCError("no_opus", "the offer's audio does not include Opus at 48 kHz")) { try noOpus.audioSections() }
        let sha1 = try SDPOffer(parsing: chromeOffer(replacing: "a=fingerprint:", with: "a=fingerprint:SHA-1 " + Array(repeating: "AB", count: 20).joined(separator: ":")))
        #expect(throws: WebRTCError("bad_fingerprint", "only sha-256 certificate fingerprints are supported, the offer has SHA-1")) { try sha1.audioSections() }
    }

    @Test("a sha-1 fingerprint beside a sha-256 one is ignored; setup active and absent are accepted")
    func tolerated() throws {
        let both = try SDPOffer(parsing: chromeOffer { $0.flatMap { $0.hasPrefix("a=fingerprint:") ? ["a=fingerprint:sha-1 " + Array(repeating: "AB", count: 20).joined(separator: ":"), $0] : [$0] } })
        #expect(try both.audioSections().first?.fingerprint == chromeFingerprint)
        #expect(try SDPOffer(parsing: chromeOffer(replacing: "a=setup:", with: "a=setup:active")).audioSections().count == 1)
        #expect(try SDPOffer(parsing: chromeOffer(without: "a=setup:")).audioSections().count == 1)
        // Exactly at the limits.
        let sixteen = chromeOffer(appending: (1...15).flatMap { ["m=video 0 UDP/TLS/RTP/SAVPF 96", "a=mid:v\($0)"] })
        #expect(try SDPOffer(parsing: sixteen).media.count == 16)
        #expect(try SDPOffer(parsing: chromeOffer(appending: ["a=x-long:" + String(repeating: "l", count: 4087)])).media.count == 1)
        let mid32 = String(repeating: "m", count: 32)
        let long = chromeOffer { $0.map { $0 == "a=mid:0" ? "a=mid:" + mid32 : $0 == "a=group:BUNDLE 0" ? "a=group:BUNDLE " + mid32 : $0 } }
        #expect(try SDPOffer(parsing: long).media[0].mid == mid32)
    }
}

extension String {
    /// The audio+video+data offer without its audio section and with BUNDLE 1 2.
    func dropChromeAudio() -> String {
        var lines = split(separator: "\r\n").map(String.init)
        let start = lines.firstIndex { $0.hasPrefix("m=audio") }!
        let end = lines.firstIndex { $0.hasPrefix("m=video") }!
        lines.removeSubrange(start..<end)
        return lines.map { $0 == "a=group:BUNDLE 0 1 2" ? "a=group:BUNDLE 1 2" : $0 }.joined(separator: "\r\n") + "\r\n"
    }
}
