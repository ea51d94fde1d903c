/// Tells which of a set of connected stream sockets their peers closed: an epoll set watching each for EPOLLRDHUP
/// (the peer shut its side, or reset: HUP, ERR), never for bytes arriving. For connections nobody reads while they
/// wait (a parked event stream): the kernel says at once that the client went away, where a write would find out
/// only at the next keepalive.
///
/// `watch` and `forget` from any thread (epoll_ctl is thread-safe); `wait` from one thread. The caller forgets a
/// socket before anything may close it: the kernel drops a closed descriptor from the set by itself, but a number
/// reused meanwhile must not be mistaken for the old one.
public final class HangUpWatch: @unchecked Sendable {
    // Invariant: `epoll` and `wakeup` live as long as the watch; `tokens` is used only by the one thread in `wait`.
    private let epoll: Int32
    private let wakeup: WakeupSignal
    private let calls: SystemCalls
    private let tokens = UnsafeMutablePointer<UInt64>.allocate(capacity: HangUpWatch.batch)
    /// Tokens `wait` returns at most per call.
    static let batch = 64
    /// The token of the wakeup descriptor (never a caller's).
    public static let wakeToken: UInt64 = 0

    /// An empty watch.
    public init(calls: SystemCalls = .kernel) throws(SystemError) {
        self.calls = calls
        let fd = calls.epollCreate()
        guard fd >= 0 else { throw SystemError("epoll_create1", -fd) }
        epoll = fd
        do {
            wakeup = try WakeupSignal(calls: calls)
        } catch {
            _ = calls.close(fd)
            throw error
        }
        let rc = calls.epollWatch(epoll, wakeup.fd, Self.wakeToken)
        guard rc == 0 else {
            _ = calls.close(fd)
            throw SystemError("epoll_ctl", -rc)
        }
    }

    deinit {
        _ = calls.close(epoll)
        tokens.deallocate()
    }

    /// Reports `token` (not `wakeToken`) from `wait` once the peer of socket `fd` hangs up; 0 or -errno.
    @discardableResult
    public func watch(_ fd: Int32, token: UInt64) -> Int32 {
        precondition(token != Self.wakeToken, "token 0 is the watch's own")
        return calls.epollWatchHangUp(epoll, fd, token)
    }

    /// Stops watching `fd` (call it while `fd` is still open).
    public func forget(_ fd: Int32) { _ = calls.epollForget(epoll, fd) }

    /// Waits up to `timeoutMilliseconds` (or until `wake`) and returns the tokens of the sockets whose peers hung up.
    /// Watching is level-triggered: forget a socket once handled, or it is reported again.
    public func wait(timeoutMilliseconds: Int32) -> [UInt64] {
        let n = calls.epollWait(epoll, tokens, Int32(Self.batch), timeoutMilliseconds)
        guard n > 0 else { return [] }
        var hungUp: [UInt64] = []
        for i in 0..<Int(n) {
            if tokens[i] == Self.wakeToken { wakeup.drain() } else { hungUp.append(tokens[i]) }
        }
        return hungUp
    }

    /// Ends a `wait` now (from any thread).
    public func wake() { wakeup.signal() }
}
