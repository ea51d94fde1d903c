// The engine's end-to-end hooks: each Opus payload is sealed before it goes into RTP and opened after RTP, before
// the jitter buffer; what does not open is dropped and counted.
import ParleyClientCore
import ParleyCrypto
import ParleyMedia
import ParleyWire
import Testing

@Suite("Client engine: end-to-end encrypted payloads")
struct EndToEndEngineTests {
    static let ms = EngineHarness.ms
    static let k1 = [UInt8](repeating: 0x51, count: 32), k2 = [UInt8](repeating: 0x62, count: 32)
    /// The engine's cipher (seals with k1, key id 0) and the peer's (seals with k2, key id 1).
    static func ciphers() -> (engine: FrameCipher, peer: FrameCipher) {
        (FrameCipher(sendKey: k1, sendKeyID: 0, receiveKey: k2, receiveKeyID: 1)!,
         FrameCipher(sendKey: k2, sendKeyID: 1, receiveKey: k1, receiveKeyID: 0)!)
    }

    static func joined(listenOnly: Bool) throws -> EngineHarness {
        let h = try EngineHarness(listenOnly: listenOnly)
        h.advance(to: 1 * ms)
        h.welcome()
        _ = h.outbox.take()
        return h
    }

    static func payload(_ datagram: [UInt8]) throws -> [UInt8] {
        try datagram.withUnsafeBytes { raw in
            let p = try RTPPacketView(parsing: raw)
            return Array(raw[p.payloadOffset..<(p.payloadOffset + p.payloadCount)])
        }
    }

    @Test("captured audio goes out sealed: the payload opens with the peer's key to a frame Opus decodes, and is not Opus as sent")
    func sendsSealed() throws {
        let h = try Self.joined(listenOnly: false)
        let (mine, peer) = Self.ciphers()
        h.engine.endToEnd = mine
        var sealed: [[UInt8]] = []
        for step in 1...5 {
            h.advance(to: Int64(step) * 20 * Self.ms)
            h.media(captured: ToneStream.tone(440), level: 20)
            sealed += try h.outbox.take().filter { !$0.isRTCP && $0.signal == nil }.map { try Self.payload($0.bytes) }
        }
        #expect(sealed.count == 5)
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
        var pcm = [Int16](repeating: 0, count: 5_760)
        for (i, frame) in sealed.enumerated() {
            #expect(Array(frame.prefix(5)) == [0, 0, 0, 0, UInt8(i)], "key id 0, counter \(i)")
            let opus = try peer.open(frame)
            #expect(opus.count + FrameCipher.overhead == frame.count)
            let n = try opus.withUnsafeBytes { raw in try pcm.withUnsafeMutableBufferPointer { try decoder.decode(raw, into: $0) } }
            #expect(n == 960)
        }
    }

    @Test("received sealed audio is opened and played; the counters show nothing refused")
    func playsOpened() throws {
        let h = try Self.joined(listenOnly: true)
        let (mine, peer) = Self.ciphers()
        h.engine.endToEnd = mine
        var tone = try ToneStream()
        tone.pipeline.endToEnd = peer
        var energy: [Double] = []
        for step in 1...40 {
            h.advance(to: Int64(step) * 20 * Self.ms)
            h.deliver(tone.next())
            let frame = try #require(h.media())
            energy.append(frame.reduce(0.0) { $0 + Double($1) * Double($1) } / 960)
        }
        #expect(energy.suffix(15).allSatisfy { $0 > 1_000_000 }, "the tone plays")
        #expect(h.engine.framesRefusedEndToEnd == 0 && h.engine.receivedBySSRC == [ToneStream.ssrc: 40])
    }

    @Test("cleartext, replayed, tampered and wrongly keyed packets are dropped before the jitter buffer and counted")
    func dropsWhatDoesNotOpen() throws {
        let h = try Self.joined(listenOnly: true)
        let (mine, peer) = Self.ciphers()
        h.engine.endToEnd = mine
        var clear = try ToneStream(seed: 3)
        var sealed = try ToneStream(seed: 4)
        sealed.pipeline.endToEnd = peer
        var stranger = try ToneStream(seed: 5)
        stranger.pipeline.endToEnd = FrameCipher(sendKey: [UInt8](repeating: 9, count: 32), sendKeyID: 1, receiveKey: Self.k1, receiveKeyID: 0)!
        h.advance(to: 20 * Self.ms)
        h.deliver(clear.next())                  // an old client's cleartext Opus
        h.deliver(stranger.next())               // sealed with a key we do not hold
        let good = sealed.next()
        h.deliver(good)
        h.deliver(good)                          // replayed (as a relay could)
        var tampered = sealed.next()
        tampered[tampered.count - 1] ^= 1
        h.deliver(tampered)
        #expect(h.engine.framesRefusedEndToEnd == 4)
        #expect(h.engine.receivedBySSRC == [ToneStream.ssrc: 1])
    }

    @Test("without a key the engine takes payloads as they come (a call the peer did not encrypt)")
    func noKeyNoChange() throws {
        let h = try Self.joined(listenOnly: true)
        var tone = try ToneStream()
        h.advance(to: 20 * Self.ms)
        h.deliver(tone.next())
        #expect(h.engine.framesRefusedEndToEnd == 0 && h.engine.receivedBySSRC == [ToneStream.ssrc: 1])
    }
}
