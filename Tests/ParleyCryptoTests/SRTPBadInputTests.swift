import ParleyCrypto
import ParleyWire
import Testing

/// Hostile and malformed input: typed errors, never a trap, no state taken by a packet that did not authenticate.
@Suite("SRTP: bad input")
struct SRTPBadInputTests {
    typealias T = SRTPTestSupport

    @Test("malformed RTP and SRTP packets", arguments: [
        ("empty", ""),
        ("11 bytes", "8000 0001 00000001 000000"),
        ("version 1", "4000 0001 00000001 12345678 00000000 00000000 00000000 00000000"),
        ("two CSRCs, one present", "8200 0001 00000001 12345678 0000000a"),
        ("extension header cut", "9000 0001 00000001 12345678 bede"),
        ("extension of 4 words, 1 present", "9000 0001 00000001 12345678 bede0004 10ff0000"),
    ])
    func malformed(name: String, hex: String) throws {
        let (sender, receiver) = try T.pair()
        #expect(sender.protect(T.bytes(hex)) == .failure(.malformed), "\(name)")
        #expect(receiver.unprotect(T.bytes(hex)) == .failure(.malformed), "\(name)")
    }

    @Test("an SRTP packet shorter than its header and tag, and SRTCP shorter than 8 + 16 + 4 bytes, are malformed")
    func shortPackets() throws {
        let (sender, receiver) = try T.pair()
        #expect(receiver.unprotect(T.bytes("8000 0001 00000001 12345678") + [UInt8](repeating: 0, count: 15)) == .failure(.malformed))
        #expect(receiver.unprotect(rtcp: T.bytes("81c9 0001 12345678") + [UInt8](repeating: 0, count: 19)) == .failure(.malformed))
        #expect(sender.protect(rtcp: T.bytes("81c9 0001 123456")) == .failure(.malformed))
        #expect(sender.protect(rtcp: T.bytes("41c9 0001 12345678")) == .failure(.malformed))  // version 1
    }

    @Test("an output buffer too small is refused before anything changes")
    func bufferTooSmall() throws {
        let (sender, receiver) = try T.pair()
        let packet = T.rtp(sequence: 9)
        let small = SRTPTestSupport.run(packet, extra: SRTPSender.rtpOverhead - 1) { i, o throws(SRTPError) in try sender.protect(i, into: o) }
        #expect(small == .failure(.bufferTooSmall))
        let protected = try sender.protect(packet).get()  // the same index: the failed call used nothing
        let tooSmall = SRTPTestSupport.run([UInt8](protected), extra: -(SRTPSender.rtpOverhead + 1)) { i, o throws(SRTPError) in
            try receiver.unprotect(i, into: o)
        }
        #expect(tooSmall == .failure(.bufferTooSmall))
        #expect(receiver.unprotect(protected) == .success(packet))
    }

    @Test("the stream table is bounded: a new SSRC beyond it is refused; a forged one takes no slot")
    func tooManyStreams() throws {
        let (sender, _) = try T.pair()
        let (smallSender, receiver) = try T.pair(maxStreams: 2)
        var forged = try sender.protect(T.rtp(sequence: 1, ssrc: 3)).get()
        forged[forged.count - 1] ^= 1
        #expect(receiver.unprotect(forged) == .failure(.authenticationFailed))
        #expect(receiver.streamCount == 0)
        #expect(receiver.unprotect(try sender.protect(T.rtp(sequence: 1, ssrc: 1)).get()) == .success(T.rtp(sequence: 1, ssrc: 1)))
        #expect(receiver.unprotect(try sender.protect(T.rtp(sequence: 1, ssrc: 2)).get()) == .success(T.rtp(sequence: 1, ssrc: 2)))
        for ssrc in [UInt32(1), 2] { _ = try smallSender.protect(T.rtp(sequence: 1, ssrc: ssrc)).get() }
        #expect(smallSender.protect(T.rtp(sequence: 2, ssrc: 4)) == .failure(.tooManyStreams))
        #expect(receiver.unprotect(forged) == .failure(.tooManyStreams))
        #expect(receiver.streamCount == 2)
    }

    @Test("a key or salt of the wrong length is refused")
    func keyLengths() {
        #expect(throws: SRTPError.badKeyLength) { try SRTPSender(key: [UInt8](repeating: 1, count: 16), salt: T.salt) }
        #expect(throws: SRTPError.badKeyLength) { try SRTPReceiver(key: T.key, salt: [UInt8](repeating: 1, count: 14)) }
        #expect(SRTPSender.isAvailable)  // AES-NI on this machine; without it `init` throws `aesGCMUnavailable`
    }

    @Test("random bytes and mutated packets never trap and never authenticate")
    func fuzz() throws {
        let (sender, receiver) = try T.pair()
        var random = SeededRandomNumberGenerator(seed: 7715)
        let genuine = try sender.protect(T.rtp(sequence: 3)).get()
        let genuineRTCP = try sender.protect(rtcp: SRTCPTests.rtcp()).get()
        for round in 0..<2000 {
            var bytes: [UInt8]
            switch round % 3 {
            case 0: bytes = (0..<Int.random(in: 0..<200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            case 1: bytes = genuine
            default: bytes = genuineRTCP
            }
            if !bytes.isEmpty {
                for _ in 0..<Int.random(in: 1...4, using: &random) { bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random) }
                if round % 7 == 0 { bytes.removeLast(Int.random(in: 0...min(20, bytes.count), using: &random)) }
            }
            #expect(throws: SRTPError.self) { try receiver.unprotect(bytes).get() }
            #expect(throws: SRTPError.self) { try receiver.unprotect(rtcp: bytes).get() }
        }
        #expect(receiver.streamCount == 0)
    }

    @Test("in place: protect and unprotect an RTP packet in one buffer")
    func inPlace() throws {
        let (sender, receiver) = try T.pair()
        let packet = T.rtp(sequence: 77)
        var buffer = packet + [UInt8](repeating: 0, count: SRTPSender.rtpOverhead)
        let n = try buffer.withUnsafeMutableBytes { b throws(SRTPError) in try sender.protect(UnsafeRawBufferPointer(rebasing: b[..<packet.count]), into: b) }
        #expect(n == packet.count + 16)
        let m = try buffer.withUnsafeMutableBytes { b throws(SRTPError) in try receiver.unprotect(UnsafeRawBufferPointer(rebasing: b[..<n]), into: b) }
        #expect(Array(buffer[..<m]) == packet)
    }
}
