import ParleyCrypto
import Testing

@Suite("LibSRTPSession: libsrtp2 AES_CM_128_HMAC_SHA1_80 (libsrtp's reference packets, round trips, tamper, replay)")
struct LibSRTPSessionTests {
    /// libsrtp's `srtp_validate` master key ‖ salt (test/srtp_driver.c).
    static let key = SDESKey(bytes: [
        0xe1, 0xf9, 0x7a, 0x0d, 0x3e, 0x01, 0x8b, 0xe0, 0xd6, 0x4f, 0xa3, 0x2c, 0x06, 0xde, 0x41, 0x39,  // master key
        0x0e, 0xc6, 0x75, 0xad, 0x49, 0x8a, 0xfe, 0xeb, 0xb6, 0x96, 0x0b, 0x3a, 0xab, 0xe6,              // master salt
    ])!

    /// RTP: V=2 PT 15, sequence 0x1234, timestamp 0xdecafbad, SSRC 0xcafebabe, 16 bytes of 0xab.
    static let rtp: [UInt8] = [0x80, 0x0f, 0x12, 0x34, 0xde, 0xca, 0xfb, 0xad, 0xca, 0xfe, 0xba, 0xbe]
        + [UInt8](repeating: 0xab, count: 16)
    /// The same packet as SRTP: header unchanged, payload encrypted, then the 80-bit HMAC-SHA1 tag.
    static let srtp: [UInt8] = [
        0x80, 0x0f, 0x12, 0x34, 0xde, 0xca, 0xfb, 0xad, 0xca, 0xfe, 0xba, 0xbe,  // header (clear)
        0x4e, 0x55, 0xdc, 0x4c, 0xe7, 0x99, 0x78, 0xd8, 0x8c, 0xa4, 0xd2, 0x15, 0x94, 0x9d, 0x24, 0x02,  // payload
        0xb7, 0x8d, 0x6a, 0xcc, 0x99, 0xea, 0x17, 0x9b, 0x8d, 0xbb,  // tag (10)
    ]
    /// RTCP: a sender report header from SSRC 0xcafebabe, 16 bytes of 0xab.
    static let rtcp: [UInt8] = [0x81, 0xc8, 0x00, 0x0b, 0xca, 0xfe, 0xba, 0xbe] + [UInt8](repeating: 0xab, count: 16)
    /// The same as SRTCP: first 8 bytes clear, body encrypted, E=1 ‖ index 1, then the tag.
    static let srtcp: [UInt8] = [
        0x81, 0xc8, 0x00, 0x0b, 0xca, 0xfe, 0xba, 0xbe,  // header (clear)
        0x71, 0x28, 0x03, 0x5b, 0xe4, 0x87, 0xb9, 0xbd, 0xbe, 0xf8, 0x90, 0x41, 0xf9, 0x77, 0xa5, 0xa8,  // body
        0x80, 0x00, 0x00, 0x01,  // E ‖ SRTCP index
        0x99, 0x3e, 0x08, 0xcd, 0x54, 0xd6, 0xc1, 0x23, 0x07, 0x98,  // tag (10)
    ]

    func protect(_ session: LibSRTPSession, _ clear: [UInt8], rtcp: Bool = false) throws -> [UInt8] {
        var buffer = clear + [UInt8](repeating: 0, count: LibSRTPSession.trailerCapacity)
        let n = try buffer.withUnsafeMutableBytes { b in
            rtcp ? try session.protectRTCP(b, length: clear.count) : try session.protectRTP(b, length: clear.count)
        }
        return Array(buffer[0..<n])
    }

    func unprotect(_ session: LibSRTPSession, _ packet: [UInt8], rtcp: Bool = false) throws -> [UInt8] {
        var buffer = packet
        let n = try buffer.withUnsafeMutableBytes { b in
            rtcp ? try session.unprotectRTCP(b, length: packet.count) : try session.unprotectRTP(b, length: packet.count)
        }
        return Array(buffer[0..<n])
    }

