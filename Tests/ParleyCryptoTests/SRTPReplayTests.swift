import ParleyCrypto
import ParleyWire
import Testing

/// Rollover counter estimation and the replay window (RFC 3711 §3.3.1, §3.3.2, Appendix A) through the contexts.
@Suite("SRTP: rollover counter and replay window (RFC 3711)")
struct SRTPReplayTests {
    typealias T = SRTPTestSupport

    @Test("round trip: the receiver gets the RTP packet back, the audio level stays readable in the SRTP packet")
    func roundTrip() throws {
        let (sender, receiver) = try T.pair()
        for sequence in UInt16(100)..<110 {
            let packet = T.rtp(sequence: sequence, level: 42)
            let protected = try sender.protect(packet).get()
            #expect(protected.count == packet.count + SRTPSender.rtpOverhead)
            #expect(protected[..<(packet.count - 60)] == packet[..<(packet.count - 60)])  // header in the clear
            #expect(protected[(packet.count - 60)...].starts(with: packet[(packet.count - 60)...]) == false)
            try protected.withUnsafeBytes { bytes in
                let view = try RTPPacketView(parsing: bytes)
                #expect(view.audioLevel(id: 1) == AudioLevel(voice: true, level: 42))
            }
            #expect(receiver.unprotect(protected) == .success(packet))
        }
    }

    @Test("a tampered header byte (audio level, marker, SSRC), payload byte or tag byte is refused, and changes nothing")
    func tampering() throws {
        let (sender, receiver) = try T.pair()
        let packet = T.rtp(sequence: 7)
        let protected = try sender.protect(packet).get()
        let headerLength = packet.count - 60
        for (i, bit) in [(headerLength - 3, UInt8(0x01)), (1, 0x80), (9, 0x10), (headerLength, 0x01),
                         (packet.count - 1, 0x40), (protected.count - 1, 0x01)] {
            var forged = protected
            forged[i] ^= bit
            #expect(receiver.unprotect(forged) == .failure(.authenticationFailed), "byte \(i)")
        }
        #expect(receiver.streamCount == 0)
        #expect(receiver.unprotect(protected) == .success(packet))
    }

    @Test("a retired stream frees its slot and its SSRC is never protected again under the key")
    func retiredStreams() throws {
        let sender = try SRTPSender(key: T.key, salt: T.salt, maxStreams: 1)
        let first = T.rtp(sequence: 5, ssrc: 0x1111_1111), other = T.rtp(sequence: 5, ssrc: 0x2222_2222)
        _ = try sender.protect(first).get()
        #expect(sender.protect(other) == .failure(.tooManyStreams))
        sender.retire(ssrc: 0x1111_1111)
        #expect(sender.isRetired(0x1111_1111))
        #expect((try? sender.protect(other).get()) != nil)
        // Back with a fresh sequence number, it would reuse indices of its first life: refused.
        #expect(sender.protect(T.rtp(sequence: 6, ssrc: 0x1111_1111)) == .failure(.replayed))
    }

    @Test("another key is refused")
    func wrongKey() throws {
        let sender = try SRTPSender(key: T.key, salt: T.salt)
        let other = try SRTPReceiver(key: T.key.map { $0 ^ 1 }, salt: T.salt)
        #expect(other.unprotect(try sender.protect(T.rtp(sequence: 1)).get()) == .failure(.authenticationFailed))
        let otherSalt = try SRTPReceiver(key: T.key, salt: T.salt.map { $0 ^ 1 })
        #expect(otherSalt.unprotect(try sender.protect(T.rtp(sequence: 2)).get()) == .failure(.authenticationFailed))
    }

    @Test("a replay is refused; the sender refuses to reuse an index")
    func replay() throws {
        let (sender, receiver) = try T.pair()
        let protected = try sender.protect(T.rtp(sequence: 500)).get()
        #expect(receiver.unprotect(protected) == .success(T.rtp(sequence: 500)))
        #expect(receiver.unprotect(protected) == .failure(.replayed))
        #expect(sender.protect(T.rtp(sequence: 500)) == .failure(.replayed))
    }

