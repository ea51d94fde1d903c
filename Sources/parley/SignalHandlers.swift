// Ctrl-C and `kill`: the flag every command's loop checks, and the handler that sets it.

import Foundation
import Synchronization

/// Set by SIGINT/SIGTERM; the loop leaves and exits.
let interrupted = Atomic<Bool>(false)

/// A nonisolated home for the C signal handler (it runs on whatever thread the signal lands on).
enum SignalHandlers {
    static let stop: @convention(c) (Int32) -> Void = { _ in interrupted.store(true, ordering: .relaxed) }

    /// Installs the handler and unblocks both signals: a blocked mask is inherited across exec (a parent that blocks
    /// them, as some test runners and supervisors do, would otherwise leave Ctrl-C and `kill` pending forever).
    static func install() {
        signal(SIGINT, stop)
        signal(SIGTERM, stop)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }
}
