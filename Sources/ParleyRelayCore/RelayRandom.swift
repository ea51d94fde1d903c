/// The one source of randomness of a `RelayCore`: connection ids, session secrets, SSRCs, call room names, mix
/// sequence numbers and timestamps all come from the generator the core was given (`SystemRandomNumberGenerator` in
/// production, `SeededRandomNumberGenerator` in tests, so a core fed the same datagrams sends the same bytes).
/// A class, so the parts of a core draw from one sequence; owned by the core's thread.
final class RelayRandom {
    private var generator: any RandomNumberGenerator

    init(_ generator: any RandomNumberGenerator) { self.generator = generator }

    /// 32 random bits.
    func uint32() -> UInt32 { UInt32(truncatingIfNeeded: generator.next()) }

    /// 64 random bits.
    func uint64() -> UInt64 { generator.next() }

    /// 16 random bits.
    func uint16() -> UInt16 { UInt16(truncatingIfNeeded: generator.next()) }

    /// `count` random bytes.
    func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(count)
        while out.count < count {
            var word = generator.next()
            for _ in 0..<min(8, count - out.count) {
                out.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return out
    }

    /// A random SSRC in 1…2³¹−1. Every SSRC the relay hands out or sends with stays in the positive half of a
    /// signed 32-bit integer: tools take an SSRC as a signed option (ffmpeg's `-ssrc` refuses 3879114235).
    func ssrc() -> UInt32 {
        var ssrc: UInt32
        repeat { ssrc = uint32() & 0x7FFF_FFFF } while ssrc == 0
        return ssrc
    }
}
