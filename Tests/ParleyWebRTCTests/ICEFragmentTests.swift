import ParleyWire
import Testing
@testable import ParleyWebRTC

/// WHIP/WHEP PATCH bodies: trickled candidates, ICE restarts, and what is refused.
@Suite("ICE fragments (RFC 8840, RFC 9725 §4.3): trickle or restart, refusals, the relay's restart answer")
struct ICEFragmentTests {
    @Test("a restart as Chrome sends it: credentials, the mid, candidates counted; CRLF or LF")
    func restart() throws {
        for end in ["\r\n", "\n"] {
            let text = ["a=ice-options:trickle ice2", "a=ice-ufrag:EsAw", "a=ice-pwd:bP+XJMM09aR8AiX1jdukzR6Y",
                        "m=audio 9 UDP/TLS/RTP/SAVPF 111", "a=mid:0",
                        "a=candidate:1387637174 1 udp 2122260223 192.0.2.1 61764 typ host generation 0", "a=end-of-candidates"]
                .joined(separator: end) + end
            let f = try ICEFragment(parsing: Array(text.utf8))
            #expect(f.isRestart && f.ufrag == "EsAw" && f.password == "bP+XJMM09aR8AiX1jdukzR6Y" && f.mid == "0" && f.candidates == 1)
        }
        let trickle = try ICEFragment(parsing: Array("a=candidate:1 1 udp 1 192.0.2.1 9 typ host\r\n".utf8))
        #expect(!trickle.isRestart && trickle.candidates == 1)
    }

    @Test("refused with bad_sdpfrag", arguments: [
        "a=ice-ufrag:abcd\r\n",  // no password
        "a=ice-pwd:abcdefghijklmnopqrstuvwx\r\n",  // no ufrag
        "a=ice-ufrag:abc\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n",  // ufrag too short
        "a=ice-ufrag:ab d\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n",  // not ice-chars
        "a=ice-ufrag:abcd\r\na=ice-pwd:short\r\n",
        "a=ice-ufrag:abcd\r\na=ice-ufrag:efgh\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n",  // two ufrags
        "hello\r\n", "=x\r\n", "a=mid:\r\n", "a=mid:\u{7}\r\n",
    ])
    func refused(text: String) {
        #expect(throws: WebRTCError.self) { try ICEFragment(parsing: Array(text.utf8)) }
    }

    @Test("too large, or not UTF-8")
    func limits() {
        #expect(throws: WebRTCError.self) { try ICEFragment(parsing: [UInt8](repeating: 0x61, count: ICEFragment.maxBytes + 1)) }
        #expect(throws: WebRTCError.self) { try ICEFragment(parsing: [0x61, 0x3D, 0xFF, 0xFE]) }
    }

    @Test("the relay's restart answer: ice-lite, its credentials, the mid, UDP then passive TCP candidates, end-of-candidates")
    func answer() {
        let text = ICEFragment.restartAnswer(ufrag: "Rl4yUfrg", password: "relay-password-0123456789", mid: "a0",
                                             candidates: [PeerAddress(ipv4: 198, 51, 100, 10, port: 7401)],
                                             tcpCandidates: [PeerAddress(ipv4: 198, 51, 100, 10, port: 7400)])
        #expect(text == "a=ice-lite\r\na=ice-ufrag:Rl4yUfrg\r\na=ice-pwd:relay-password-0123456789\r\nm=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:a0\r\n"
                + "a=candidate:1 1 udp 2130706431 198.51.100.10 7401 typ host\r\n"
                + "a=candidate:2 1 tcp 2124414975 198.51.100.10 7400 typ host tcptype passive\r\na=end-of-candidates\r\n")
    }
}
