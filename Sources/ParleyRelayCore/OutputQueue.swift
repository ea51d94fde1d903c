import ParleyWire

/// One datagram the core wants sent.
public struct OutgoingDatagram {
    /// The bytes: either a received datagram being forwarded (zero copy) or bytes in the queue's arena.
    public var bytes: UnsafeRawBufferPointer
    /// Where to.
    public var to: PeerAddress
    /// Send from the relay's public port rather than the worker's own (join answers before the member moved).
    public var viaPublicPort: Bool
}

/// What the core returns to its loop: datagrams to send, plus an arena for the bytes the core generates.
///
/// Everything is allocated once and reused: the loop sends every entry, then calls `reset()`. Entries may point
/// into received buffers, so the loop flushes before it receives into those buffers again. Zero allocations in
/// steady state; the entry array and arena grow only when a burst exceeds everything seen before.
public final class OutputQueue {
    @usableFromInline var entries: UnsafeMutablePointer<OutgoingDatagram>
    private var capacity: Int
    /// Datagrams queued.
    public private(set) var count = 0
    private var chunks: [UnsafeMutableRawPointer] = []
    private var chunkIndex = 0
    private var chunkOffset = 0
    private static let chunkSize = 64 * 1024

    /// An empty queue.
    public init(initialCapacity: Int = 4096) {
        capacity = initialCapacity
        entries = .allocate(capacity: capacity)
        chunks.append(.allocate(byteCount: Self.chunkSize, alignment: 16))
    }

    deinit {
        entries.deallocate()
        for c in chunks { c.deallocate() }
    }

    /// Entry `i` (inlinable: the worker loop reads every entry, from another module).
    @inlinable
    public subscript(i: Int) -> OutgoingDatagram { entries[i] }

    /// Queues bytes that outlive this call (a received datagram, or arena bytes).
    public func append(_ bytes: UnsafeRawBufferPointer, to: PeerAddress, viaPublicPort: Bool = false) {
        if count == capacity { grow() }
        (entries + count).initialize(to: OutgoingDatagram(bytes: bytes, to: to, viaPublicPort: viaPublicPort))
        count += 1
    }

    /// Space for one generated datagram of up to `size` bytes; pass the bytes written to `commit`.
    public func reserve(_ size: Int) -> UnsafeMutableRawBufferPointer {
        precondition(size <= Self.chunkSize)
        if chunkOffset + size > Self.chunkSize {
            chunkIndex += 1
            chunkOffset = 0
            if chunkIndex == chunks.count { chunks.append(.allocate(byteCount: Self.chunkSize, alignment: 16)) }
        }
        return UnsafeMutableRawBufferPointer(start: chunks[chunkIndex] + chunkOffset, count: size)
    }

    /// Queues the first `length` bytes of the space `reserve` returned.
    public func commit(_ space: UnsafeMutableRawBufferPointer, length: Int, to: PeerAddress, viaPublicPort: Bool = false) {
        chunkOffset += (length + 15) & ~15
        append(UnsafeRawBufferPointer(start: space.baseAddress, count: length), to: to, viaPublicPort: viaPublicPort)
    }

    /// Keeps the first `length` bytes of the space `reserve` returned without queuing them (a decrypted or protected
    /// packet that several entries will point at); they live until `reset`.
    public func keep(_ space: UnsafeMutableRawBufferPointer, length: Int) -> UnsafeRawBufferPointer {
        chunkOffset += (length + 15) & ~15
        return UnsafeRawBufferPointer(start: space.baseAddress, count: length)
    }

    /// Forgets every entry and arena byte (after the loop sent them).
    public func reset() {
        count = 0
        chunkIndex = 0
        chunkOffset = 0
    }

    private func grow() {
        let bigger = UnsafeMutablePointer<OutgoingDatagram>.allocate(capacity: capacity * 2)
        bigger.moveInitialize(from: entries, count: count)
        entries.deallocate()
        entries = bigger
        capacity *= 2
    }
}