    @Test("libsrtp's reference SRTP and SRTCP packets, byte for byte, both ways")
    func referencePackets() throws {
        let sender = try #require(LibSRTPSession(key: Self.key, direction: .outbound))
        #expect(try protect(sender, Self.rtp) == Self.srtp)
        #expect(try protect(sender, Self.rtcp, rtcp: true) == Self.srtcp)
        let receiver = try #require(LibSRTPSession(key: Self.key, direction: .inbound))
        #expect(try unprotect(receiver, Self.srtp) == Self.rtp)
        #expect(try unprotect(receiver, Self.srtcp, rtcp: true) == Self.rtcp)
    }

    @Test("round trip of a stream across sequence 65535 → 0; the overheads are 10 (SRTP) and 14 (SRTCP) bytes")
    func roundTrip() throws {
        let key = SDESKey.random()
        let sender = try #require(LibSRTPSession(key: key, direction: .outbound))
        let receiver = try #require(LibSRTPSession(key: key, direction: .inbound))
        for k in 0..<8 {
            var packet = Self.rtp
            let sequence = UInt16(truncatingIfNeeded: 65_532 + k)  // crosses the rollover
            packet[2] = UInt8(sequence >> 8)
            packet[3] = UInt8(truncatingIfNeeded: sequence)
            packet += (0..<k).map { UInt8($0) }
            let protected = try protect(sender, packet)
            #expect(protected.count == packet.count + SRTPProtectionProfile.aesCM128HmacSHA1_80.rtpOverhead)
            #expect(try unprotect(receiver, protected) == packet)
        }
        let protected = try protect(sender, Self.rtcp, rtcp: true)
        #expect(protected.count == Self.rtcp.count + SRTPProtectionProfile.aesCM128HmacSHA1_80.rtcpOverhead)
        #expect(try unprotect(receiver, protected, rtcp: true) == Self.rtcp)
    }

    @Test("a flipped bit anywhere, a wrong key, or a cut tag: authenticationFailed, and the stream goes on")
    func tamper() throws {
        let receiver = try #require(LibSRTPSession(key: Self.key, direction: .inbound))
        for index in [0 + 1, 5, 11, 12, 27, 28, 37] {  // header, payload, tag (byte 0 would change the version: still a failure)
            var bad = Self.srtp
            bad[index] ^= 0x04
            #expect(throws: SRTPError.authenticationFailed) { try unprotect(receiver, bad) }
        }
        let stranger = try #require(LibSRTPSession(key: SDESKey.random(), direction: .outbound))
        #expect(throws: SRTPError.authenticationFailed) { try unprotect(receiver, try protect(stranger, Self.rtp)) }
        var badRTCP = Self.srtcp
        badRTCP[10] ^= 0x80
        #expect(throws: SRTPError.authenticationFailed) { try unprotect(receiver, badRTCP, rtcp: true) }
        #expect(throws: SRTPError.malformed) { try unprotect(receiver, Array(Self.srtp.prefix(15))) }
        // Nothing above changed the session: the genuine packet still verifies.
        #expect(try unprotect(receiver, Self.srtp) == Self.rtp)
    }

    @Test("a replayed SRTP or SRTCP packet: replayed; one behind the 128-packet window: tooOld")
    func replay() throws {
        let key = SDESKey.random()
        let sender = try #require(LibSRTPSession(key: key, direction: .outbound))
        let receiver = try #require(LibSRTPSession(key: key, direction: .inbound))
        var packets: [[UInt8]] = []
        for k in 0..<200 {
            var packet = Self.rtp
            packet[2] = UInt8(k >> 8)
            packet[3] = UInt8(truncatingIfNeeded: k)
            packets.append(try protect(sender, packet))
        }
        _ = try unprotect(receiver, packets[0])
        #expect(throws: SRTPError.replayed) { try unprotect(receiver, packets[0]) }
        for k in 2..<200 { _ = try unprotect(receiver, packets[k]) }
        #expect(throws: SRTPError.tooOld) { try unprotect(receiver, packets[1]) }  // 198 behind: outside the window
        let srtcp = try protect(sender, Self.rtcp, rtcp: true)
        _ = try unprotect(receiver, srtcp, rtcp: true)
        #expect(throws: SRTPError.replayed) { try unprotect(receiver, srtcp, rtcp: true) }
    }

    @Test("an outbound session may protect the same packet twice (a NACKed packet resent), with the same bytes")
    func resend() throws {
        let sender = try #require(LibSRTPSession(key: Self.key, direction: .outbound))
        #expect(try protect(sender, Self.rtp) == Self.srtp)
        #expect(try protect(sender, Self.rtp) == Self.srtp)
    }

