/// The 48-bit SRTP packet index, `2¹⁶ × ROC + SEQ` (RFC 3711 §3.3.1), estimated from a packet's 16-bit sequence
/// number and the highest index of its stream so far, as RFC 3711 Appendix A does: the rollover counter guess `v` is
/// ROC − 1, ROC or ROC + 1, whichever puts the packet nearest (within 2¹⁵) to the highest sequence number seen.
public enum SRTPPacketIndex {
    /// Largest rollover counter (32 bits).
    static let maxRolloverCounter = UInt64(UInt32.max)

    /// The index of a packet numbered `sequence` in a stream whose highest index is `highest` (nil: its first packet,
    /// whose ROC is 0). Throws `tooOld` for a packet from before ROC 0 and `indexExhausted` past ROC 2³² − 1.
    public static func estimate(sequence: UInt16, highest: UInt64?) throws(SRTPError) -> UInt64 {
        guard let highest else { return UInt64(sequence) }
        let roc = highest >> 16
        let highestSequence = UInt16(truncatingIfNeeded: highest)
        var guess = roc
        if highestSequence < 0x8000 {
            if sequence > highestSequence, sequence - highestSequence > 0x8000 {
                guard roc > 0 else { throw .tooOld }
                guess = roc - 1
            }
        } else if highestSequence - 0x8000 > sequence {
            guess = roc + 1
        }
        guard guess <= maxRolloverCounter else { throw .indexExhausted }
        return guess << 16 | UInt64(sequence)
    }

    /// The rollover counter of `index`.
    public static func rolloverCounter(of index: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: index >> 16) }
}
