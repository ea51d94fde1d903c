import Testing
import ParleyWire
@testable import ParleyWebRTC

@Suite("SDP answer: what the relay writes back")
struct SDPAnswerTests {
    static let ufrag = "R3layUfr"
    static let pwd = "Wh4tEv3rTheRelayPicks22x"
    static let fingerprint = (0..<32).map { UInt8($0) }
    static let host = PeerAddress(ipv4: 203, 0, 113, 5, port: 3478)

    /// The answer to `offer` accepting `sections`.
    static func answer(_ offer: String, _ sections: [SDPAnswer.Section], candidate: PeerAddress = host,
                       also: [PeerAddress] = []) throws -> SDPAnswer {
        try SDPAnswer(offer: try SDPOffer(parsing: offer), iceUfrag: ufrag, icePwd: pwd, fingerprint: fingerprint,
                      candidates: [candidate] + also, sessionID: 1_234_567_890_123, sections: sections)
    }

    static func section(_ mid: String, _ direction: SDPDirection = .sendrecv) -> SDPAnswer.Section {
        SDPAnswer.Section(mid: mid, direction: direction, ssrc: 1_352_739_644, cname: "r7Kd2Qx9")
    }

    @Test("the answer to Chrome's offer, line by line")
    func chromeAnswer() throws {
        let answer = try Self.answer(chromeOffer, [Self.section("0")])
        let expected = [
            "v=0",
            "o=- 1234567890123 2 IN IP4 127.0.0.1",
            "s=-",
            "t=0 0",
            "a=group:BUNDLE 0",
            "a=ice-lite",
            "m=audio 9 UDP/TLS/RTP/SAVPF 111",
            "c=IN IP4 0.0.0.0",
            "a=candidate:1 1 udp 2130706431 203.0.113.5 3478 typ host",
            "a=end-of-candidates",
            "a=ice-ufrag:R3layUfr",
            "a=ice-pwd:Wh4tEv3rTheRelayPicks22x",
            "a=fingerprint:sha-256 00:01:02:03:04:05:06:07:08:09:0A:0B:0C:0D:0E:0F:10:11:12:13:14:15:16:17:18:19:1A:1B:1C:1D:1E:1F",
            "a=setup:passive",
            "a=mid:0",
            "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
            "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid",
            "a=sendrecv",
            "a=msid:parley-r7Kd2Qx9 audio-0",
            "a=rtcp-mux",
            "a=rtpmap:111 opus/48000/2",
            "a=fmtp:111 minptime=10;useinbandfec=1;stereo=0;sprop-stereo=0;maxaveragebitrate=56000",
            "a=ssrc:1352739644 cname:r7Kd2Qx9",
        ]
        #expect(answer.text == expected.joined(separator: "\r\n") + "\r\n")
        #expect(answer.acceptedMids == ["0"])
    }

    @Test("the answer re-parses with the offer parser: ICE-lite, passive, the relay's credentials and fingerprint")
    func reparses() throws {
        let answer = try Self.answer(chromeOffer, [Self.section("0")])
        let parsed = try SDPOffer(parsing: answer.text)
        #expect(parsed.iceLite && parsed.bundle == ["0"])
        let audio = parsed.media[0]
        #expect(audio.mid == "0" && audio.port == 9 && audio.formats == ["111"] && audio.opusPayloadType == 111)
        #expect(audio.iceUfrag == Self.ufrag && audio.icePwd == Self.pwd && audio.fingerprint == Self.fingerprint)
        #expect(audio.setup == .passive && audio.rtcpMux && !audio.rtcpRsize)
        #expect(audio.audioLevelExtensionID == 1 && audio.midExtensionID == 4)
        #expect(audio.ssrcs == [1_352_739_644] && audio.msid == "parley-r7Kd2Qx9 audio-0")
        #expect(audio.opusFmtp == SDPAnswer.opusParameters && !audio.opusNack)
    }

    @Test("Firefox: Opus at 109, audio level at 1, mid at 3; csrc-audio-level is not answered")
    func firefoxAnswer() throws {
        let text = try Self.answer(firefoxOffer, [Self.section("0")]).text
        let lines = text.split(separator: "\r\n").map(String.init)
        #expect(lines.contains("m=audio 9 UDP/TLS/RTP/SAVPF 109"))
        #expect(lines.contains("a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level"))
        #expect(lines.contains("a=extmap:3 urn:ietf:params:rtp-hdrext:sdes:mid"))
        #expect(!text.contains("csrc-audio-level"))
        #expect(lines.contains("a=fmtp:109 minptime=10;useinbandfec=1;stereo=0;sprop-stereo=0;maxaveragebitrate=56000"))
    }

    @Test("NACK is answered only when offered for Opus")
    func nack() throws {
        let offered = try Self.answer(chromeOffer(appending: ["a=rtcp-fb:111 nack"]), [Self.section("0")]).text
        #expect(offered.contains("a=rtcp-fb:111 nack\r\na=fmtp:111"))
        let pliOnly = try Self.answer(chromeOffer(appending: ["a=rtcp-fb:111 nack pli"]), [Self.section("0")]).text
        #expect(!pliOnly.contains("rtcp-fb"))
    }

