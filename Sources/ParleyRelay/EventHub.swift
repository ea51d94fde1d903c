import Foundation
import ParleyRelayCore
import Synchronization

/// The relay's recent events for the HTTP event stream: workers append, stream connections read from a
/// sequence number on without waiting; one thread of the HTTP server waits for more and wakes them. Bounded: a slow
/// reader skips what was overwritten.
public final class EventHub: @unchecked Sendable {
    // Invariant: `ring`, `nextSequence` are touched only while `condition` is locked.
    private let condition = NSCondition()
    private var ring: [RelayEvent] = []
    private var nextSequence: UInt64 = 0
    /// Events kept.
    public let capacity: Int
    /// Also handed every batch published, on the publishing thread before the readers are woken (the webhooks'
    /// dispatcher: it must take them at once and never wait). Set before any worker starts.
    nonisolated(unsafe) public var observer: (@Sendable ([RelayEvent]) -> Void)?

    /// Handed every batch published, as `observer` is, but added at any time (the SIP gateway's notices: it starts
    /// after the workers).
    private let lateObservers = Mutex<[@Sendable ([RelayEvent]) -> Void]>([])

    /// Adds an observer of every batch published from now on (any thread; it must never wait).
    public func addObserver(_ observer: @escaping @Sendable ([RelayEvent]) -> Void) {
        lateObservers.withLock { $0.append(observer) }
    }

    /// A hub keeping `capacity` events.
    public init(capacity: Int = 4096) { self.capacity = max(1, capacity) }

    /// Appends events and wakes the waiting readers.
    public func publish(_ events: [RelayEvent]) {
        guard !events.isEmpty else { return }
        observer?(events)
        for late in lateObservers.withLock({ $0 }) { late(events) }
        condition.lock()
        for e in events {
            if ring.count == capacity { ring.removeFirst() }
            ring.append(e)
            nextSequence &+= 1
        }
        condition.broadcast()
        condition.unlock()
    }

    /// The sequence number the next event will get (a new reader starts here).
    public var head: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return nextSequence
    }

    /// Events from `sequence` on, at most `limit`, without waiting; returns them and the sequence to read from next.
    /// A reader behind the oldest event kept skips to it.
    public func events(from sequence: UInt64, limit: Int = .max) -> (events: [RelayEvent], next: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        let oldest = nextSequence - UInt64(ring.count)
        let from = max(sequence, oldest)
        guard from < nextSequence else { return ([], nextSequence) }
        let start = Int(from - oldest)
        let end = start + min(limit, ring.count - start)
        return (Array(ring[start..<end]), from + UInt64(end - start))
    }

    /// Waits until an event past `sequence` is published (or `seconds` pass, or `wakeAll`); returns `head`.
    public func wait(past sequence: UInt64, seconds: Double) -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        if nextSequence <= sequence { _ = condition.wait(until: Date().addingTimeInterval(seconds)) }
        return nextSequence
    }

    /// Wakes every waiting reader (at shutdown).
    public func wakeAll() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }
}
