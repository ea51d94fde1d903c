import ParleyWire

/// The last packets of one stream, kept to answer NACKs (RFC 4585): a ring of fixed slots indexed by
/// sequence number, allocated once. A slot answers only for the exact sequence number stored in it.
public final class PacketHistory {
    /// Slots (packets remembered).
    public let slots: Int
    /// Largest packet kept.
    public let slotSize: Int
    private let storage: UnsafeMutableRawPointer
    private let lengths: UnsafeMutablePointer<Int32>
    private let sequences: UnsafeMutablePointer<UInt16>

    /// Allocates `slots` slots of `slotSize` bytes.
    public init(slots: Int = 128, slotSize: Int = 1500) {
        self.slots = slots
        self.slotSize = slotSize
        storage = .allocate(byteCount: slots * slotSize, alignment: 16)
        lengths = .allocate(capacity: slots)
        lengths.initialize(repeating: -1, count: slots)
        sequences = .allocate(capacity: slots)
        sequences.initialize(repeating: 0, count: slots)
    }

    deinit {
        storage.deallocate()
        lengths.deallocate()
        sequences.deallocate()
    }

    /// Remembers a packet (larger ones than a slot are not kept).
    public func store(sequence: UInt16, _ bytes: UnsafeRawBufferPointer) {
        let i = Int(sequence) % slots
        guard bytes.count <= slotSize, let base = bytes.baseAddress else { lengths[i] = -1; return }
        (storage + i * slotSize).copyMemory(from: base, byteCount: bytes.count)
        lengths[i] = Int32(bytes.count)
        sequences[i] = sequence
    }

    /// Notes the lines storing the packet after `sequence` will write (`HotLines`): its slot's first `bytes` and its
    /// length and number.
    func noteNextSlot(after sequence: UInt16, bytes: Int, in hot: HotLines) {
        let i = (Int(sequence) + 1) % slots
        hot.note(UnsafeRawPointer(storage + i * slotSize), bytes: min(bytes, slotSize))
        hot.note(UnsafeRawPointer(lengths + i), bytes: 4)
        hot.note(UnsafeRawPointer(sequences + i), bytes: 2)
    }

    /// The stored packet with this sequence number, if still held (valid until the next `store`).
    public func packet(sequence: UInt16) -> UnsafeRawBufferPointer? {
        let i = Int(sequence) % slots
        guard lengths[i] >= 0, sequences[i] == sequence else { return nil }
        return UnsafeRawBufferPointer(start: storage + i * slotSize, count: Int(lengths[i]))
    }
}
