/// An eventfd used to wake a loop blocked in poll from another thread.
public final class WakeupSignal: @unchecked Sendable {
    /// The descriptor; readable after `signal()`.
    public let fd: Int32
    private let calls: SystemCalls
    /// Creates the eventfd.
    public init(calls: SystemCalls = .kernel) throws(SystemError) {
        self.calls = calls
        let rc = calls.eventfd()
        guard rc >= 0 else { throw SystemError("eventfd", -rc) }
        fd = rc
    }
    deinit { _ = calls.close(fd) }
    /// Wakes the waiting loop (safe from any thread: eventfd writes are atomic).
    public func signal() {
        var one: UInt64 = 1
        _ = calls.write(fd, &one, 8)
    }
    /// Clears the signal.
    public func drain() {
        var value: UInt64 = 0
        _ = calls.read(fd, &value, 8)
    }
}
