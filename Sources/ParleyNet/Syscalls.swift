import Glibc
import CParleySys
import ParleyWire

/// An errno value from a failed system call, with the call's name.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The call that failed.
    public var call: String
    /// errno.
    public var code: Int32
    /// A system error.
    public init(_ call: String, _ code: Int32) { self.call = call; self.code = code }
    /// "bind: Address already in use".
    public var description: String { "\(call): \(String(cString: strerror(code)))" }
}

/// The batched datagram calls as values: a `DatagramBatch` makes every recvmmsg/sendmmsg through one, so a test can
/// stand in for the kernel (EAGAIN after k datagrams, a given errno). Each returns a count or -errno, like the C shims.
public struct BatchedDatagramCalls: Sendable {
    /// One call: the descriptor, the first header, how many headers; returns how many went through or -errno.
    public typealias Call = @Sendable (_ fd: Int32, _ headers: UnsafeMutablePointer<parley_mmsg>, _ count: UInt32) -> Int32
    /// recvmmsg(2).
    public var recvmmsg: Call
    /// sendmmsg(2).
    public var sendmmsg: Call

    /// Calls given by the caller (tests).
    public init(recvmmsg: @escaping Call, sendmmsg: @escaping Call) {
        self.recvmmsg = recvmmsg
        self.sendmmsg = sendmmsg
    }

    /// The kernel's: `parley_recvmmsg`/`parley_sendmmsg` (MSG_DONTWAIT, EINTR retried).
    public static let kernel = BatchedDatagramCalls(recvmmsg: { parley_recvmmsg($0, $1, $2) },
                                                    sendmmsg: { parley_sendmmsg($0, $1, $2) })
}

/// The monotonic clock (CLOCK_MONOTONIC) and the wall clock, in the units the cores take.
public enum Clock {
    /// Monotonic nanoseconds.
    public static func monotonicNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
    /// Seconds since the Unix epoch.
    public static func unixSeconds() -> Int64 { Int64(time(nil)) }
    /// Milliseconds since the Unix epoch.
    public static func unixMilliseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }
    /// CPU seconds this process used (user + system).
    public static func processCPUSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
    /// CPU seconds the calling thread used.
    public static func threadCPUSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

extension PeerAddress {
    /// Converts from a `sockaddr_storage` filled by the kernel (AF_INET or AF_INET6); nil for other families.
    public init?(storage: UnsafeRawPointer) {
        let family = storage.load(as: sa_family_t.self)
        if family == sa_family_t(AF_INET) {
            let sin = storage.load(as: sockaddr_in.self)
            self.init(ipv4: UInt32(bigEndian: sin.sin_addr.s_addr), port: UInt16(bigEndian: sin.sin_port))
        } else if family == sa_family_t(AF_INET6) {
            let sin6 = storage.load(as: sockaddr_in6.self)
            var high: UInt64 = 0, low: UInt64 = 0
            withUnsafeBytes(of: sin6.sin6_addr) { b in
                for i in 0..<8 { high = high << 8 | UInt64(b[i]) }
                for i in 8..<16 { low = low << 8 | UInt64(b[i]) }
            }
            self.init(high: high, low: low, port: UInt16(bigEndian: sin6.sin6_port))
        } else {
            return nil
        }
    }

    /// Writes this address as a `sockaddr_in6` (IPv4 as mapped) or `sockaddr_in` when `ipv4Socket`; returns its length.
    @inlinable
    public func write(to storage: UnsafeMutableRawPointer, ipv4Socket: Bool) -> socklen_t {
        if ipv4Socket {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr.s_addr = ipv4Value.bigEndian
            storage.storeBytes(of: sin, as: sockaddr_in.self)
            return socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        var sin6 = sockaddr_in6()
        sin6.sin6_family = sa_family_t(AF_INET6)
        sin6.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &sin6.sin6_addr) { b in
            for i in 0..<8 {
                b[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * i))
                b[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * i))
            }
        }
        storage.storeBytes(of: sin6, as: sockaddr_in6.self)
        return socklen_t(MemoryLayout<sockaddr_in6>.size)
    }
}

/// A non-blocking UDP socket bound to one address; closes its descriptor in `deinit`.
/// Owned by one thread; `sendto` on it from other threads is safe in the kernel (used only for join answers).
public final class UDPSocket: @unchecked Sendable {
    /// The descriptor.
    public let fd: Int32
    /// True for an AF_INET socket (addresses are written as `sockaddr_in`).
    public let isIPv4: Bool

