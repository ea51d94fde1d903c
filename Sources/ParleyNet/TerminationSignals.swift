import Glibc

/// SIGINT and SIGTERM, taken by one thread with sigwait instead of a handler: `block()` before starting other
/// threads (they inherit the mask, so only `wait()` sees the signals), then `wait()`.
public enum TerminationSignals {
    /// Blocks SIGINT and SIGTERM in the calling thread and the threads it starts afterwards.
    public static func block(_ calls: SystemCalls = .kernel) { calls.blockTerminationSignals() }

    /// Waits for SIGINT or SIGTERM; returns "SIGINT" or "SIGTERM".
    public static func wait(_ calls: SystemCalls = .kernel) -> String {
        calls.waitForTerminationSignal() == SIGINT ? "SIGINT" : "SIGTERM"
    }
}