    @Test("protecting needs trailerCapacity bytes of room; too short a packet is malformed")
    func bounds() throws {
        let sender = try #require(LibSRTPSession(key: Self.key, direction: .outbound))
        var tight = Self.rtp + [UInt8](repeating: 0, count: SRTPProtectionProfile.aesCM128HmacSHA1_80.rtpOverhead)
        #expect(throws: SRTPError.bufferTooSmall) {
            try tight.withUnsafeMutableBytes { b in try sender.protectRTP(b, length: Self.rtp.count) }
        }
        #expect(throws: SRTPError.malformed) { try protect(sender, Array(Self.rtp.prefix(11))) }
    }

    @Test("keys: 30 bytes as 40 base64 characters in an a=crypto line; other lengths and bad base64 are refused")
    func keys() throws {
        #expect(Self.key.base64 == "4fl6DT4Bi+DWT6MsBt5BOQ7Gda1Jiv7rtpYLOqvm")
        #expect(Self.key.cryptoAttribute() == "crypto:1 AES_CM_128_HMAC_SHA1_80 inline:4fl6DT4Bi+DWT6MsBt5BOQ7Gda1Jiv7rtpYLOqvm")
        #expect(SDESKey(base64: Self.key.base64) == Self.key)
        #expect(SDESKey(base64: "") == nil)
        #expect(SDESKey(base64: "AAAA") == nil)                       // 3 bytes
        #expect(SDESKey(base64: "4fl6DT4Bi+DWT6MsBt5BOQ7Gda1Jiv7rtpYLOqv!") == nil)
        #expect(SDESKey(bytes: [UInt8](repeating: 0, count: 29)) == nil)
        #expect(SDESKey.random() != SDESKey.random())
    }

    @Test("AEAD_AES_128_GCM (DTLS-SRTP's other profile): RTP and RTCP round trip with 16-byte tags; a flipped bit or a wrong key fails; a key of the wrong length is refused")
    func gcmProfile() throws {
        let master = (0..<28).map { UInt8($0 &* 7 &+ 3) }
        #expect(LibSRTPSession(masterKey: Array(master.prefix(27)), profile: .aeadAES128GCM, direction: .outbound) == nil)
        let out = try #require(LibSRTPSession(masterKey: master, profile: .aeadAES128GCM, direction: .outbound))
        let inbound = try #require(LibSRTPSession(masterKey: master, profile: .aeadAES128GCM, direction: .inbound))
        var other = master
        other[0] ^= 1
        let stranger = try #require(LibSRTPSession(masterKey: other, profile: .aeadAES128GCM, direction: .inbound))
        for (clear, isRTCP) in [(Self.rtp, false), (Self.rtcp, true)] {
            var buffer = [UInt8](repeating: 0, count: clear.count + LibSRTPSession.trailerCapacity)
            buffer.replaceSubrange(0..<clear.count, with: clear)
            let n = try buffer.withUnsafeMutableBytes { b in
                try isRTCP ? out.protectRTCP(b, length: clear.count) : out.protectRTP(b, length: clear.count)
            }
            #expect(n == clear.count + (isRTCP ? SRTPProtectionProfile.aeadAES128GCM.rtcpOverhead : SRTPProtectionProfile.aeadAES128GCM.rtpOverhead))
            var tampered = Array(buffer[0..<n])
            tampered[14] ^= 0x01
            #expect(throws: SRTPError.authenticationFailed) {
                try tampered.withUnsafeMutableBytes { b in
                    try isRTCP ? inbound.unprotectRTCP(b, length: n) : inbound.unprotectRTP(b, length: n)
                }
            }
            var wrongKey = Array(buffer[0..<n])
            #expect(throws: SRTPError.authenticationFailed) {
                try wrongKey.withUnsafeMutableBytes { b in
                    try isRTCP ? stranger.unprotectRTCP(b, length: n) : stranger.unprotectRTP(b, length: n)
                }
            }
            var packet = Array(buffer[0..<n])
            let m = try packet.withUnsafeMutableBytes { b in
                try isRTCP ? inbound.unprotectRTCP(b, length: n) : inbound.unprotectRTP(b, length: n)
            }
            #expect(Array(packet[0..<m]) == clear)
        }
    }
}