    /// Opens a socket and binds it to `address` (port 0 = any free port).
    public init(bindingTo address: PeerAddress, bufferBytes: Int32 = 4 << 20) throws(SystemError) {
        isIPv4 = address.isIPv4
        fd = socket(isIPv4 ? AF_INET : AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno) }
        _ = parley_set_socket_buffers(fd, bufferBytes)
        var storage = sockaddr_storage()
        let length = withUnsafeMutableBytes(of: &storage) { address.write(to: $0.baseAddress!, ipv4Socket: isIPv4) }
        let rc = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) } }
        guard rc == 0 else {
            let e = errno
            close(fd)
            throw SystemError("bind \(address)", e)
        }
    }

    deinit { close(fd) }

    /// The address the socket is bound to.
    public var localAddress: PeerAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard rc == 0 else { return nil }
        return withUnsafeBytes(of: &storage) { PeerAddress(storage: $0.baseAddress!) }
    }

    /// Sends one datagram without blocking (sendto(2) with MSG_DONTWAIT, EINTR retried); throws what the kernel
    /// said when it refused it, `.wouldBlock` included (the datagram is not kept).
    public func send(_ bytes: UnsafeRawBufferPointer, to address: PeerAddress) throws(SocketError) {
        var storage = sockaddr_storage()
        let length = withUnsafeMutableBytes(of: &storage) { address.write(to: $0.baseAddress!, ipv4Socket: isIPv4) }
        var n: Int
        repeat {
            n = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, length) }
            }
        } while n < 0 && errno == EINTR
        if n < 0 { throw SocketError(errno: errno) }
    }

    /// Sends an array's bytes.
    public func send(_ bytes: [UInt8], to address: PeerAddress) throws(SocketError) {
        let failure: SocketError? = bytes.withUnsafeBytes { b in
            do throws(SocketError) { try send(b, to: address); return nil } catch { return error }
        }
        if let failure { throw failure }
    }

    /// Receives one datagram into `buffer` without blocking; nil when none is waiting.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, from: PeerAddress)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let n = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, &length) }
        }
        guard n >= 0, let from = withUnsafeBytes(of: &storage, { PeerAddress(storage: $0.baseAddress!) }) else { return nil }
        return (n, from)
    }
}

/// Waits on a fixed set of descriptors with poll(2), its `pollfd` array allocated once (the loops call it
/// for every wakeup, so it must not allocate).
public final class Poller {
    private let fds: UnsafeMutablePointer<pollfd>
    private let count: Int

    /// A poller over `descriptors`.
    public init(_ descriptors: [Int32]) {
        count = descriptors.count
        fds = .allocate(capacity: count)
        for (i, fd) in descriptors.enumerated() { fds[i] = pollfd(fd: fd, events: Int16(POLLIN), revents: 0) }
    }

    deinit { fds.deallocate() }

    /// Waits until a descriptor is readable (or writable, where `watchWritable` asked for it) or
    /// `timeoutMilliseconds` pass (-1 = forever), retrying EINTR.
    public func wait(timeoutMilliseconds: Int32) {
        var rc: Int32
        repeat { rc = poll(fds, nfds_t(count), timeoutMilliseconds) } while rc < 0 && errno == EINTR
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
    public static func readable(_ fds: [Int32], timeoutMilliseconds: Int32) -> [Bool] {
        var pfds = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        var rc: Int32
        repeat { rc = poll(&pfds, nfds_t(pfds.count), timeoutMilliseconds) } while rc < 0 && errno == EINTR
        return pfds.map { $0.revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 }
    }
}

/// An eventfd used to wake a loop blocked in poll from another thread.
public final class WakeupSignal: @unchecked Sendable {
    /// The descriptor; readable after `signal()`.
    public let fd: Int32
    /// Creates the eventfd.
    public init() throws(SystemError) {
        let rc = parley_eventfd()
        guard rc >= 0 else { throw SystemError("eventfd", -rc) }
        fd = rc
    }
    deinit { close(fd) }
    /// Wakes the waiting loop (safe from any thread: eventfd writes are atomic).
    public func signal() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }
    /// Clears the signal.
    public func drain() {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }
}

/// glibc's allocator.
public enum Allocator {
    /// Gives the free pages of every malloc arena back to the system (`malloc_trim(3)` with pad 0). glibc returns
    /// only the top of a heap on its own, so memory freed below live allocations stays resident. It holds each
    /// arena's lock while it walks that arena's free chunks (milliseconds for a large heap): call it rarely.
    /// True when some pages were returned.
    @discardableResult
    public static func returnFreePages() -> Bool { parley_malloc_trim() != 0 }
}

/// Writes a line to a file descriptor (stdout/stderr without the non-Sendable C globals).
public func writeLine(_ text: String, fd: Int32 = 1) {
    var line = text
    line.append("\n")
    line.withUTF8 { buf in
        var offset = 0
        while offset < buf.count {
            let n = write(fd, buf.baseAddress! + offset, buf.count - offset)
            if n <= 0 { if errno == EINTR { continue }; return }
            offset += n
        }
    }
}
