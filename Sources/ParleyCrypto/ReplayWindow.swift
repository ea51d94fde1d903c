/// A sliding anti-replay window over 64-bit counters (RFC 6479's bitmap in 64-bit blocks, as WireGuard's
/// `counter_validate`): every counter is accepted at most once, counters up to `size − 1` behind the highest one seen
/// may arrive late or out of order, older ones are refused.
///
/// Checking and marking are separate so that a datagram is decrypted only when its counter is new, and its counter
/// is marked only when it decrypted: `check` → open → `mark`. No allocation after `init`.
///
///     block:   [ b0 ][ b1 ] ... [ b32 ]   33 blocks × 64 bits, block index = (counter >> 6) mod 33
///     window:  highest − 2047 ... highest  (2048 counters, at most 33 blocks: no block is shared by two counters)
public struct ReplayWindow: Sendable {
    /// How many counters, ending at the highest seen, are remembered.
    public static let size: UInt64 = 2048
    private static let blockCount = Int(size / 64) + 1

    private var blocks: [UInt64]
    /// The highest counter accepted plus one; 0 while nothing has been accepted.
    private var next: UInt64 = 0

    /// An empty window: every counter below 2^64−1 is new.
    public init() { blocks = [UInt64](repeating: 0, count: Self.blockCount) }

    /// The highest counter accepted so far, if any.
    public var highest: UInt64? { next == 0 ? nil : next - 1 }

    /// Whether `counter` would be accepted, without changing anything: `.tooOld` behind the window, `.replayed` when
    /// already marked, `.nonceExhausted` for 2^64−1 (Noise reserves it).
    public func check(_ counter: UInt64) throws(NoiseError) {
        guard counter < UInt64.max else { throw .nonceExhausted }
        if counter >= next { return }
        if next - 1 - counter >= Self.size { throw .tooOld }
        if blocks[Self.blockIndex(counter)] & Self.bit(counter) != 0 { throw .replayed }
    }

    /// Marks `counter` as accepted (after its datagram authenticated), sliding the window forward when it is the
    /// newest; throws as `check` does, so calling `mark` alone is also a safe test-and-set.
    public mutating func mark(_ counter: UInt64) throws(NoiseError) {
        try check(counter)
        if counter >= next {
            let newBlock = counter >> 6
            if next == 0 {
                for i in blocks.indices { blocks[i] = 0 }
            } else {
                let oldBlock = (next - 1) >> 6
                let cleared = min(newBlock - oldBlock, UInt64(Self.blockCount))
                var i: UInt64 = 1
                while i <= cleared {
                    blocks[Int((oldBlock &+ i) % UInt64(Self.blockCount))] = 0
                    i += 1
                }
            }
            next = counter + 1
        }
        blocks[Self.blockIndex(counter)] |= Self.bit(counter)
    }

    @inline(__always)
    private static func blockIndex(_ counter: UInt64) -> Int { Int((counter >> 6) % UInt64(blockCount)) }

    @inline(__always)
    private static func bit(_ counter: UInt64) -> UInt64 { 1 << (counter & 63) }
}
