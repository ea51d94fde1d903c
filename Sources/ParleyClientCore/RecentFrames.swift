import ParleyWire

/// How much RFC 2198 redundancy a sender carries (`SendPipeline.redundantFrames`).
///
/// Two earlier frames per packet, as Chrome's Opus RED: an isolated loss, or a burst of two, is rebuilt 20–40 ms
/// after it happened from the packets that follow, on both legs at once (the copies travel sender → relay →
/// listener), with no round trip. The `moderate` profile loses mostly single packets and short Gilbert bursts; a
/// third copy would cost another frame's bytes for the rare burst of three, which NACK still repairs.
public enum RedundancyPolicy {
    /// Earlier frames a packet carries at most.
    public static let maximumDistance = 2
    /// Bytes of redundant data per packet at most (an older copy that does not fit is left out): at 56 kbit/s a
    /// frame is about 140 bytes, so two fit; at high bitrates the packet stays well within an MTU.
    public static let redundantBytesBudget = 600
}

/// The last few frames a sender sent, with their sequence numbers and timestamps, in fixed storage: the copies a RED
/// packet repeats. A frame is repeated only in the packets right after it with no gap in between (no DTX pause, no
/// mute), which is what lets a receiver place a copy by its distance alone (`RedundantFrames`).
struct RecentFrames {
    private struct Entry {
        var sequence: UInt16
        var timestamp: UInt32
        var length: Int
    }
    /// Opus frames at most (RFC 6716 §3.4: 1275 bytes); longer ones are not kept.
    static let maximumFrameBytes = 1275
    private var entries: [Entry]
    private let storage: UnsafeMutableRawBufferPointer
    private var newest = -1

    /// Room for the last `count` frames.
    init(count: Int) {
        entries = Array(repeating: Entry(sequence: 0, timestamp: 0, length: 0), count: max(1, count))
        storage = .allocate(byteCount: max(1, count) * Self.maximumFrameBytes, alignment: 8)
    }

    /// Frees the storage (the owner's `deinit`).
    func deallocate() { storage.deallocate() }

    /// Keeps `frame`, sent as `sequence` at `timestamp`, forgetting the oldest.
    mutating func append(_ frame: UnsafeRawBufferPointer, sequence: UInt16, timestamp: UInt32) {
        newest = (newest + 1) % entries.count
        let length = frame.count <= Self.maximumFrameBytes ? frame.count : 0
        entries[newest] = Entry(sequence: sequence, timestamp: timestamp, length: length)
        if length > 0 {
            let at = newest * Self.maximumFrameBytes
            UnsafeMutableRawBufferPointer(rebasing: storage[at..<(at + length)]).copyMemory(from: frame)
        }
    }

    /// How many frames back (1 …, at most `limit`) may go with the packet numbered `sequence` at `timestamp`: each
    /// exactly `k` packets and `k` frames before it, and all of them within `budget` bytes.
    func usable(before sequence: UInt16, timestamp: UInt32, frameSamples: Int, limit: Int, budget: Int) -> Int {
        var bytes = 0
        var count = 0
        for k in 1...min(limit, entries.count) where newest >= 0 {
            let e = entries[(newest - (k - 1) + entries.count) % entries.count]
            guard e.length > 0, e.sequence == sequence &- UInt16(k),
                e.timestamp == timestamp &- UInt32(k * frameSamples),
                bytes + e.length <= budget
            else { break }
            bytes += e.length
            count = k
        }
        return count
    }

    /// The frame `k` packets back (1: the last one sent), valid until the next `append`.
    func frame(back k: Int) -> UnsafeRawBufferPointer {
        let i = (newest - (k - 1) + entries.count) % entries.count
        let at = i * Self.maximumFrameBytes
        return UnsafeRawBufferPointer(rebasing: storage[at..<(at + entries[i].length)])
    }
}
