// Offers as browsers write them, for the SDP tests. Written by hand after Chrome 120+ and Firefox 120+ output
// (unified plan, audio-only, max-bundle), with made-up credentials, fingerprints and ids.

/// The 32 bytes of the Chrome offer's certificate fingerprint.
let chromeFingerprint: [UInt8] = [
    0x5A, 0x1F, 0x3C, 0x9E, 0x04, 0xB7, 0x6D, 0x22, 0x81, 0xFE, 0x0A, 0x93, 0x47, 0xC5, 0x18, 0x6B,
    0xD0, 0x2E, 0x75, 0xA9, 0x3B, 0x64, 0xE1, 0x0F, 0x8C, 0x57, 0xBA, 0x29, 0x96, 0x4D, 0xF3, 0x10,
]

/// Lines of an offer Chrome writes for `addTransceiver('audio')` / a microphone track: BUNDLE, extmap-allow-mixed,
/// Opus at 111 with RED, G.722, G.711, CN and DTMF, transport-cc feedback but no NACK for audio.
let chromeOfferLines: [String] = [
    "v=0",
    "o=- 4611731400430051336 2 IN IP4 127.0.0.1",
    "s=-",
    "t=0 0",
    "a=group:BUNDLE 0",
    "a=extmap-allow-mixed",
    "a=msid-semantic: WMS 7b2f1c3e-5b8a-4f8e-9d4c-2a6b8e1f0c3d",
    "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126",
    "c=IN IP4 0.0.0.0",
    "a=rtcp:9 IN IP4 0.0.0.0",
    "a=ice-ufrag:Xq3F",
    "a=ice-pwd:c3R8kT1pWm6vN0bYh2LsQe9z",
    "a=ice-options:trickle",
    "a=fingerprint:sha-256 5A:1F:3C:9E:04:B7:6D:22:81:FE:0A:93:47:C5:18:6B:D0:2E:75:A9:3B:64:E1:0F:8C:57:BA:29:96:4D:F3:10",
    "a=setup:actpass",
    "a=mid:0",
    "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
    "a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
    "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
    "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid",
    "a=sendrecv",
    "a=msid:7b2f1c3e-5b8a-4f8e-9d4c-2a6b8e1f0c3d 0e5d9a7c-3f1b-4c2e-8a6d-9b1f7e3c5a2d",
    "a=rtcp-mux",
    "a=rtcp-rsize",
    "a=rtpmap:111 opus/48000/2",
    "a=rtcp-fb:111 transport-cc",
    "a=fmtp:111 minptime=10;useinbandfec=1",
    "a=rtpmap:63 red/48000/2",
    "a=fmtp:63 111/111",
    "a=rtpmap:9 G722/8000",
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:8 PCMA/8000",
    "a=rtpmap:13 CN/8000",
    "a=rtpmap:110 telephone-event/48000",
    "a=rtpmap:126 telephone-event/8000",
    "a=ssrc:1001211346 cname:Lx9nQ2wR7tY4vB1s",
    "a=ssrc:1001211346 msid:7b2f1c3e-5b8a-4f8e-9d4c-2a6b8e1f0c3d 0e5d9a7c-3f1b-4c2e-8a6d-9b1f7e3c5a2d",
]

/// The Chrome offer as it arrives: CRLF line ends.
let chromeOffer = chromeOfferLines.joined(separator: "\r\n") + "\r\n"

