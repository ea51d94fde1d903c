@testable import ParleyCrypto
import Testing

/// RFC 7714's AEAD_AES_256_GCM examples: §16.2 (SRTP) and §17.2 (SRTCP). The RFC gives session key and salt
/// directly, as our handshake will.
@Suite("SRTP AEAD_AES_256_GCM: RFC 7714 test vectors")
struct SRTPVectorTests {
    static let b = SRTPTestSupport.bytes

    /// §16: the 256-bit key 00 01 … 1f and the salt "Quid pro quo".
    static let key = b("000102030405060708090a0b0c0d0e0f 101112131415161718191a1b1c1d1e1f")
    static let salt = b("51756964 2070726f 2071756f")

    /// §16: an RTP packet, SEQ 0xf17b, SSRC 0x5501a0b2, payload "Gallia est omnis divisa in partes tres".
    static let rtp = b("""
        8040f17b 8041f8d3 5501a0b2
        47616c6c 69612065 7374206f 6d6e6973 20646976 69736120 696e2070 61727465 73207472 6573
        """)
    // ^ V=2 PT=64 SEQ=f17b | timestamp | SSRC | payload (38 bytes)

    /// §16.2.1: the SRTP packet — the header unchanged, the payload encrypted, the 16-byte tag last.
    static let srtp = b("""
        8040f17b 8041f8d3 5501a0b2
        32b1de78 a822fe12 ef9f78fa 332e33aa b1801238 9a58e2f3 b50b2a02 76ffae0f 1ba63799 b87b
        7aa3db36 dfffd6b0 f9bb7878 d7a76c13
        """)
    // ^ header (associated data) | ciphertext (38 bytes) | tag (16 bytes)

    /// §17: an RTCP sender report of SSRC "Mars" with extra bytes, as §17.1–17.4 encrypt it.
    static let rtcp = b("""
        81c8000d 4d617273
        4e545031 4e545032 52545020 0000042a 0000e930 4c756e61
        deadbeef deadbeef deadbeef deadbeef deadbeef
        """)
    // ^ V=2 RC=1 PT=200 length=13 | SSRC "Mars" | NTP, RTP timestamp, counts | the rest

    /// §17.2: the SRTCP packet with SRTCP index 0x5d4, E = 1.
    static let srtcp = b("""
        81c8000d 4d617273
        d50ae4d1 f5ce5d30 4ba297e4 7d470c28 2c3ece5d bffe0a50 a2eaa5c1 110555be 8415f658 c61de047 6f1b6fad
        1d1eb30c 4446839f 57ff6f6c b26ac3be
        800005d4
        """)
    // ^ clear header and SSRC | ciphertext (44 bytes) | tag (16 bytes) | E=1, SRTCP index 0x5d4

    @Test("§16.1: the IV is (00 00 ‖ SSRC ‖ ROC ‖ SEQ) XOR salt")
    func rtpIV() throws {
        let cipher = try SRTPCipher(key: Self.key, salt: Self.salt)
        let iv = cipher.rtpIV(ssrc: 0x5501_a0b2, rolloverCounter: 0, sequence: 0xf17b)
        #expect(Array(UnsafeRawBufferPointer(start: iv, count: 12)) == Self.b("51753c65 80c2726f 20718414"))
    }

    @Test("§17.1: the SRTCP IV is (00 00 ‖ SSRC ‖ 00 00 ‖ index) XOR salt")
    func rtcpIV() throws {
        let cipher = try SRTPCipher(key: Self.key, salt: Self.salt)
        let iv = cipher.rtcpIV(ssrc: 0x4d61_7273, index: 0x5d4)
        #expect(Array(UnsafeRawBufferPointer(start: iv, count: 12)) == Self.b("51752405 5203726f 207170bb"))
    }

    @Test("§16.2.1: protecting the first packet of a stream (ROC 0) gives the RFC's SRTP packet")
    func srtpEncryption() throws {
        let sender = try SRTPSender(key: Self.key, salt: Self.salt)
        #expect(sender.protect(Self.rtp) == .success(Self.srtp))
        #expect(sender.rolloverCounter(ssrc: 0x5501_a0b2) == 0)
    }

    @Test("§16.2.2: unprotecting the RFC's SRTP packet gives the RTP packet back")
    func srtpDecryption() throws {
        let receiver = try SRTPReceiver(key: Self.key, salt: Self.salt)
        #expect(receiver.unprotect(Self.srtp) == .success(Self.rtp))
        #expect(receiver.rolloverCounter(ssrc: 0x5501_a0b2) == 0)
    }

    @Test("§17.2: the 0x5d4th SRTCP packet (indices count from 0) is the RFC's, and unprotects back")
    func srtcp() throws {
        let sender = try SRTPSender(key: Self.key, salt: Self.salt)
        for _ in 0..<0x5d4 { _ = sender.protect(rtcp: Self.rtcp) }
        #expect(sender.nextSRTCPIndex == 0x5d4)
        #expect(sender.protect(rtcp: Self.rtcp) == .success(Self.srtcp))
        let receiver = try SRTPReceiver(key: Self.key, salt: Self.salt)
        #expect(receiver.unprotect(rtcp: Self.srtcp) == .success(Self.rtcp))
        #expect(receiver.unprotect(rtcp: Self.srtcp) == .failure(.replayed))
    }

    @Test("a tampered RFC packet (any byte: header, ciphertext, tag, trailer) is refused")
    func tamperedVectors() throws {
        for i in [0, 3, 11, 12, 30, Self.srtp.count - 1] {
            var forged = Self.srtp
            forged[i] ^= 0x01
            let receiver = try SRTPReceiver(key: Self.key, salt: Self.salt)
            #expect(receiver.unprotect(forged) == .failure(.authenticationFailed), "byte \(i)")
        }
        for i in [1, 7, 8, 50, Self.srtcp.count - 5, Self.srtcp.count - 1] {
            var forged = Self.srtcp
            forged[i] ^= 0x01
            let receiver = try SRTPReceiver(key: Self.key, salt: Self.salt)
            #expect(receiver.unprotect(rtcp: forged) == .failure(.authenticationFailed), "byte \(i)")
        }
    }
}
