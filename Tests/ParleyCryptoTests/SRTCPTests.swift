import ParleyCrypto
import Testing

/// SRTCP with AEAD_AES_256_GCM (RFC 7714 §9): E flag and 31-bit index after the tag, its own replay window.
@Suite("SRTCP: E flag, index, replay window (RFC 7714 §9)")
struct SRTCPTests {
    typealias T = SRTPTestSupport

    /// A receiver report of SSRC 0x0a0b0c0d with one report block, and `extra` bytes after it.
    static func rtcp(ssrc: UInt32 = 0x0a0b_0c0d, marker: UInt8 = 0) -> [UInt8] {
        T.bytes("81c90007") + [UInt8(ssrc >> 24), UInt8(truncatingIfNeeded: ssrc >> 16), UInt8(truncatingIfNeeded: ssrc >> 8),
                               UInt8(truncatingIfNeeded: ssrc)]
            + T.bytes("12345678 00000003 0000fff0 00000010 00000000 00000000").map { $0 ^ marker }
    }

    @Test("indices count from 0 and follow the tag with E = 1; the RTCP packet comes back")
    func indices() throws {
        let (sender, receiver) = try T.pair()
        for index in UInt32(0)..<5 {
            let packet = Self.rtcp(marker: UInt8(index))
            let protected = try sender.protect(rtcp: packet).get()
            #expect(protected.count == packet.count + SRTPSender.rtcpOverhead)
            #expect(protected[..<8] == packet[..<8])
            #expect(Array(protected.suffix(4)) == [0x80, 0, 0, UInt8(index)])
            #expect(receiver.unprotect(rtcp: protected) == .success(packet))
        }
        #expect(sender.nextSRTCPIndex == 5)
    }

    @Test("E = 0: authenticated only, the body readable on the wire, every byte still protected")
    func authenticatedOnly() throws {
        let (sender, receiver) = try T.pair()
        let packet = Self.rtcp()
        let protected = try sender.protect(rtcp: packet, encrypt: false).get()
        #expect(protected[..<packet.count] == packet[...])
        #expect(Array(protected.suffix(4)) == [0x00, 0, 0, 0])
        for i in [0, 12, packet.count - 1, packet.count, protected.count - 4, protected.count - 1] {
            var forged = protected
            forged[i] ^= 0x01
            #expect(receiver.unprotect(rtcp: forged) == .failure(.authenticationFailed), "byte \(i)")
        }
        var flipped = protected
        flipped[protected.count - 4] |= 0x80  // claims E = 1
        #expect(receiver.unprotect(rtcp: flipped) == .failure(.authenticationFailed))
        #expect(receiver.unprotect(rtcp: protected) == .success(packet))
    }

    @Test("a replayed SRTCP packet is refused, reordering within the window accepted, older refused")
    func replayWindow() throws {
        let (sender, receiver) = try T.pair()
        let packets = try (0..<200).map { _ in try sender.protect(rtcp: Self.rtcp()).get() }
        #expect(receiver.unprotect(rtcp: packets[150]) == .success(Self.rtcp()))
        #expect(receiver.unprotect(rtcp: packets[150]) == .failure(.replayed))
        #expect(receiver.unprotect(rtcp: packets[149]) == .success(Self.rtcp()))
        #expect(receiver.unprotect(rtcp: packets[151]) == .success(Self.rtcp()))
        #expect(receiver.unprotect(rtcp: packets[151 - 128]) == .failure(.tooOld))
        #expect(receiver.unprotect(rtcp: packets[151 - 127]) == .success(Self.rtcp()))
    }

    @Test("SRTCP and SRTP windows are separate: the same numbers in both are no replay")
    func separateWindows() throws {
        let (sender, receiver) = try T.pair()
        let media = try sender.protect(T.rtp(sequence: 0, ssrc: 0x0a0b_0c0d)).get()
        let control = try sender.protect(rtcp: Self.rtcp()).get()
        #expect(receiver.unprotect(media) == .success(T.rtp(sequence: 0, ssrc: 0x0a0b_0c0d)))
        #expect(receiver.unprotect(rtcp: control) == .success(Self.rtcp()))
        #expect(receiver.streamCount == 1)
    }

    @Test("a forged index (the highest there is) neither authenticates nor moves the window")
    func forgedIndex() throws {
        let (sender, receiver) = try T.pair()
        let first = try sender.protect(rtcp: Self.rtcp()).get()
        var forged = first
        for i in (forged.count - 4)..<forged.count { forged[i] = 0xff }
        #expect(receiver.unprotect(rtcp: forged) == .failure(.authenticationFailed))
        #expect(receiver.unprotect(rtcp: first) == .success(Self.rtcp()))
    }

    @Test("in place: protect and unprotect in one buffer")
    func inPlace() throws {
        let (sender, receiver) = try T.pair()
        let packet = Self.rtcp()
        var buffer = packet + [UInt8](repeating: 0, count: SRTPSender.rtcpOverhead)
        let n = try buffer.withUnsafeMutableBytes { b throws(SRTPError) in
            try sender.protect(rtcp: UnsafeRawBufferPointer(rebasing: b[..<packet.count]), into: b)
        }
        let m = try buffer.withUnsafeMutableBytes { b throws(SRTPError) in
            try receiver.unprotect(rtcp: UnsafeRawBufferPointer(rebasing: b[..<n]), into: b)
        }
        #expect(Array(buffer[..<m]) == packet)
    }
}
