import ParleyCrypto
import ParleyWire

/// Byte helpers and packet builders shared by the SRTP tests.
enum SRTPTestSupport {
    /// Bytes from hex, spaces ignored.
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    /// A 32-byte key and 12-byte salt for tests that do not need the RFC's.
    static let key = (0..<32).map { UInt8($0 &* 7 &+ 1) }
    static let salt = (0..<12).map { UInt8($0 &* 13 &+ 5) }

    /// A sender and a receiver sharing `key` and `salt`.
    static func pair(maxStreams: Int = 16) throws -> (SRTPSender, SRTPReceiver) {
        (try SRTPSender(key: key, salt: salt, maxStreams: maxStreams), try SRTPReceiver(key: key, salt: salt, maxStreams: maxStreams))
    }

    /// An Opus-like RTP packet with an RFC 6464 audio level (extension id 1) and a payload derived from `sequence`.
    static func rtp(sequence: UInt16, ssrc: UInt32 = 0x1234_5678, level: UInt8 = 30, payloadBytes: Int = 60) -> [UInt8] {
        let header = RTPHeader(payloadType: 111, sequenceNumber: sequence, timestamp: UInt32(sequence) &* 960, ssrc: ssrc,
                               extensions: [.audioLevel(id: 1, AudioLevel(voice: true, level: level))])
        var packet = [UInt8](repeating: 0, count: header.serializedSize + payloadBytes)
        let n = packet.withUnsafeMutableBytes { try! header.serialize(into: $0) }
        for i in 0..<payloadBytes { packet[n + i] = UInt8(truncatingIfNeeded: i &* 31 &+ Int(sequence)) }
        return packet
    }

    /// Runs `body` from `input` into a fresh buffer `extra` bytes longer and returns what it wrote, or its error.
    static func run(_ input: [UInt8], extra: Int = 64,
                    _ body: (UnsafeRawBufferPointer, UnsafeMutableRawBufferPointer) throws(SRTPError) -> Int) -> Result<[UInt8], SRTPError> {
        var out = [UInt8](repeating: 0xEE, count: input.count + extra)
        var result: Result<Int, SRTPError> = .failure(.malformed)
        input.withUnsafeBytes { i in
            out.withUnsafeMutableBytes { o in
                do throws(SRTPError) { result = .success(try body(i, o)) } catch { result = .failure(error) }
            }
        }
        return result.map { Array(out[..<$0]) }
    }
}

extension SRTPSender {
    /// `protect` on arrays.
    func protect(_ packet: [UInt8]) -> Result<[UInt8], SRTPError> { SRTPTestSupport.run(packet) { i, o throws(SRTPError) in try protect(i, into: o) } }
    /// `protect(again:)` on arrays.
    func protect(again packet: [UInt8]) -> Result<[UInt8], SRTPError> {
        SRTPTestSupport.run(packet) { i, o throws(SRTPError) in try protect(again: i, into: o) }
    }
    /// `protect(rtcp:)` on arrays.
    func protect(rtcp packet: [UInt8], encrypt: Bool = true) -> Result<[UInt8], SRTPError> {
        SRTPTestSupport.run(packet) { i, o throws(SRTPError) in try protect(rtcp: i, into: o, encrypt: encrypt) }
    }
}

extension SRTPReceiver {
    /// `unprotect` on arrays.
    func unprotect(_ packet: [UInt8]) -> Result<[UInt8], SRTPError> { SRTPTestSupport.run(packet) { i, o throws(SRTPError) in try unprotect(i, into: o) } }
    /// `unprotect(rtcp:)` on arrays.
    func unprotect(rtcp packet: [UInt8]) -> Result<[UInt8], SRTPError> {
        SRTPTestSupport.run(packet) { i, o throws(SRTPError) in try unprotect(rtcp: i, into: o) }
    }
}
