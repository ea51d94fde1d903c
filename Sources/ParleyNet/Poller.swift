import Glibc

/// Waits on a fixed set of descriptors with poll(2), its `pollfd` array allocated once (the loops call it
/// for every wakeup, so it must not allocate).
public final class Poller {
    private let fds: UnsafeMutablePointer<pollfd>
    private let count: Int
    private let calls: SystemCalls

    /// A poller over `descriptors`.
    public init(_ descriptors: [Int32], calls: SystemCalls = .kernel) {
        self.calls = calls
        count = descriptors.count
        fds = .allocate(capacity: count)
        for (i, fd) in descriptors.enumerated() { fds[i] = pollfd(fd: fd, events: Int16(POLLIN), revents: 0) }
    }

    deinit { fds.deallocate() }

    /// Waits until a descriptor is readable (or writable, where `watchWritable` asked for it) or
    /// `timeoutMilliseconds` pass (-1 = forever), retrying EINTR.
    public func wait(timeoutMilliseconds: Int32) {
        _ = calls.poll(fds, count, timeoutMilliseconds)
    }

    /// Whether the next `wait` also wakes when descriptor `i` becomes writable (POLLOUT): set it only while
    /// something waits to be sent, or `wait` returns at once for as long as the socket has room.
    public func watchWritable(_ i: Int, _ watch: Bool) {
        fds[i].events = watch ? Int16(POLLIN | POLLOUT) : Int16(POLLIN)
    }

    /// Whether descriptor `i` was readable (or in error) after the last `wait`.
    public func isReadable(_ i: Int) -> Bool { fds[i].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 }

    /// Whether descriptor `i` was writable after the last `wait` (only reported while `watchWritable` is set).
    public func isWritable(_ i: Int) -> Bool { fds[i].revents & Int16(POLLOUT) != 0 }
}

/// Waits for descriptors to become readable (poll(2)), retrying EINTR.
public enum Poll {
    /// Returns, per descriptor, whether it is readable; waits at most `timeoutMilliseconds` (-1 = forever).
    public static func readable(_ fds: [Int32], timeoutMilliseconds: Int32, calls: SystemCalls = .kernel) -> [Bool] {
        var pfds = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        _ = pfds.withUnsafeMutableBufferPointer { calls.poll($0.baseAddress!, $0.count, timeoutMilliseconds) }
        return pfds.map { $0.revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 }
    }
}

/// poll(2) over a descriptor list rebuilt before each wait (the TCP bridge's connections come and go); -1 entries are
/// ignored by the kernel. Readable includes errors and hang-ups, as `Poller` reports them.
public struct PollSet {
    private var fds: [pollfd] = []

    public init() {}

    /// Empties the list (keeping its storage).
    public mutating func removeAll() { fds.removeAll(keepingCapacity: true) }

    /// Adds `fd` (watched for input, and for room to write when `writable`); its index is the count before.
    public mutating func add(_ fd: Int32, writable: Bool = false) {
        fds.append(pollfd(fd: fd, events: Int16(writable ? POLLIN | POLLOUT : POLLIN), revents: 0))
    }

    /// Waits at most `timeoutMilliseconds` for any descriptor.
    public mutating func wait(timeoutMilliseconds: Int32) {
        _ = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), timeoutMilliseconds) }
    }

    /// Whether descriptor `i` had input, an error or a hang-up at the last wait.
    public func isReadable(_ i: Int) -> Bool { fds[i].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 }

    /// Whether descriptor `i` had room to write at the last wait.
    public func isWritable(_ i: Int) -> Bool { fds[i].revents & Int16(POLLOUT) != 0 }
}