/// An offer as Firefox writes it: fingerprint, ice-options and BUNDLE at session level, Opus at 109, audio level at
/// 1, csrc-audio-level recvonly at 2, mid at 3; credentials in the media section. LF line ends, to cover both.
let firefoxOffer = [
    "v=0",
    "o=mozilla...THIS_IS_SDPARTA-120.0 5084411225254358730 0 IN IP4 0.0.0.0",
    "s=-",
    "t=0 0",
    "a=fingerprint:sha-256 0C:8E:51:F7:2A:93:6D:B4:11:C0:7E:38:A5:4F:E2:99:D6:03:BB:7A:25:48:F1:6C:90:1D:E4:3B:87:52:AF:0E",
    "a=group:BUNDLE 0",
    "a=ice-options:trickle",
    "a=msid-semantic:WMS *",
    "m=audio 9 UDP/TLS/RTP/SAVPF 109 9 0 8 101",
    "c=IN IP4 0.0.0.0",
    "a=sendrecv",
    "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
    "a=extmap:2/recvonly urn:ietf:params:rtp-hdrext:csrc-audio-level",
    "a=extmap:3 urn:ietf:params:rtp-hdrext:sdes:mid",
    "a=fmtp:109 maxplaybackrate=48000;stereo=1;useinbandfec=1",
    "a=fmtp:101 0-15",
    "a=ice-pwd:0b3b7e2f2a8c4d6e9f1a3c5e7b9d1f3a",
    "a=ice-ufrag:5f2c8a1e",
    "a=mid:0",
    "a=msid:{c6a5e3d1-2b4f-4e8a-9c7d-1f3b5a7e9c2d} {2b7e9c1d-5a3f-4d8e-b6c2-7e1a9f3d5b8c}",
    "a=rtcp-mux",
    "a=rtpmap:109 opus/48000/2",
    "a=rtpmap:9 G722/8000/1",
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:8 PCMA/8000",
    "a=rtpmap:101 telephone-event/8000/1",
    "a=setup:actpass",
    "a=ssrc:2717862178 cname:{e1d2c3b4-a5f6-4789-8abc-def012345678}",
].joined(separator: "\n") + "\n"

/// A Chrome offer for a call with audio, video and a data channel, all bundled: only the audio can be accepted.
let audioVideoDataOffer = (Array(chromeOfferLines[0..<4]) + ["a=group:BUNDLE 0 1 2"] + Array(chromeOfferLines[5...]) + [
    "m=video 9 UDP/TLS/RTP/SAVPF 96 97 102",
    "c=IN IP4 0.0.0.0",
    "a=ice-ufrag:Xq3F",
    "a=ice-pwd:c3R8kT1pWm6vN0bYh2LsQe9z",
    "a=fingerprint:sha-256 5A:1F:3C:9E:04:B7:6D:22:81:FE:0A:93:47:C5:18:6B:D0:2E:75:A9:3B:64:E1:0F:8C:57:BA:29:96:4D:F3:10",
    "a=setup:actpass",
    "a=mid:1",
    "a=extmap:14 urn:ietf:params:rtp-hdrext:toffset",
    "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid",
    "a=sendrecv",
    "a=rtcp-mux",
    "a=rtpmap:96 VP8/90000",
    "a=rtcp-fb:96 nack",
    "a=rtcp-fb:96 nack pli",
    "a=rtpmap:97 rtx/90000",
    "a=fmtp:97 apt=96",
    "a=rtpmap:102 H264/90000",
    "m=application 9 UDP/DTLS/SCTP webrtc-datachannel",
    "c=IN IP4 0.0.0.0",
    "a=ice-ufrag:Xq3F",
    "a=ice-pwd:c3R8kT1pWm6vN0bYh2LsQe9z",
    "a=fingerprint:sha-256 5A:1F:3C:9E:04:B7:6D:22:81:FE:0A:93:47:C5:18:6B:D0:2E:75:A9:3B:64:E1:0F:8C:57:BA:29:96:4D:F3:10",
    "a=setup:actpass",
    "a=mid:2",
    "a=sctp-port:5000",
    "a=max-message-size:262144",
]).joined(separator: "\r\n") + "\r\n"

/// The Chrome offer with `transform` applied to its lines (drop, replace or add lines for one failing case).
func chromeOffer(_ transform: ([String]) -> [String]) -> String {
    transform(chromeOfferLines).joined(separator: "\r\n") + "\r\n"
}

/// The Chrome offer without the lines starting with `prefix`.
func chromeOffer(without prefix: String) -> String {
    chromeOffer { $0.filter { !$0.hasPrefix(prefix) } }
}

/// The Chrome offer with each line starting with `prefix` replaced by `line`.
func chromeOffer(replacing prefix: String, with line: String) -> String {
    chromeOffer { $0.map { $0.hasPrefix(prefix) ? line : $0 } }
}

/// The Chrome offer with `lines` appended to its (only) media section.
func chromeOffer(appending lines: [String]) -> String {
    chromeOffer { $0 + lines }
}
