import ParleyWire
import Synchronization

/// Forwarded packets one worker passes to another for sending: a bounded single-producer, single-consumer ring
/// without locks (the model: a Linux kernel `kfifo`, or LMAX's ring). The worker that owns a room fans a packet out
/// to its own share of the room's listeners and passes it once to each other worker with that worker's share (an
/// immutable address list, shared, not copied); the other worker sends it on the owner's socket, so listeners see
/// one source port whichever core did the sending (see `FanOutTable`).
///
///     producer (owner's thread)                 consumer (helper's thread)
///     ───────────────────────────────           ──────────────────────────────────────
///     slot[tail % n] ← bytes, addresses          head < tail (acquire) → read slot[head % n]
///     tail += 1 (release)                        send it; clear the slot; head += 1 (release)
///
/// Each slot holds one packet (at most `slotSize` bytes, copied) and a reference to the address list. Full: `push`
/// refuses and the producer sends the share itself. Zero allocations per packet.
final class FanOutRing: @unchecked Sendable {
    // Invariant: slots in [head, tail) are written only by the producer before it publishes `tail` and read only by
    // the consumer after it loaded `tail`; the consumer releases a slot by publishing `head`. Each side touches only
    // its own index's writes; the other's is read with acquire ordering.
    private struct Slot {
        var length = 0
        var addresses: [PeerAddress] = []
    }

    /// Packets the ring holds at most.
    let capacity: Int
    /// The largest packet it takes.
    let slotSize: Int
    private let slots: UnsafeMutablePointer<Slot>
    private let buffers: UnsafeMutableRawPointer
    private let head = Atomic<Int>(0)
    private let tail = Atomic<Int>(0)

    init(capacity: Int = 256, slotSize: Int = 1536) {
        self.capacity = max(1, capacity)
        self.slotSize = slotSize
        slots = .allocate(capacity: self.capacity)
        slots.initialize(repeating: Slot(), count: self.capacity)
        buffers = .allocate(byteCount: self.capacity * slotSize, alignment: 16)
    }

    deinit {
        slots.deinitialize(count: capacity)
        slots.deallocate()
        buffers.deallocate()
    }

    /// Producer: queues `bytes` for `addresses`; false when the ring is full or the packet too large (nothing queued).
    func push(_ bytes: UnsafeRawBufferPointer, to addresses: [PeerAddress]) -> Bool {
        let t = tail.load(ordering: .relaxed)
        guard bytes.count <= slotSize, t - head.load(ordering: .acquiring) < capacity else { return false }
        let i = t % capacity
        (buffers + i * slotSize).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        slots[i].length = bytes.count
        slots[i].addresses = addresses
        tail.store(t + 1, ordering: .releasing)
        return true
    }

    /// Consumer: hands each queued packet and its addresses to `body`, oldest first, then frees its slot; returns how
    /// many. The bytes are valid only inside `body`.
    @discardableResult
    func drain(_ body: (UnsafeRawBufferPointer, [PeerAddress]) -> Void) -> Int {
        var h = head.load(ordering: .relaxed)
        let t = tail.load(ordering: .acquiring)
        let start = h
        while h < t {
            let i = h % capacity
            body(UnsafeRawBufferPointer(start: buffers + i * slotSize, count: slots[i].length), slots[i].addresses)
            slots[i].addresses = []  // the list goes back to its owner's reference count now, not at the slot's reuse
            h += 1
            head.store(h, ordering: .releasing)
        }
        return h - start
    }

    /// Packets waiting (either side; a snapshot).
    var count: Int { tail.load(ordering: .acquiring) - head.load(ordering: .acquiring) }
}
