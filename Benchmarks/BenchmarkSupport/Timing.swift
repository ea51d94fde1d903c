import CAllocCounter
import Glibc
import ParleyRelayCore
import ParleyWire

/// Nanoseconds of CPU time consumed by the calling thread (`CLOCK_THREAD_CPUTIME_ID`): time other processes on the
/// shared machine take from us does not count; what our own code and the caches it misses cost does.
@inlinable
public func threadCPUNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Nanoseconds of `CLOCK_MONOTONIC` (wall time, only to report how long the program ran).
public func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Milliseconds since the Unix epoch from `CLOCK_REALTIME` (read once, so tokens and cookies verify).
public func unixMillisecondsNow() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// The time the relay core is told. It starts at the real time and moves only when the benchmark advances it
/// (as swift-nio's `EmbeddedEventLoop`), so the core sees 20 ms between a speaker's packets however fast the
/// loop runs, and mix deadlines fall due exactly when simulated time reaches them.
public struct ManualClock {
    /// A clock at the real wall time, monotonic time at an arbitrary origin.
    public init() {}
    private static let originMonotonic = Instant.origin + .seconds(1000)
    private let originUnixMilliseconds = unixMillisecondsNow()
    /// The monotonic instant now.
    public private(set) var monotonic = ManualClock.originMonotonic

    /// The moment to pass the core.
    public var now: Moment {
        Moment(monotonic: monotonic, unixMilliseconds: originUnixMilliseconds + (monotonic - Self.originMonotonic).milliseconds)
    }

    /// Moves time forward to `instant` (never backwards).
    @inline(__always)
    public mutating func advance(to instant: Instant) { monotonic = max(monotonic, instant) }

    /// Moves time forward by `interval`.
    @inline(__always)
    public mutating func advance(by interval: Interval) { monotonic += interval }
}

/// The malloc-family call counter of `CAllocCounter` (counts every thread; the benchmark runs on one).
public enum Allocations {
    /// Calls counted so far (only while counting is on).
    @inline(__always)
    public static var count: UInt64 { parley_allocation_count() }

    /// Turns counting on or off.
    public static func counting(_ on: Bool) { parley_allocation_counting_enable(on ? 1 : 0) }
}


/// What the process holds in memory: resident pages, and glibc's allocator figures (`CAllocCounter`).
public enum Heap {
    /// Bytes allocated and not yet freed: what live objects and buffers hold.
    public static var inUseBytes: UInt64 { parley_heap_in_use_bytes() }
    /// Bytes the allocator took from the system and keeps (in use plus free-but-retained).
    public static var fromSystemBytes: UInt64 { parley_heap_from_system_bytes() }
    /// Gives the allocator's free pages back to the system (`malloc_trim(0)`); true when some were released.
    @discardableResult
    public static func trim() -> Bool { parley_heap_trim() != 0 }

    /// Resident set size (`/proc/self/statm`, second field, in pages), in bytes; 0 if it cannot be read.
    public static var residentBytes: UInt64 {
        let fd = open("/proc/self/statm", O_RDONLY)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return 0 }
        let fields = buffer[0..<n].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = UInt64(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }
}
