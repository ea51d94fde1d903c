import CParleySys
import Glibc

/// Every libc call the network layer makes, as values (swift-system's `Syscalls.swift` + `Mocking.swift` are the
/// model): the types of ParleyNet take a `SystemCalls` (`.kernel` unless told otherwise) and call nothing else, so a
/// test replaces any call with its own (EAGAIN after k datagrams, a given errno, a scripted clock). Every call returns
/// what the C call returns, except that failures come back as `-errno` (no global `errno` to read afterwards) and the
/// calls that can be interrupted retry EINTR themselves.
public struct SystemCalls: Sendable {
    /// recvmmsg(2)/sendmmsg(2) through the C shims: descriptor, first header, count; how many went through or -errno
    /// (MSG_DONTWAIT, EINTR retried).
    public typealias BatchCall = @Sendable (_ fd: Int32, _ headers: UnsafeMutablePointer<parley_mmsg>, _ count: UInt32) -> Int32

    /// recvmmsg(2).
    public var recvmmsg: BatchCall
    /// sendmmsg(2).
    public var sendmmsg: BatchCall
    /// socket(2): domain, type, protocol; the descriptor or -errno.
    public var socket: @Sendable (_ domain: Int32, _ type: Int32, _ protocol: Int32) -> Int32
    /// bind(2): 0 or -errno.
    public var bind: @Sendable (_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32
    /// getsockname(2): 0 or -errno.
    public var getsockname: @Sendable (_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>) -> Int32
    /// setsockopt(2) SO_RCVBUF and SO_SNDBUF to `bytes` (best effort, through the C shim).
    public var setSocketBuffers: @Sendable (_ fd: Int32, _ bytes: Int32) -> Int32
    /// sendto(2) with `flags`, EINTR retried: bytes sent or -errno.
    public var sendto: @Sendable (_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32,
                                  _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int
    /// recvfrom(2) with `flags`: bytes received or -errno.
    public var recvfrom: @Sendable (_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ flags: Int32,
                                    _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>) -> Int
    /// poll(2), EINTR retried: how many descriptors are ready (0 on timeout) or -errno.
    public var poll: @Sendable (_ fds: UnsafeMutablePointer<pollfd>, _ count: Int, _ timeoutMilliseconds: Int32) -> Int32
    /// open(2) read-only and close-on-exec: the descriptor or -errno.
    public var openForReading: @Sendable (_ path: UnsafePointer<CChar>) -> Int32
    /// read(2), EINTR retried: bytes read (0 at end of file) or -errno.
    public var read: @Sendable (_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int
    /// write(2), EINTR retried: bytes written or -errno.
    public var write: @Sendable (_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int
    /// close(2).
    public var close: @Sendable (_ fd: Int32) -> Int32
    /// open(2) with `flags` (close-on-exec added) and `mode` for a file it creates, EINTR retried: the descriptor or -errno.
    public var openFile: @Sendable (_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32
    /// fstat(2): 0 or -errno.
    public var fileStatus: @Sendable (_ fd: Int32, _ status: UnsafeMutablePointer<stat>) -> Int32
    /// fsync(2), EINTR retried: 0 or -errno.
    public var fsync: @Sendable (_ fd: Int32) -> Int32
    /// mkdir(2): 0 or -errno.
    public var makeDirectory: @Sendable (_ path: UnsafePointer<CChar>, _ mode: mode_t) -> Int32
    /// link(2), which never replaces `newPath`: 0 or -errno (-EEXIST when it exists).
    public var link: @Sendable (_ existingPath: UnsafePointer<CChar>, _ newPath: UnsafePointer<CChar>) -> Int32
    /// rename(2): 0 or -errno.
    public var rename: @Sendable (_ oldPath: UnsafePointer<CChar>, _ newPath: UnsafePointer<CChar>) -> Int32
    /// unlink(2): 0 or -errno.
    public var unlink: @Sendable (_ path: UnsafePointer<CChar>) -> Int32
    /// eventfd(2) non-blocking and close-on-exec, through the C shim: the descriptor or -errno.
    public var eventfd: @Sendable () -> Int32
    /// statvfs(3): bytes free to an unprivileged user on the file system holding `path` (f_bavail × f_frsize), or -errno.
    public var freeBytes: @Sendable (_ path: UnsafePointer<CChar>) -> Int64 = { parley_free_bytes($0) }
    /// epoll_create1(2) close-on-exec, through the C shim: the descriptor or -errno.
    public var epollCreate: @Sendable () -> Int32 = { parley_epoll_create() }
    /// Watches a descriptor for input on an epoll descriptor, reported as `token`: 0 or -errno.
    public var epollWatch: @Sendable (_ epoll: Int32, _ fd: Int32, _ token: UInt64) -> Int32 = { parley_epoll_watch($0, $1, $2) }
    /// Watches a descriptor on an epoll descriptor for its peer hanging up (EPOLLRDHUP, HUP, ERR), reported as `token`:
    /// 0 or -errno.
    public var epollWatchHangUp: @Sendable (_ epoll: Int32, _ fd: Int32, _ token: UInt64) -> Int32 = { parley_epoll_watch_hangup($0, $1, $2) }
    /// Stops watching a descriptor (EPOLL_CTL_DEL): 0 or -errno.
    public var epollForget: @Sendable (_ epoll: Int32, _ fd: Int32) -> Int32 = { parley_epoll_forget($0, $1) }
    /// epoll_wait(2), EINTR retried: up to `capacity` (≤ 256) ready tokens into `tokens`; the count (0 on timeout) or -errno.
    public var epollWait: @Sendable (_ epoll: Int32, _ tokens: UnsafeMutablePointer<UInt64>, _ capacity: Int32, _ timeoutMilliseconds: Int32) -> Int32
        = { parley_epoll_wait($0, $1, $2, $3) }
    /// clock_gettime(2): nanoseconds of the clock.
    public var clockNanoseconds: @Sendable (_ clock: clockid_t) -> Int64
    /// sysconf(3).
    public var sysconf: @Sendable (_ name: Int32) -> Int
    /// malloc_trim(3) with pad 0, through the C shim: non-zero when pages were returned.
    public var mallocTrim: @Sendable () -> Int32
    /// strerror(3): the text of an errno value.
    public var errorText: @Sendable (_ code: Int32) -> String
    /// pthread_create(3) and pthread_setname_np(3): starts `body` on a thread of its own; the thread or -errno.
    public var startThread: @Sendable (_ name: String, _ body: @escaping @Sendable () -> Void) -> Result<pthread_t, SystemError>
    /// pthread_join(3).
    public var joinThread: @Sendable (_ thread: pthread_t) -> Void
    /// pthread_sigmask(3): blocks SIGINT, SIGTERM and SIGHUP in the calling thread and every thread it starts
    /// afterwards.
    public var blockProcessSignals: @Sendable () -> Void
    /// sigtimedwait(2) for SIGINT, SIGTERM or SIGHUP (blocked first), at most `milliseconds` (negative: forever):
    /// returns the signal received, or 0 when none came in time.
    public var waitForProcessSignal: @Sendable (_ milliseconds: Int) -> Int32

    /// The kernel's calls.
    public static let kernel = SystemCalls(
        recvmmsg: { parley_recvmmsg($0, $1, $2) },
        sendmmsg: { parley_sendmmsg($0, $1, $2) },
        socket: { domain, type, proto in
            let fd = Glibc.socket(domain, type, proto)
            return fd >= 0 ? fd : -errno
        },
        bind: { fd, address, length in Glibc.bind(fd, address, length) == 0 ? 0 : -errno },
        getsockname: { fd, address, length in Glibc.getsockname(fd, address, length) == 0 ? 0 : -errno },
        setSocketBuffers: { parley_set_socket_buffers($0, $1) },
        sendto: { fd, bytes, count, flags, address, length in
            retryingInterrupts { Glibc.sendto(fd, bytes, count, flags, address, length) }
        },
        recvfrom: { fd, buffer, count, flags, address, length in
            retryingInterrupts { Glibc.recvfrom(fd, buffer, count, flags, address, length) }
        },
        poll: { fds, count, timeout in
            Int32(retryingInterrupts { Int(Glibc.poll(fds, nfds_t(count), timeout)) })
        },
        openForReading: { path in
            Int32(retryingInterrupts { Int(Glibc.open(path, O_RDONLY | O_CLOEXEC)) })
        },
        read: { fd, buffer, count in retryingInterrupts { Glibc.read(fd, buffer, count) } },
        write: { fd, bytes, count in retryingInterrupts { Glibc.write(fd, bytes, count) } },
        close: { Glibc.close($0) },
        openFile: { path, flags, mode in
            Int32(retryingInterrupts { Int(Glibc.open(path, flags | O_CLOEXEC, mode)) })
        },
        fileStatus: { fd, status in Glibc.fstat(fd, status) == 0 ? 0 : -errno },
        fsync: { fd in Int32(retryingInterrupts { Int(Glibc.fsync(fd)) }) },
        makeDirectory: { path, mode in Glibc.mkdir(path, mode) == 0 ? 0 : -errno },
        link: { existing, new in Glibc.link(existing, new) == 0 ? 0 : -errno },
        rename: { old, new in Glibc.rename(old, new) == 0 ? 0 : -errno },
        unlink: { path in Glibc.unlink(path) == 0 ? 0 : -errno },
        eventfd: { parley_eventfd() },
        clockNanoseconds: { clock in
            var ts = timespec()
            clock_gettime(clock, &ts)
            return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
        },
        sysconf: { Glibc.sysconf($0) },
        mallocTrim: { parley_malloc_trim() },
        errorText: { String(cString: strerror($0)) },
        startThread: { name, body in
            let context = Unmanaged.passRetained(ThreadBody(name: name, body)).toOpaque()
            var thread = pthread_t()
            let rc = pthread_create(&thread, nil, { context in
                let box = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
                _ = parley_set_thread_name(String(decoding: box.name.utf8.prefix(15), as: UTF8.self))
                box.body()
                return nil
            }, context)
            guard rc == 0 else {
                Unmanaged<ThreadBody>.fromOpaque(context).release()
                return .failure(SystemError("pthread_create", rc))
            }
            return .success(thread)
        },
        joinThread: { _ = pthread_join($0, nil) },
        blockProcessSignals: {
            var signals = processSignals()
            pthread_sigmask(SIG_BLOCK, &signals, nil)
        },
        waitForProcessSignal: { milliseconds in
            var signals = processSignals()
            if milliseconds < 0 {
                var received: Int32 = 0
                sigwait(&signals, &received)
                return received
            }
            var limit = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
            let received = sigtimedwait(&signals, nil, &limit)
            return received > 0 ? received : 0  // EAGAIN (time up) or EINTR
        }
    )
}

/// SIGINT, SIGTERM and SIGHUP.
private func processSignals() -> sigset_t {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGINT)
    sigaddset(&signals, SIGTERM)
    sigaddset(&signals, SIGHUP)
    return signals
}

/// What a new thread runs, handed over through pthread_create's context pointer.
private final class ThreadBody {
    let name: String
    let body: @Sendable () -> Void
    init(name: String, _ body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}

/// Runs `call` until it does not fail with EINTR; returns its result, or -errno when it failed.
@inline(__always)
private func retryingInterrupts(_ call: () -> Int) -> Int {
    while true {
        let n = call()
        if n >= 0 { return n }
        let code = errno
        if code != EINTR { return -Int(code) }
    }
}
