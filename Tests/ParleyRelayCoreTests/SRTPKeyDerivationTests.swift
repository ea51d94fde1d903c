import ParleyCrypto
import ParleyWebRTC
import Testing

/// SRTP's key derivation (`SRTPKeyDerivation`) against RFC 3711's vector and against libsrtp2 itself: what libsrtp
/// protects from a DTLS-SRTP master key, the relay's own AES-256-GCM SRTP (libsodium) opens with the derived keys.
@Suite("SRTP key derivation (RFC 3711 §4.3.1, RFC 7714 §11): RFC vector, and libsrtp2's packets open with the derived keys")
struct SRTPKeyDerivationTests {
    @Test("RFC 3711 Appendix B.3: AES-128 PRF, cipher key and salt")
    func rfcVector() throws {
        let key: [UInt8] = [0xE1, 0xF9, 0x7A, 0x0D, 0x3E, 0x01, 0x8B, 0xE0, 0xD6, 0x4F, 0xA3, 0x2C, 0x06, 0xDE, 0x41, 0x39]
        let salt: [UInt8] = [0x0E, 0xC6, 0x75, 0xAD, 0x49, 0x8A, 0xFE, 0xEB, 0xB6, 0x96, 0x0B, 0x3A, 0xAB, 0xE6]
        #expect(SRTPKeyDerivation.derive(masterKey: key, masterSalt: salt, label: .rtpKey, length: 16)
                == [0xC6, 0x1E, 0x7A, 0x93, 0x74, 0x4F, 0x39, 0xEE, 0x10, 0x73, 0x4A, 0xFE, 0x3F, 0xF7, 0xA0, 0x87])
        #expect(SRTPKeyDerivation.derive(masterKey: key, masterSalt: salt, label: .rtpSalt, length: 14)
                == [0x30, 0xCB, 0xBC, 0x08, 0x86, 0x3D, 0x8C, 0x85, 0xD4, 0x9D, 0xB3, 0x4A, 0x9A, 0xE1])
        #expect(SRTPKeyDerivation.derive(masterKey: Array(key.prefix(15)), masterSalt: salt, label: .rtpKey, length: 16) == nil)
    }

    @Test("AEAD_AES_256_GCM: RTP and RTCP protected by libsrtp2 with a master key open in SRTPReceiver with the derived keys, and the reverse")
    func libsrtpAgrees() throws {
        let master = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }, salt = (0..<12).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 7) }
        let keys = try #require(SRTPKeyDerivation.aeadSessionKeys(masterKey: master, masterSalt: salt))
        let libsrtpOut = try #require(LibSRTPSession(masterKey: master + salt, profile: .aeadAES256GCM, direction: .outbound))
        let libsrtpIn = try #require(LibSRTPSession(masterKey: master + salt, profile: .aeadAES256GCM, direction: .inbound))
        let rtpIn = try SRTPReceiver(key: keys.rtpKey, salt: keys.rtpSalt), rtcpIn = try SRTPReceiver(key: keys.rtcpKey, salt: keys.rtcpSalt)
        let rtpOut = try SRTPSender(key: keys.rtpKey, salt: keys.rtpSalt), rtcpOut = try SRTPSender(key: keys.rtcpKey, salt: keys.rtcpSalt)
        let rtp: [UInt8] = [0x80, 0x6F, 0x12, 0x34, 0xDE, 0xCA, 0xFB, 0xAD, 0xCA, 0xFE, 0xBA, 0xBE] + [UInt8](repeating: 0xAB, count: 40)
        let rtcp: [UInt8] = [0x81, 0xC9, 0x00, 0x07, 0xCA, 0xFE, 0xBA, 0xBE] + [UInt8](repeating: 0x11, count: 24)
        for (clear, isRTCP) in [(rtp, false), (rtcp, true)] {
            // libsrtp → ours
            var buffer = clear + [UInt8](repeating: 0, count: LibSRTPSession.trailerCapacity)
            let n = try buffer.withUnsafeMutableBytes { isRTCP ? try libsrtpOut.protectRTCP($0, length: clear.count) : try libsrtpOut.protectRTP($0, length: clear.count) }
            var opened = [UInt8](repeating: 0, count: n)
            let m = try buffer.withUnsafeBytes { b in
                try opened.withUnsafeMutableBytes { o in
                    let packet = UnsafeRawBufferPointer(rebasing: b[0..<n])
                    return isRTCP ? try rtcpIn.unprotect(rtcp: packet, into: o) : try rtpIn.unprotect(packet, into: o)
                }
            }
            #expect(Array(opened.prefix(m)) == clear)
            // ours → libsrtp
            var sealed = [UInt8](repeating: 0, count: clear.count + SRTPSender.rtcpOverhead + LibSRTPSession.trailerCapacity)
            let k = try clear.withUnsafeBytes { c in
                try sealed.withUnsafeMutableBytes { isRTCP ? try rtcpOut.protect(rtcp: c, into: $0) : try rtpOut.protect(c, into: $0) }
            }
            let l = try sealed.withUnsafeMutableBytes { isRTCP ? try libsrtpIn.unprotectRTCP($0, length: k) : try libsrtpIn.unprotectRTP($0, length: k) }
            #expect(Array(sealed.prefix(l)) == clear)
        }
    }
}
