import Testing
import ParleyWebRTC

@Suite("WebRTCError")
struct WebRTCErrorTests {
    @Test("description is code: reason")
    func description() {
        #expect(WebRTCError("no_audio", "the offer has no audio section").description == "no_audio: the offer has no audio section")
    }
}
