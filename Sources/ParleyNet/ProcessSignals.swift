import Glibc

/// SIGINT, SIGTERM and SIGHUP, taken by one thread with sigwait instead of a handler: `block()` before starting other
/// threads (they inherit the mask, so only `wait()` sees the signals), then `wait()`.
public enum ProcessSignals {
    /// A signal the relay acts on.
    public enum Received: String, Sendable {
        /// Ctrl-C: stop.
        case interrupt = "SIGINT"
        /// A service manager's stop: drain, then stop.
        case terminate = "SIGTERM"
        /// Reread the configuration.
        case hangUp = "SIGHUP"
    }

    /// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread and the threads it starts afterwards.
    public static func block(_ calls: SystemCalls = .kernel) { calls.blockProcessSignals() }

    /// Waits for one of them, at most `milliseconds` (nil: as long as it takes); nil when none came in time.
    public static func wait(milliseconds: Int? = nil, _ calls: SystemCalls = .kernel) -> Received? {
        switch calls.waitForProcessSignal(milliseconds ?? -1) {
        case SIGINT: .interrupt
        case SIGTERM: .terminate
        case SIGHUP: .hangUp
        default: nil
        }
    }
}
