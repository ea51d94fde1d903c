// The speaker's half of uplink repair: the relay NACKs packets of ours it never got, and the engine resends the
// datagrams exactly as they first went out, within its bounds and only for the relay.
import ParleyClientCore
import ParleyWire
import Testing

@Suite("Client engine: resending what the relay NACKs")
struct UplinkResendTests {
    static let ms = EngineHarness.ms
    static let mySSRC: UInt32 = 0x1234_5678   // the scripted welcome's

    static func nack(sender: UInt32 = 0x0BAD_CAFE, media: UInt32 = mySSRC, lost: [UInt16]) throws -> [UInt8] {
        let nack = GenericNACK(senderSSRC: sender, mediaSSRC: media, lost: lost)
        var bytes = [UInt8](repeating: 0, count: nack.serializedSize)
        _ = try bytes.withUnsafeMutableBytes { try nack.serialize(into: $0) }
        return bytes
    }

    /// A welcomed sending engine that has sent `count` RTP packets, with those datagrams in order.
    static func speaking(_ count: Int) throws -> (EngineHarness, [[UInt8]]) {
        let h = try ClientEngineTests.joined(listenOnly: false)
        var rtp: [[UInt8]] = []
        for i in 1...count {
            h.advance(to: Int64(20 * i) * ms)
            h.media(captured: ToneStream.tone(440), level: 20)
            rtp += h.outbox.take().filter { $0.signal == nil && !$0.isRTCP }.map(\.bytes)
        }
        #expect(rtp.count == count)
        return (h, rtp)
    }

    static func sequence(_ datagram: [UInt8]) -> UInt16 { UInt16(datagram[2]) << 8 | UInt16(datagram[3]) }

    @Test("a NACK from the relay about our stream brings back the identical datagram; numbers no longer held are counted")
    func resendsIdenticalBytes() throws {
        let (h, rtp) = try Self.speaking(5)
        let history = try #require(h.engine.sentHistory)
        let wanted = Self.sequence(rtp[2])
        h.advance(to: 110 * Self.ms)
        h.deliver(try Self.nack(lost: [wanted, wanted &+ 10]))   // the second was never sent
        let resent = h.outbox.take()
        #expect(resent.map(\.bytes) == [rtp[2]])
        #expect(resent.first?.to == ScriptedRelay.workerAddress)
        #expect(history.resent == 1 && history.notResent == 1)
        #expect(h.engine.packetsSent == 5)   // resends are not new packets
    }

    @Test("NACKs about another stream, from our own SSRC, or from outside the relay are ignored")
    func onlyTheRelaysAboutOurs() throws {
        let (h, rtp) = try Self.speaking(3)
        let wanted = Self.sequence(rtp[1])
        h.deliver(try Self.nack(media: 0xDEAD_BEEF, lost: [wanted]))
        h.deliver(try Self.nack(sender: Self.mySSRC, lost: [wanted]))
        h.deliver(try Self.nack(lost: [wanted]), from: PeerAddress(ipv4: 10, 0, 0, 9, port: 7401))
        #expect(h.outbox.take().isEmpty)
        #expect(h.engine.sentHistory?.resent == 0)
    }

    @Test("at most 64 packets per NACK, and the rate bound holds against a stream of NACKs")
    func bounded() throws {
        let (h, rtp) = try Self.speaking(64)
        let all = rtp.map(Self.sequence)
        // One NACK naming each held packet twice: 64 resent, the rest refused.
        h.deliver(try Self.nack(lost: all) + Self.nack(lost: all))
        #expect(h.outbox.take().count == 64)
        // The bucket is empty now: 100 ms later only ~5 more go out.
        h.advance(to: (64 * 20 + 100) * Self.ms)
        h.deliver(try Self.nack(lost: all))
        let again = h.outbox.take().count
        #expect(again >= 4 && again <= 6, "\(again) resent")
    }
}
