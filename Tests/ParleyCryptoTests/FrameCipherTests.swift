@testable import ParleyCrypto
import Testing

/// End-to-end frame sealing: layout, round trip, tamper, replay, wrong key and direction, bounds. Keys fixed, the
/// first frame pinned byte for byte (checked against Python `cryptography`'s ChaCha20Poly1305 when pinned).
@Suite("FrameCipher")
struct FrameCipherTests {
    static let k1 = [UInt8](repeating: 0xA1, count: 32), k2 = [UInt8](repeating: 0xB2, count: 32)
    /// Alice seals with k1 (key id 0), Bob with k2 (key id 1).
    static func pair() -> (alice: FrameCipher, bob: FrameCipher) {
        (FrameCipher(sendKey: k1, sendKeyID: 0, receiveKey: k2, receiveKeyID: 1)!,
         FrameCipher(sendKey: k2, sendKeyID: 1, receiveKey: k1, receiveKeyID: 0)!)
    }
    static let opus: [UInt8] = [0x78, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09]

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() }

    @Test("layout: key id, big-endian counter, ciphertext, 16-byte tag; counters 0, 1, 2")
    func layout() throws {
        let (alice, bob) = Self.pair()
        for i in 0..<3 {
            let frame = try alice.seal(Self.opus)
            #expect(frame.count == Self.opus.count + FrameCipher.overhead && FrameCipher.overhead == 21)
            #expect(Array(frame.prefix(5)) == [0, 0, 0, 0, UInt8(i)])
            #expect(!frame.contains(subsequence: Array(Self.opus[1...])))
            #expect(try bob.open(frame) == Self.opus)
        }
        #expect(alice.nextCounter == 3 && bob.replayWindow.highest == 2)
    }

    @Test("pinned vector: the first frame under fixed keys")
    func vector() throws {
        let (alice, _) = Self.pair()
        let frame = try alice.seal(Self.opus)
        #expect(Self.hex(frame) == "000000000000f74e06d992343f48954d5141a701d0b5aa970ce38a7b8cd22d")
    }

    @Test("an empty payload seals to a bare header and tag and opens")
    func empty() throws {
        let (alice, bob) = Self.pair()
        let frame = try alice.seal([])
        #expect(frame.count == 21)
        #expect(try bob.open(frame) == [])
    }

    @Test("every flipped bit is refused, and refusing changes nothing")
    func tamper() throws {
        let (alice, bob) = Self.pair()
        let frame = try alice.seal(Self.opus)
        for bit in 0..<(frame.count * 8) where bit / 8 != 0 {  // byte 0 is the key id: a different refusal, below
            var bad = frame
            bad[bit / 8] ^= 1 << UInt8(bit % 8)
            #expect(throws: FrameCipherError.self) { try bob.open(bad) }
        }
        #expect(bob.framesRefused == frame.count * 8 - 8)
        #expect(try bob.open(frame) == Self.opus)  // the genuine frame still opens: nothing was marked
    }

    @Test("a replayed frame is refused; out of order within the window is fine; far behind is too old")
    func replay() throws {
        let (alice, bob) = Self.pair()
        var frames: [[UInt8]] = []
        for _ in 0..<3 { frames.append(try alice.seal(Self.opus)) }
        #expect(try bob.open(frames[2]) == Self.opus)
        #expect(try bob.open(frames[0]) == Self.opus)
        #expect(throws: FrameCipherError.replayed) { try bob.open(frames[2]) }
        #expect(throws: FrameCipherError.replayed) { try bob.open(frames[0]) }
        #expect(try bob.open(frames[1]) == Self.opus)
        alice.nextCounter = 5000
        #expect(try bob.open(try alice.seal(Self.opus)) == Self.opus)
        alice.nextCounter = 10
        #expect(throws: FrameCipherError.tooOld) { try bob.open(try alice.seal(Self.opus)) }
    }

    @Test("wrong key, own frame reflected back, cleartext Opus, short frames")
    func wrong() throws {
        let (alice, bob) = Self.pair()
        let frame = try alice.seal(Self.opus)
        #expect(throws: FrameCipherError.unknownKeyID(0)) { try alice.open(frame) }  // reflected to its sender
        let eve = FrameCipher(sendKey: [UInt8](repeating: 7, count: 32), sendKeyID: 0, receiveKey: Self.k2, receiveKeyID: 1)!
        #expect(throws: FrameCipherError.authenticationFailed) { try bob.open(try eve.seal(Self.opus)) }
        #expect(throws: FrameCipherError.authenticationFailed) { try bob.open([0] + Self.opus + [UInt8](repeating: 0, count: 16)) }
        #expect(throws: FrameCipherError.frameTooShort) { try bob.open(Self.opus) }
        #expect(throws: FrameCipherError.frameTooShort) { try bob.open([]) }
        #expect(bob.framesRefused == 4 && alice.framesRefused == 1)
    }

    @Test("bounds: small buffers, exhausted counter, bad key lengths")
    func bounds() throws {
        let (alice, bob) = Self.pair()
        var small = [UInt8](repeating: 0, count: Self.opus.count + 20)
        let p = Self.opus
        #expect(throws: FrameCipherError.bufferTooSmall) {
            try p.withUnsafeBytes { src in try small.withUnsafeMutableBytes { try alice.seal(src, into: $0) } }
        }
        let frame = try alice.seal(Self.opus)
        var tiny = [UInt8](repeating: 0, count: Self.opus.count - 1)
        #expect(throws: FrameCipherError.bufferTooSmall) {
            try frame.withUnsafeBytes { src in try tiny.withUnsafeMutableBytes { try bob.open(src, into: $0) } }
        }
        alice.nextCounter = UInt32.max
        #expect(throws: FrameCipherError.counterExhausted) { try alice.seal(Self.opus) }
        #expect(FrameCipher(sendKey: [1], sendKeyID: 0, receiveKey: Self.k2, receiveKeyID: 1) == nil)
        #expect(FrameCipher(sendKey: Self.k1, sendKeyID: 0, receiveKey: [], receiveKeyID: 1) == nil)
    }

    @Test("keys from an agreement open each other's frames")
    func fromAgreement() throws {
        let (a, b) = try CallKeyAgreementTests.pair()
        let ca = a.frameCipher(), cb = b.frameCipher()
        #expect(try cb.open(try ca.seal(Self.opus)) == Self.opus)
        #expect(try ca.open(try cb.seal(Self.opus)) == Self.opus)
    }
}
