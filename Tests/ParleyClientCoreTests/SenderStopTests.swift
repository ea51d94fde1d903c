// A member who stops sending (closes the lid, leaves without a word) is heard as silence, not as loss: the engine's
// concealment counter stays at zero whether the stream just stops or ends with an RTCP BYE. Manual clock.
import ParleyClientCore
import ParleyWire
import Testing

@Suite("A sender that stops is silence to the client, not concealment")
struct SenderStopTests {
    static let ms = EngineHarness.ms

    /// A joined engine that has received and played `frames` of bob's tone, 20 ms apart from t = 20 ms.
    static func heard(frames: Int) throws -> (EngineHarness, ToneStream) {
        let h = try ClientEngineTests.joined()
        var tone = try ToneStream()
        for step in 1...frames {
            h.advance(to: Int64(step) * 20 * ms)
            h.deliver(tone.next())
            _ = h.media()
        }
        return (h, tone)
    }

    @Test("the stream simply stops: a few seconds later nothing was counted as concealed and the stream is silent")
    func stops() throws {
        let (h, _) = try Self.heard(frames: 50)
        for step in 51...200 {
            h.advance(to: Int64(step) * 20 * Self.ms)
            _ = h.media()
        }
        #expect(h.engine.concealedFrames == 0)
        let stream = try #require(h.engine.receiver.streams[ToneStream.ssrc])
        #expect(stream.audio.jitter.stats.senderStops == 1)
        #expect(stream.lastOutcome == .silence)
        #expect(h.engine.audibleSSRCs.isEmpty)
    }

    @Test("an RTCP BYE from the sender: what it sent plays out, then silence at once, nothing concealed")
    func goodbye() throws {
        let (h, _) = try Self.heard(frames: 50)
        var bye = [UInt8](repeating: 0, count: 64)
        let n = try bye.withUnsafeMutableBytes { try Goodbye(ssrcs: [ToneStream.ssrc]).serialize(into: $0) }
        h.deliver(Array(bye[0..<n]))
        var concealed = 0
        for step in 51...100 {
            h.advance(to: Int64(step) * 20 * Self.ms)
            _ = h.media()
            if h.engine.receiver.streams[ToneStream.ssrc]?.lastOutcome == .concealed { concealed += 1 }
        }
        #expect(concealed == 0)
        #expect(h.engine.concealedFrames == 0)
        #expect(h.engine.receiver.streams[ToneStream.ssrc]?.audio.jitter.stats.senderStops == 1)
    }
}
