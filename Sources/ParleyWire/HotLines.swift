/// The cache lines one wakeup's packets touched, noted while they are handled, for the next wakeup to fetch before
/// its packets need them (`HotLines.prefetch`, in ParleyNet).
///
/// A relay worker wakes every 20 ms to the same speakers' packets, and in between its `sendmmsg` of a few hundred
/// datagrams (the kernel's send path, loopback delivery) has pushed that per-speaker state — member, SRTP contexts,
/// the room's fan-out table and key — out of the caches: handled cold, each packet waits on one miss after another.
/// Prefetched together at the wakeup, while the worker receives, the misses overlap instead. Only addresses are kept,
/// never read: a prefetch of memory freed since is a harmless hint. Owned by one thread; never allocates after init.
public final class HotLines {
    /// Lines noted at most per wakeup (the rest of a larger burst goes unprefetched).
    public let capacity: Int
    /// Lines noted since the last `clear`.
    public private(set) var count = 0
    /// The noted lines' addresses (64-byte aligned), `count` of them.
    public let lines: UnsafeMutablePointer<UnsafeRawPointer?>

    /// Room for `capacity` lines.
    public init(capacity: Int = 2048) {
        self.capacity = capacity
        lines = .allocate(capacity: capacity)
    }

    deinit { lines.deallocate() }

    /// Notes every line of `bytes` bytes from `start`.
    public func note(_ start: UnsafeRawPointer, bytes: Int) {
        var line = UInt(bitPattern: start) & ~63
        let end = UInt(bitPattern: start) &+ UInt(max(1, bytes))
        while line < end, count < capacity {
            lines[count] = UnsafeRawPointer(bitPattern: line)
            count += 1
            line &+= 64
        }
    }

    /// Notes the first `bytes` bytes of a class instance (its header and stored properties).
    public func note(object: AnyObject, bytes: Int) {
        note(UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque()), bytes: bytes)
    }

    /// Forgets every noted line.
    public func clear() { count = 0 }
}
