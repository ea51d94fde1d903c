import ParleySIP
import ParleyWire
import Testing

@Suite("SIP: a phone's SDP offer and the gateway's answer")
struct SIPAudioOfferTests {
    /// What baresip 1.0.0 offers (captured with `baresip -s`).
    static let baresip = """
        v=0\r
        o=- 3194351547 187236598 IN IP4 192.0.2.2\r
        s=-\r
        c=IN IP4 192.0.2.2\r
        t=0 0\r
        a=tool:baresip 1.0.0\r
        m=audio 16680 RTP/AVP 0 101\r
        a=rtpmap:0 PCMU/8000\r
        a=rtpmap:101 telephone-event/8000\r
        a=fmtp:101 0-15\r
        a=sendrecv\r
        a=label:1\r
        a=rtcp-rsize\r
        a=ssrc:3028166481 cname:sip:phone@127.0.0.1\r
        a=minptime:20\r
        a=ptime:20\r

        """

    @Test("Opus offered first is taken straight through; listed after G.711, G.711 is; the gateway offers Opus first")
    func opus() throws {
        let both = "v=0\r\nc=IN IP4 192.0.2.2\r\nt=0 0\r\nm=audio 5004 RTP/AVP 111 8 101\r\n"
            + "a=rtpmap:111 opus/48000/2\r\na=fmtp:111 stereo=1;sprop-stereo=1\r\na=rtpmap:101 telephone-event/8000\r\n"
        let offer = try SIPAudioOffer.parse(both).get()
        #expect(offer.opus == 111 && offer.law == .a && offer.codecName == "opus" && offer.telephoneEvent == 101)
        let answer = offer.answer(host: PeerAddress(ipv4: 198, 51, 100, 7, port: 0), port: 40_000, sessionID: 5,
                                  version: 2)
        #expect(answer.contains("m=audio 40000 RTP/AVP 111 101\r\na=rtpmap:111 opus/48000/2\r\n"
                                + "a=fmtp:111 useinbandfec=1\r\n"), "\(answer)")
        #expect(!answer.contains("PCMA"))
        let swapped = both.replacingOccurrences(of: "RTP/AVP 111 8", with: "RTP/AVP 8 111")
        let g711First = try SIPAudioOffer.parse(swapped).get()
        #expect(g711First.opus == nil && g711First.codecName == "PCMA")
        let opusOnly = try SIPAudioOffer.parse("v=0\nc=IN IP4 192.0.2.2\nm=audio 5004 RTP/AVP 96\n"
                                               + "a=rtpmap:96 OPUS/48000/2\n").get()
        #expect(opusOnly.opus == 96)
        let ours = SIPAudioOffer.offer(host: PeerAddress(ipv4: 198, 51, 100, 7, port: 0), port: 40_000, sessionID: 1)
        #expect(ours.contains("m=audio 40000 RTP/AVP 96 0 8 101\r\na=rtpmap:96 opus/48000/2\r\n"))
        #expect(try SIPAudioOffer.parse(ours).get().opus == 96)  // read back as a phone's answer would be
    }

    @Test("RTP/SAVP with an AES_CM_128_HMAC_SHA1_80 key: SRTP, the answer RTP/SAVP with the gateway's key")
    func sdes() throws {
        let key = "WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVzcyAoZ"
        let sdp = "v=0\r\nc=IN IP4 192.0.2.2\r\nt=0 0\r\nm=audio 5004 RTP/SAVP 0 101\r\n"
            + "a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:AAAA\r\n"
            + "a=crypto:3 AES_CM_128_HMAC_SHA1_80 inline:\(key)|2^20\r\na=rtpmap:101 telephone-event/8000\r\n"
        let offer = try SIPAudioOffer.parse(sdp).get()
        #expect(offer.srtp == SIPAudioOffer.SDES(tag: 3, key: key))
        let answer = offer.answer(host: PeerAddress(ipv4: 198, 51, 100, 7, port: 0), port: 40_000, sessionID: 5,
                                  version: 2, localKey: "OURKEY")
        #expect(answer.contains("m=audio 40000 RTP/SAVP 0 101\r\n"), "\(answer)")
        #expect(answer.contains("a=crypto:3 AES_CM_128_HMAC_SHA1_80 inline:OURKEY\r\n"), "\(answer)")
        // SAVP with no key the gateway takes (another suite, an MKI, session parameters): 488.
        for line in ["a=crypto:1 AES_CM_128_HMAC_SHA1_32 inline:\(key)",
                     "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(key)|2^20|1:4",
                     "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(key) UNENCRYPTED_SRTP"] {
            let refused = SIPAudioOffer.parse("v=0\nc=IN IP4 192.0.2.2\nm=audio 5004 RTP/SAVP 0\n\(line)\n")
            let why = "No SRTP crypto the gateway takes (AES_CM_128_HMAC_SHA1_80, no MKI)"
            #expect(refused == .failure(.init(status: 488, reason: why)), "\(line)")
        }
        // A crypto line in a plain RTP/AVP offer changes nothing.
        let plain = try SIPAudioOffer.parse(sdp.replacingOccurrences(of: "RTP/SAVP", with: "RTP/AVP")).get()
        #expect(plain.srtp == nil)
        #expect(plain.answer(host: PeerAddress(ipv4: 198, 51, 100, 7, port: 0), port: 1, sessionID: 1, version: 1,
                             localKey: "OURKEY").contains("RTP/AVP 0 101"))
    }

    @Test func baresipsOffer() throws {
        let offer = try SIPAudioOffer.parse(Self.baresip).get()
        #expect(offer.address == PeerAddress(ipv4: 192, 0, 2, 2, port: 16680))
        #expect(offer.law == .mu)
        #expect(offer.telephoneEvent == 101)
        #expect(offer.direction == "sendrecv")
        let answer = offer.answer(host: PeerAddress(ipv4: 198, 51, 100, 7, port: 0), port: 40_000, sessionID: 5,
                                  version: 2)
        #expect(answer == "v=0\r\no=parley 5 2 IN IP4 198.51.100.7\r\ns=Parley\r\nc=IN IP4 198.51.100.7\r\nt=0 0\r\n"
            + "m=audio 40000 RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\n"
            + "a=fmtp:101 0-15\r\na=ptime:20\r\na=sendrecv\r\n")
    }

    @Test func aLawWhenItIsAllThereIs() throws {
        let sdp = "v=0\nc=IN IP4 10.1.2.3\nm=audio 5004 RTP/AVP 8\n"
        let offer = try SIPAudioOffer.parse(sdp).get()
        #expect(offer.law == .a)
        #expect(offer.telephoneEvent == nil)
        #expect(offer.answer(host: PeerAddress(ipv4: 10, 0, 0, 1, port: 0), port: 7, sessionID: 1, version: 1)
            .contains("m=audio 7 RTP/AVP 8\r\na=rtpmap:8 PCMA/8000\r\n"))
    }

    @Test func holdIsMirrored() throws {
        let sdp = "v=0\nc=IN IP4 10.1.2.3\nm=audio 5004 RTP/AVP 0\na=sendonly\nm=video 5006 RTP/AVP 96\n"
        let offer = try SIPAudioOffer.parse(sdp).get()
        #expect(offer.direction == "sendonly")
        let answer = offer.answer(host: PeerAddress(ipv4: 10, 0, 0, 1, port: 0), port: 7, sessionID: 1, version: 1)
        #expect(answer.contains("a=recvonly\r\n"))
        #expect(answer.hasSuffix("m=video 0 RTP/AVP 96\r\n"))  // the video stream refused
    }

    @Test func mediaLevelAddressWins() throws {
        let sdp = "v=0\nc=IN IP4 10.1.2.3\nm=audio 5004 RTP/AVP 0\nc=IN IP4 10.9.9.9\n"
        #expect(try SIPAudioOffer.parse(sdp).get().address == PeerAddress(ipv4: 10, 9, 9, 9, port: 5004))
    }

    @Test(arguments: [
        ("v=0\nc=IN IP4 10.1.2.3\nm=video 5004 RTP/AVP 96\n", "No audio stream"),
        ("v=0\nc=IN IP4 10.1.2.3\nm=audio 5004 UDP/TLS/RTP/SAVPF 0\n",
         "Only RTP/AVP or RTP/SAVP audio (UDP/TLS/RTP/SAVPF offered)"),
        ("v=0\nc=IN IP4 10.1.2.3\nm=audio 5004 RTP/SAVP 0\n",
         "No SRTP crypto the gateway takes (AES_CM_128_HMAC_SHA1_80, no MKI)"),
        ("v=0\nc=IN IP4 10.1.2.3\nm=audio 5004 RTP/AVP 9 18\n", "No common codec (Opus, or PCMU or PCMA at 8000 Hz)"),
        ("v=0\nm=audio 5004 RTP/AVP 0\n", "No usable connection address"),
        ("", "No audio stream"),
    ])
    func refused(sdp: String, reason: String) {
        guard case .failure(let refusal) = SIPAudioOffer.parse(sdp) else {
            Issue.record("accepted: \(sdp)")
            return
        }
        #expect(refusal == SIPAudioOffer.Refusal(status: 488, reason: reason))
    }
}
