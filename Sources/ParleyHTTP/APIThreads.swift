import Foundation

/// The threads that answer requests needing the relay's workers: a snapshot read waits up to 0.5 s for a stale
/// worker, a command up to 2 s, and a room list of a thousand rooms takes ~20 ms to encode. None of that may run on
/// libmicrohttpd's one event-loop thread, which would stop every other connection (`/healthz` included) meanwhile.
///
/// A fixed number of threads take jobs from one bounded queue: a caller first `reserve`s a place (false when the
/// queue is full: answer 503 at once), then `enqueue`s. At `stop`, queued jobs run with `stopping` true (they answer
/// without asking the workers) and the threads end.
final class APIThreads: @unchecked Sendable {
    // Invariant: `jobs`, `reserved`, `stopping` and `running` change only under `condition`.
    typealias Job = @Sendable (_ stopping: Bool) -> Void
    private let condition = NSCondition()
    private var jobs: [Job] = []  // at most `capacity`: removing the first is cheap
    private var reserved = 0
    private var stopping = false
    private var running = 0
    /// Jobs queued or running at most.
    let capacity: Int

    /// Starts `count` threads for at most `capacity` jobs at a time.
    init(count: Int, capacity: Int) {
        self.capacity = max(1, capacity)
        for k in 0..<max(1, count) {
            let t = Thread { [self] in work() }
            t.name = "parley-api-\(k)"
            running += 1
            t.start()
        }
    }

    /// Takes a place for one job; false when `capacity` jobs are already queued or running, or when stopping.
    func reserve() -> Bool {
        condition.withLock {
            guard !stopping, reserved < capacity else { return false }
            reserved += 1
            return true
        }
    }

    /// Queues a job in a place taken by `reserve`.
    func enqueue(_ job: @escaping Job) {
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    /// Runs what is queued with `stopping` true, then ends the threads; returns when they have.
    func stop() {
        condition.withLock {
            stopping = true
            condition.broadcast()
            while running > 0 { condition.wait() }
        }
    }

    private func work() {
        condition.lock()
        while true {
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                running -= 1
                condition.broadcast()
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            let stop = stopping
            condition.unlock()
            job(stop)
            condition.lock()
            reserved -= 1
        }
    }
}
