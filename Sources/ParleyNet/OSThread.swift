import Glibc

/// A thread of the operating system running one closure (`pthread_create`, named for `top` and debuggers);
/// `join()` waits for it to end. Started and joined through `SystemCalls`.
public final class OSThread: @unchecked Sendable {
    // Invariant: `thread` is joined at most once, by the thread that started it (`join` is not called concurrently).
    private let thread: pthread_t
    private let calls: SystemCalls
    private var joined = false

    /// Starts `body` on a new thread named `name` (at most 15 bytes are kept).
    public init(name: String, calls: SystemCalls = .kernel, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        self.calls = calls
        thread = try calls.startThread(name, body).get()
    }

    /// Waits until the thread's closure has returned.
    public func join() {
        guard !joined else { return }
        joined = true
        calls.joinThread(thread)
    }
}