    @Test("video and data channel are rejected with port 0, their formats and mid; BUNDLE keeps the audio")
    func rejectsOthers() throws {
        let answer = try Self.answer(audioVideoDataOffer, [Self.section("0")])
        let text = answer.text
        #expect(text.contains("a=group:BUNDLE 0\r\n"))
        #expect(text.contains("\r\nm=video 0 UDP/TLS/RTP/SAVPF 96 97 102\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=inactive\r\n"))
        #expect(text.hasSuffix("\r\nm=application 0 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:2\r\na=inactive\r\n"))
        let parsed = try SDPOffer(parsing: text)
        #expect(parsed.media.map(\.port) == [9, 0, 0] && parsed.media.map(\.mid) == ["0", "1", "2"])
        #expect(parsed.media[1].isRejected && parsed.media[2].isRejected)
    }

    /// Two bundled audio sections, as a client with two microphones (or one that sends and one that receives) offers.
    static let twoAudio = chromeOffer {
        $0.map { $0 == "a=group:BUNDLE 0" ? "a=group:BUNDLE 0 1" : $0 }
            + Array($0[7...]).map { $0 == "a=mid:0" ? "a=mid:1" : $0 == "a=sendrecv" ? "a=recvonly" : $0 }
    }

    @Test("of two audio sections the caller takes one: the other is rejected and out of BUNDLE; or both, bundled")
    func twoAudioSections() throws {
        let one = try Self.answer(Self.twoAudio, [Self.section("1", .sendonly)])
        #expect(one.acceptedMids == ["1"])
        #expect(one.text.contains("a=group:BUNDLE 1\r\n"))
        #expect(one.text.contains("m=audio 0 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n"))
        let both = try Self.answer(Self.twoAudio, [Self.section("1", .sendonly), Self.section("0", .recvonly)])
        #expect(both.acceptedMids == ["0", "1"])
        #expect(both.text.contains("a=group:BUNDLE 0 1\r\n"))
        #expect(both.text.components("a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid") == 2)
    }

    /// (offered direction, the relay's wish, answered direction) — RFC 3264 §6.1.
    static let directions: [(SDPDirection, SDPDirection, SDPDirection)] = [
        (.sendrecv, .sendrecv, .sendrecv),
        (.sendrecv, .recvonly, .recvonly),
        (.sendrecv, .sendonly, .sendonly),
        (.sendrecv, .inactive, .inactive),
        (.recvonly, .sendrecv, .sendonly),
        (.recvonly, .recvonly, .inactive),
        (.sendonly, .sendrecv, .recvonly),
        (.sendonly, .sendonly, .inactive),
        (.inactive, .sendrecv, .inactive),
    ]

    @Test("answered direction, with msid and ssrc exactly when the relay sends", arguments: directions)
    func direction(offered: SDPDirection, wanted: SDPDirection, answered: SDPDirection) throws {
        let offer = chromeOffer(replacing: "a=sendrecv", with: "a=\(offered.rawValue)")
        let text = try Self.answer(offer, [Self.section("0", wanted)]).text
        let parsed = try SDPOffer(parsing: text).media[0]
        #expect(parsed.direction == answered)
        #expect(text.contains("a=msid:") == answered.sends)
        #expect(text.contains("a=ssrc:") == answered.sends)
    }

    @Test("an IPv6 host candidate is written without brackets")
    func ipv6Candidate() throws {
        let text = try Self.answer(chromeOffer, [Self.section("0")], candidate: PeerAddress(parsing: "[2001:db8::5]:3478")!).text
        #expect(text.contains("a=candidate:1 1 udp 2130706431 2001:db8::5 3478 typ host\r\n"))
    }

