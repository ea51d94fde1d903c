import Testing
@testable import ParleyWebRTC

@Suite("SDP offer: parsing what browsers send")
struct SDPOfferTests {
    @Test("Chrome's audio offer: session and media attributes")
    func chrome() throws {
        let offer = try SDPOffer(parsing: chromeOffer)
        #expect(offer.bundle == ["0"])
        #expect(offer.iceLite == false)
        #expect(offer.iceUfrag == nil && offer.fingerprint == nil) // Chrome puts them in the media section
        #expect(offer.media.count == 1)
        let audio = offer.media[0]
        #expect(audio.kind == "audio" && audio.port == 9 && audio.proto == "UDP/TLS/RTP/SAVPF")
        #expect(audio.formats == ["111", "63", "9", "0", "8", "13", "110", "126"])
        #expect(audio.payloadTypes == [111, 63, 9, 0, 8, 13, 110, 126])
        #expect(audio.mid == "0")
        #expect(audio.direction == .sendrecv)
        #expect(audio.iceUfrag == "Xq3F" && audio.icePwd == "c3R8kT1pWm6vN0bYh2LsQe9z")
        #expect(audio.fingerprint == chromeFingerprint)
        #expect(audio.setup == .actpass)
        #expect(audio.rtcpMux && audio.rtcpRsize)
        #expect(audio.opusPayloadType == 111)
        #expect(audio.opusFmtp == "minptime=10;useinbandfec=1")
        #expect(audio.fmtps[63] == "111/111")
        #expect(audio.rtpmaps.count == 8)
        #expect(audio.rtpmaps.first == SDPOffer.RTPMap.expected(111, "opus", 48_000, 2))
        #expect(audio.rtpmaps.last == SDPOffer.RTPMap.expected(126, "telephone-event", 8000, nil))
        #expect(audio.nackPayloadTypes.isEmpty && !audio.opusNack) // transport-cc is not NACK
        #expect(audio.audioLevelExtensionID == 1 && audio.midExtensionID == 4 && audio.csrcAudioLevelExtensionID == nil)
        #expect(audio.ssrcs == [1_001_211_346])
        #expect(audio.msid == "7b2f1c3e-5b8a-4f8e-9d4c-2a6b8e1f0c3d 0e5d9a7c-3f1b-4c2e-8a6d-9b1f7e3c5a2d")
        #expect(!audio.isRejected && !audio.bundleOnly)
        #expect(try offer.audioSections() == [audio])
        #expect(offer.iceOptions.isEmpty) // media-level ice-options are not the session's
    }

    @Test("Firefox's audio offer: session-level fingerprint, other extension IDs, Opus at 109, LF line ends")
    func firefox() throws {
        let offer = try SDPOffer(parsing: firefoxOffer)
        #expect(offer.fingerprint?.count == 32 && offer.fingerprint?.first == 0x0C)
        #expect(offer.iceOptions == ["trickle"])
        #expect(offer.bundle == ["0"])
        let sections = try offer.audioSections()
        #expect(sections.count == 1)
        let audio = sections[0]
        #expect(audio.fingerprint == offer.fingerprint, "the session's fingerprint is the section's")
        #expect(audio.iceUfrag == "5f2c8a1e" && audio.icePwd == "0b3b7e2f2a8c4d6e9f1a3c5e7b9d1f3a")
        #expect(audio.opusPayloadType == 109)
        #expect(audio.opusFmtp == "maxplaybackrate=48000;stereo=1;useinbandfec=1")
        #expect(audio.audioLevelExtensionID == 1 && audio.csrcAudioLevelExtensionID == 2 && audio.midExtensionID == 3)
        #expect(audio.ssrcs == [2_717_862_178])
        #expect(audio.rtpmaps.contains(try #require(SDPOffer.RTPMap.expected(9, "G722", 8000, 1))))
        #expect(!audio.rtcpRsize && audio.rtcpMux)
    }

    @Test("audio, video and a data channel: all three sections parse, only the audio is answerable")
    func audioVideoData() throws {
        let offer = try SDPOffer(parsing: audioVideoDataOffer)
        #expect(offer.bundle == ["0", "1", "2"])
        #expect(offer.media.map(\.kind) == ["audio", "video", "application"])
        #expect(offer.media[1].nackPayloadTypes == [96] && offer.media[1].midExtensionID == 4)
        #expect(offer.media[2].proto == "UDP/DTLS/SCTP" && offer.media[2].formats == ["webrtc-datachannel"])
        #expect(offer.media[2].payloadTypes.isEmpty && !offer.media[2].isRTP)
        #expect(try offer.audioSections().map(\.mid) == ["0"])
    }

    @Test("details: Opus name in any case, session direction as default, rtcp-fb *, bundle-only, extension IDs past 14")
    func details() throws {
        let offer = try SDPOffer(parsing: chromeOffer {
            $0.map { $0 == "a=rtpmap:111 opus/48000/2" ? "a=rtpmap:111 OPUS/48000/2" : $0 }
                .filter { $0 != "a=sendrecv" && !$0.hasPrefix("a=extmap:1 ") }
                .map { $0 == "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126" ? "m=audio 0 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126" : $0 }
                + ["a=rtcp-fb:* nack", "a=bundle-only", "a=extmap:15 urn:ietf:params:rtp-hdrext:ssrc-audio-level"]
        }.replacingFirst("t=0 0", with: "t=0 0\r\na=recvonly"))
        let audio = offer.media[0]
        #expect(audio.opusPayloadType == 111)
        #expect(audio.direction == .recvonly)
        #expect(audio.opusNack && audio.nackPayloadTypes.contains(126))
        #expect(audio.port == 0 && audio.bundleOnly && !audio.isRejected)
        #expect(audio.audioLevelExtensionID == nil, "ID 15 needs the two-byte form: not recorded")
        #expect(try offer.audioSections().count == 1)
    }

    @Test("the relay's own answer parses, ICE-lite and passive")
    func iceLite() throws {
        let offer = try SDPOffer(parsing: "v=0\r\na=ice-lite\r\na=setup:passive\r\nm=audio 9 RTP/AVP 0\r\n")
        #expect(offer.iceLite && offer.setup == .passive && offer.media[0].setup == .passive)
    }
}

extension SDPOffer.RTPMap {
    /// An rtpmap value for comparisons.
    static func expected(_ pt: UInt8, _ name: String, _ clock: UInt32, _ channels: UInt8?) -> Self? {
        try? SDPOffer.RTPMap(Substring("\(pt) \(name)/\(clock)" + (channels.map { "/\($0)" } ?? "")))
    }
}

extension String {
    /// `self` with the first occurrence of `target` replaced (no Foundation in these tests).
    func replacingFirst(_ target: String, with replacement: String) -> String {
        replacing(target, with: replacement, maxReplacements: 1)
    }
}
