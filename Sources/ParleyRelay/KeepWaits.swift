import Dispatch
import Synchronization

/// The HTTP requests waiting to hear whether the message store kept their room text (`POST …/messages`): a request
/// takes a number (`expect`), the core puts it on the text's record (`TextLog.KeepReceipt.request`), and the store
/// settles it once the text is committed or has failed. A request that stops waiting cancels its number; at most
/// `capacity` wait at once (more are answered without waiting: `expect` returns nil).
public final class KeepWaits: Sendable {
    /// What the store did with a text.
    public enum Outcome: Equatable, Sendable {
        /// Committed.
        case kept
        /// Not kept, and why (for its sender); `full`: the disk is.
        case notKept(reason: String, full: Bool)
    }

    /// One request's wait.
    public final class Wait: Sendable {
        private let outcome = Mutex<Outcome?>(nil)
        private let ready = DispatchSemaphore(value: 0)

        func settle(_ o: Outcome) {
            outcome.withLock { $0 = o }
            ready.signal()
        }

        /// The outcome, or nil when none came within `seconds`.
        public func wait(seconds: Double) -> Outcome? {
            guard ready.wait(timeout: .now() + seconds) == .success else { return nil }
            return outcome.withLock { $0 }
        }
    }

    private let waiting = Mutex<(next: UInt64, waits: [UInt64: Wait])>((1, [:]))
    /// Requests waiting at most.
    public static let capacity = 1024

    /// No one waits.
    public init() {}

    /// A number for a request about to send a room text, and its wait; nil when `capacity` wait already.
    public func expect() -> (id: UInt64, wait: Wait)? {
        waiting.withLock { w in
            guard w.waits.count < Self.capacity else { return nil }
            let id = w.next
            w.next &+= 1
            if w.next == 0 { w.next = 1 }
            let wait = Wait()
            w.waits[id] = wait
            return (id, wait)
        }
    }

    /// The store's answer for request `id` (nothing if it stopped waiting).
    public func settle(_ id: UInt64, _ outcome: Outcome) {
        waiting.withLock { $0.waits.removeValue(forKey: id) }?.settle(outcome)
    }

    /// Request `id` stops waiting.
    public func cancel(_ id: UInt64) {
        _ = waiting.withLock { $0.waits.removeValue(forKey: id) }
    }

    /// Requests waiting now.
    public var count: Int { waiting.withLock { $0.waits.count } }
}
