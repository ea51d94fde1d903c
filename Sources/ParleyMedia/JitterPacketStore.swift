// Fixed-slot packet storage for the jitter buffer: one allocation at init, slot = extended sequence mod capacity.

/// What the store knows about one held packet.
struct JitterSlot {
    /// Extended (unwrapped) sequence number; `Int64.min` when the slot is empty.
    var sequence: Int64 = .min
    /// Extended timestamp, relative to the stream's first timestamp.
    var timestamp: Int64 = 0
    /// Original RTP fields, handed back in `JitterFrame`.
    var rtpSequence: UInt16 = 0
    var rtpTimestamp: UInt32 = 0
    /// Bytes of payload stored.
    var length: Int = 0
    /// Arrival time, ns.
    var arrival: Int64 = 0

    /// True when the slot holds a packet.
    var isOccupied: Bool { sequence != .min }
    /// A 1–2 byte Opus payload is DTX (a silence frame).
    var isDTX: Bool { length <= 2 }
}

/// Packets held by the jitter buffer, in `capacity` fixed slots over one payload allocation.
///
/// Slot `i` holds the packet whose extended sequence number is `i` modulo `capacity`, so lookup is O(1) and a
/// packet `capacity` or more ahead of a held one collides with it; the older of the two is evicted.
final class JitterPacketStore {
    let capacity: Int
    let maxPayloadBytes: Int
    private(set) var slots: [JitterSlot]
    private let bytes: UnsafeMutableRawPointer
    /// Packets currently held.
    private(set) var count = 0

    init(capacity: Int, maxPayloadBytes: Int) {
        self.capacity = max(capacity, 2)
        self.maxPayloadBytes = max(maxPayloadBytes, 1)
        slots = Array(repeating: JitterSlot(), count: self.capacity)
        bytes = .allocate(byteCount: self.capacity * self.maxPayloadBytes, alignment: 16)
    }

    deinit { bytes.deallocate() }

    @inline(__always) private func index(_ sequence: Int64) -> Int {
        Int(((sequence % Int64(capacity)) + Int64(capacity)) % Int64(capacity))
    }

    /// The held packet with this extended sequence number, if any.
    func slot(_ sequence: Int64) -> JitterSlot? {
        let s = slots[index(sequence)]
        return s.sequence == sequence ? s : nil
    }

    /// True when the packet with this extended sequence number is held.
    func contains(_ sequence: Int64) -> Bool { slots[index(sequence)].sequence == sequence }

    /// Outcome of `store`.
    enum StoreResult {
        case stored
        case duplicate
        /// Stored, evicting this older packet.
        case evicted(JitterSlot)
        /// Not stored: a newer packet holds the slot.
        case tooOld
    }

    /// Copies the packet into its slot.
    func store(_ slot: JitterSlot, payload: UnsafeRawBufferPointer) -> StoreResult {
        let i = index(slot.sequence)
        let old = slots[i]
        if old.sequence == slot.sequence { return .duplicate }
        if old.isOccupied && old.sequence > slot.sequence { return .tooOld }
        var s = slot
        s.length = min(payload.count, maxPayloadBytes)
        if s.length > 0, let base = payload.baseAddress {
            (bytes + i * maxPayloadBytes).copyMemory(from: base, byteCount: s.length)
        }
        slots[i] = s
        if old.isOccupied { return .evicted(old) }
        count += 1
        return .stored
    }

    /// Forgets the held packet with this extended sequence number (its bytes stay readable until overwritten).
    func remove(_ sequence: Int64) {
        let i = index(sequence)
        guard slots[i].sequence == sequence else { return }
        slots[i].sequence = .min
        count -= 1
    }

    /// The lowest held extended sequence number at or above `from` (all held ones when `from` is nil).
    func lowest(atOrAbove from: Int64?) -> JitterSlot? {
        var best: JitterSlot?
        for s in slots where s.isOccupied && s.sequence >= (from ?? .min) {
            if best == nil || s.sequence < best!.sequence { best = s }
        }
        return best
    }

    /// A frame view of a held packet's payload.
    func frame(_ slot: JitterSlot) -> JitterFrame {
        let start = bytes + index(slot.sequence) * maxPayloadBytes
        return JitterFrame(sequenceNumber: slot.rtpSequence, timestamp: slot.rtpTimestamp,
                           payload: UnsafeRawBufferPointer(start: start, count: slot.length))
    }

    /// Empties every slot.
    func removeAll() {
        for i in slots.indices { slots[i].sequence = .min }
        count = 0
    }
}