    @Test("protect(again:) gives the SRTP packet first protected, for an index protected before and still in the window; never for a new one, and it moves nothing")
    func protectAgain() throws {
        let (sender, receiver) = try T.pair()
        let first = try sender.protect(T.rtp(sequence: 500)).get()
        _ = try sender.protect(T.rtp(sequence: 501)).get()
        #expect(sender.protect(again: T.rtp(sequence: 500)) == .success(first))
        #expect(sender.protect(again: T.rtp(sequence: 502)) == .failure(.tooOld))  // never protected: no index handed out here
        #expect(sender.protect(again: T.rtp(sequence: 500, ssrc: 9)) == .failure(.tooOld))  // an unknown stream
        // 502 was not used by the failed call: protect still hands it out, and the receiver reads both.
        let fresh = try sender.protect(T.rtp(sequence: 502)).get()
        #expect(receiver.unprotect(first) == .success(T.rtp(sequence: 500)))
        #expect(receiver.unprotect(fresh) == .success(T.rtp(sequence: 502)))
        _ = try sender.protect(T.rtp(sequence: 700)).get()  // 500 is now 200 behind: out of the window
        #expect(sender.protect(again: T.rtp(sequence: 500)) == .failure(.tooOld))
    }

    @Test("reordering within the window is accepted, each packet once")
    func reordering() throws {
        let (sender, receiver) = try T.pair()
        let packets = try (UInt16(1000)..<1100).map { try sender.protect(T.rtp(sequence: $0)).get() }
        var order = Array(packets.indices)
        var random = SeededRandomNumberGenerator(seed: 15)
        order.shuffle(using: &random)
        // Deliver the highest first, then everything else in a random order: all within 128 of it.
        order.removeAll { $0 == 99 }
        for i in [99] + order { #expect(receiver.unprotect(packets[i]) == .success(T.rtp(sequence: 1000 + UInt16(i))), "packet \(i)") }
        for i in [0, 50, 99] { #expect(receiver.unprotect(packets[i]) == .failure(.replayed)) }
    }

    @Test("a packet older than the window (128) is refused; one just inside is accepted")
    func tooOld() throws {
        let (sender, receiver) = try T.pair()
        let packets = try (UInt16(0)..<300).map { try sender.protect(T.rtp(sequence: $0)).get() }
        #expect(receiver.unprotect(packets[299]) == .success(T.rtp(sequence: 299)))
        #expect(receiver.unprotect(packets[299 - 128]) == .failure(.tooOld))
        #expect(receiver.unprotect(packets[299 - 127]) == .success(T.rtp(sequence: 299 - 127)))
        #expect(receiver.unprotect(packets[0]) == .failure(.tooOld))
    }

    @Test("sequence 65535 → 0 increments the ROC at both ends, every packet across the boundary decrypts")
    func wraparound() throws {
        let (sender, receiver) = try T.pair()
        let sequences: [UInt16] = [65530, 65531, 65532, 65533, 65534, 65535, 0, 1, 2, 3]
        for (n, sequence) in sequences.enumerated() {
            let protected = try sender.protect(T.rtp(sequence: sequence)).get()
            #expect(receiver.unprotect(protected) == .success(T.rtp(sequence: sequence)))
            let roc: UInt32 = n < 6 ? 0 : 1
            #expect(sender.rolloverCounter(ssrc: 0x1234_5678) == roc)
            #expect(receiver.rolloverCounter(ssrc: 0x1234_5678) == roc)
        }
    }

    @Test("reordered across the boundary: late packets from before the wrap keep ROC 0, at the sender and the receiver")
    func reorderedAcrossWraparound() throws {
        let (sender, receiver) = try T.pair()
        // The sender forwards 65533, then 0 and 1 (ROC 1), then the late 65534 and 65535 (still ROC 0).
        let sent = try [65533, 0, 1, 65534, 65535].map { (UInt16($0), try sender.protect(T.rtp(sequence: UInt16($0))).get()) }
        #expect(sender.rolloverCounter(ssrc: 0x1234_5678) == 1)
        // The receiver gets them in yet another order.
        for i in [0, 2, 4, 1, 3] { #expect(receiver.unprotect(sent[i].1) == .success(T.rtp(sequence: sent[i].0)), "seq \(sent[i].0)") }
        #expect(receiver.rolloverCounter(ssrc: 0x1234_5678) == 1)
        for i in 0..<5 { #expect(receiver.unprotect(sent[i].1) == .failure(.replayed)) }
    }

    @Test("the ROC is in the IV: a receiver that missed the wrap cannot read ROC 1 packets as ROC 0")
    func rolloverCounterIsAuthenticated() throws {
        let (sender, _) = try T.pair()
        for sequence in [UInt16(65535), 0] { _ = try sender.protect(T.rtp(sequence: sequence)).get() }
        let late = try sender.protect(T.rtp(sequence: 1)).get()  // ROC 1
        let fresh = try SRTPReceiver(key: T.key, salt: T.salt)  // first packet: ROC 0 assumed
        #expect(fresh.unprotect(late) == .failure(.authenticationFailed))
        #expect(fresh.streamCount == 0)
    }

    @Test("index estimate (RFC 3711 Appendix A) across both halves of the sequence space", arguments: [
        // (highest index, sequence, expected index)
        (UInt64(0x0_0005), UInt16(0x0006), UInt64(0x0_0006)),      // next packet
        (0x0_0005, 0x8005, 0x0_8005),                               // exactly 2¹⁵ ahead: same ROC
        (0x1_0005, 0xfff0, 0x0_fff0),                               // late, from before the wrap: ROC − 1
        (0x0_fff0, 0x0002, 0x1_0002),                               // after the wrap: ROC + 1
        (0x0_fff0, 0x7ff0, 0x0_7ff0),                               // s_l − 2¹⁵ = SEQ: same ROC
        (0x0_fff0, 0x7fef, 0x1_7fef),                               // one below: ROC + 1
        (0x5_8000, 0x0000, 0x5_0000),                               // s_l = 2¹⁵: same ROC
    ])
    func estimate(highest: UInt64, sequence: UInt16, expected: UInt64) throws {
        #expect(try SRTPPacketIndex.estimate(sequence: sequence, highest: highest) == expected)
    }

    @Test("index estimate: before ROC 0 is too old; past ROC 2³² − 1 is exhausted; a first packet has ROC 0")
    func estimateLimits() {
        #expect(throws: SRTPError.tooOld) { try SRTPPacketIndex.estimate(sequence: 0xfff0, highest: 0x0_0005) }
        #expect(throws: SRTPError.indexExhausted) { try SRTPPacketIndex.estimate(sequence: 0x0001, highest: 0xffff_ffff_fff0) }
        #expect(try! SRTPPacketIndex.estimate(sequence: 0xabcd, highest: nil) == 0xabcd)
    }

    @Test("the window alone: slides, refuses duplicates and anything 128 or more below the highest")
    func window() throws {
        var window = SRTPReplayWindow()
        #expect(window.isEmpty)
        window.accept(1000)
        #expect(throws: SRTPError.replayed) { try window.check(1000) }
        try window.check(999)
        try window.check(1000 - 127)
        #expect(throws: SRTPError.tooOld) { try window.check(1000 - 128) }
        window.accept(1000 + 500)  // a jump beyond the window forgets everything below it
        #expect(throws: SRTPError.tooOld) { try window.check(1000) }
        try window.check(1499)
        window.accept(1499)
        #expect(throws: SRTPError.replayed) { try window.check(1499) }
        #expect(window.highest == 1500)
    }
}