    @Test("several addresses: one host candidate each, in order, priorities falling (RFC 8445 §5.1.2.1), in every section")
    func severalCandidates() throws {
        let v6 = try #require(PeerAddress(parsing: "[2001:db8::5]:3478"))
        let text = try Self.answer(chromeOffer, [Self.section("0")], also: [v6]).text
        let lines = text.components(separatedBy: "\r\n").filter { $0.hasPrefix("a=candidate:") }
        #expect(lines == ["a=candidate:1 1 udp 2130706431 203.0.113.5 3478 typ host",
                          "a=candidate:2 1 udp 2130706175 2001:db8::5 3478 typ host"])
        #expect(throws: WebRTCError.self) {
            _ = try SDPAnswer(offer: SDPOffer(parsing: chromeOffer), iceUfrag: "abcd", icePwd: String(repeating: "p", count: 22),
                              fingerprint: [UInt8](repeating: 1, count: 32), candidates: [], sessionID: 1, sections: [Self.section("0")])
        }
    }

    @Test("nothing accepted: every section rejected, no BUNDLE group")
    func nothingAccepted() throws {
        let answer = try Self.answer(chromeOffer, [])
        #expect(answer.acceptedMids.isEmpty && !answer.text.contains("a=group"))
        #expect(answer.text.contains("m=audio 0 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126\r\n"))
    }

    static let badAnswers: [(String, String, [SDPAnswer.Section])] = [
        ("video mid", audioVideoDataOffer, [section("1")]),
        ("unknown mid", chromeOffer, [section("9")]),
        ("mid twice", twoAudio, [section("0"), section("0")]),
        ("audio without Opus", chromeOffer { $0.filter { !$0.contains("opus") } }, [section("0")]),
        ("rejected audio", chromeOffer(replacing: "m=audio", with: "m=audio 0 UDP/TLS/RTP/SAVPF 111"), [section("0")]),
        ("CNAME with a space", chromeOffer, [SDPAnswer.Section(mid: "0", direction: .sendrecv, ssrc: 1, cname: "a b")]),
        ("CNAME with CRLF", chromeOffer, [SDPAnswer.Section(mid: "0", direction: .sendrecv, ssrc: 1, cname: "x\r\na=evil")]),
        ("two sections without BUNDLE", twoAudio.replacingFirst("a=group:BUNDLE 0 1\r\n", with: ""), [section("0"), section("1")]),
        ("mid outside BUNDLE", chromeOffer { $0 + Array($0[7...]).map { $0 == "a=mid:0" ? "a=mid:1" : $0 } }, [section("1")]),
    ]

    @Test("bad decisions throw bad_answer", arguments: badAnswers)
    func badDecision(name: String, offer: String, sections: [SDPAnswer.Section]) {
        #expect(errorCode { try Self.answer(offer, sections) } == "bad_answer", "\(name)")
    }

    @Test("bad local values throw bad_answer")
    func badLocalValues() throws {
        let offer = try SDPOffer(parsing: chromeOffer)
        func build(ufrag: String = Self.ufrag, pwd: String = Self.pwd, fingerprint: [UInt8] = Self.fingerprint) -> String? {
            errorCode {
                try SDPAnswer(offer: offer, iceUfrag: ufrag, icePwd: pwd, fingerprint: fingerprint, candidates: [Self.host],
                              sessionID: 1, sections: [Self.section("0")])
            }
        }
        #expect(build() == nil)
        #expect(build(ufrag: "abc") == "bad_answer")
        #expect(build(ufrag: "ab\r\ncd") == "bad_answer")
        #expect(build(pwd: String(Self.pwd.prefix(21))) == "bad_answer")
        #expect(build(fingerprint: Array(Self.fingerprint.prefix(31))) == "bad_answer")
    }

    @Test("nothing the offer wrote reaches the answer but mids, kinds, protocols, formats and numbers")
    func noInjection() throws {
        let text = try Self.answer(audioVideoDataOffer, [Self.section("0")]).text
        let offerOnly = ["Xq3F", "c3R8kT1pWm6vN0bYh2LsQe9z", "5A:1F", "7b2f1c3e", "Lx9nQ2wR7tY4vB1s", "abs-send-time",
                         "transport-wide-cc", "toffset", "useinbandfec=1\r", "111/111", "sctp-port", "extmap-allow-mixed",
                         "rtcp-rsize", "trickle", "1001211346", "telephone-event", "VP8", "actpass"]
        for fragment in offerOnly {
            #expect(!text.contains(fragment), "\(fragment) leaked into the answer")
        }
        let allowed = ["v=", "o=", "s=", "t=", "m=", "c=", "a=group:", "a=ice-lite", "a=candidate:", "a=end-of-candidates",
                       "a=ice-ufrag:", "a=ice-pwd:", "a=fingerprint:", "a=setup:", "a=mid:", "a=extmap:", "a=sendrecv",
                       "a=sendonly", "a=recvonly", "a=inactive", "a=msid:", "a=rtcp-mux", "a=rtpmap:", "a=rtcp-fb:",
                       "a=fmtp:", "a=ssrc:"]
        for line in text.split(separator: "\r\n") {
            #expect(allowed.contains { line.hasPrefix($0) }, "unexpected line \(line)")
            #expect(line.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, "non-printable byte in \(line)")
        }
    }

    @Test("random ICE credentials: 8 and 24 ice-chars, from the generator passed in")
    func randomCredentials() {
        var generator = SeededRandomNumberGenerator(seed: 7)
        let first = SDPAnswer.randomICECredentials(using: &generator)
        let second = SDPAnswer.randomICECredentials(using: &generator)
        #expect(first.ufrag.count == 8 && first.pwd.count == 24)
        #expect(first != second)
        let iceChars = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        #expect((first.ufrag + first.pwd + second.ufrag + second.pwd).allSatisfy { iceChars.contains($0) })
        var same = SeededRandomNumberGenerator(seed: 7)
        #expect(SDPAnswer.randomICECredentials(using: &same) == first)
        // They are accepted by the answer and by the parser of the answer.
        #expect(errorCode {
            try SDPOffer(parsing: try SDPAnswer(offer: try SDPOffer(parsing: chromeOffer), iceUfrag: first.ufrag, icePwd: first.pwd,
                                                fingerprint: Self.fingerprint, candidates: [Self.host], sessionID: 1,
                                                sections: [Self.section("0")]).text)
        } == nil)
    }
}

extension String {
    /// How many times `fragment` occurs in `self`.
    func components(_ fragment: String) -> Int { ranges(of: fragment).count }
}
