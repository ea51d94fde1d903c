import ParleyNet
import ParleyRelayCore
import ParleyWire
import Synchronization

/// Joins handed from one worker to the worker that owns the room. The only lock between workers, and it is
/// on the join path, never the per-packet path.
final class WorkerInbox: Sendable {
    private let queue = Mutex<[(handoff: Handoff, from: PeerAddress)]>([])
    /// Commands from the HTTP API, with the box their answer goes into.
    private let commands = Mutex<[(AdminCommand, ReplyBox)]>([])
    /// Readers waiting for a fresh snapshot (see `RelayAPI.snapshots`).
    private let snapshotRequests = Mutex<[ReplyBox]>([])
    let wakeup: WakeupSignal

    init() throws(SystemError) { wakeup = try WakeupSignal() }

    func post(_ handoff: Handoff, from: PeerAddress) {
        queue.withLock { $0.append((handoff, from)) }
        wakeup.signal()
    }

    func post(_ command: AdminCommand, reply: ReplyBox) {
        commands.withLock { $0.append((command, reply)) }
        wakeup.signal()
    }

    /// Asks the worker to publish a fresh snapshot; `reply` is fulfilled once it did.
    func requestSnapshot(reply: ReplyBox) {
        snapshotRequests.withLock { $0.append(reply) }
        wakeup.signal()
    }

    /// The snapshot requests waiting (call after `take`, which drains the wakeup).
    func takeSnapshotRequests() -> [ReplyBox] {
        snapshotRequests.withLock { q in
            if q.isEmpty { return [] }
            defer { q = [] }
            return q
        }
    }

    /// The API commands waiting (call after `take`, which drains the wakeup).
    func takeCommands() -> [(AdminCommand, ReplyBox)] {
        commands.withLock { q in
            if q.isEmpty { return [] }
            defer { q = [] }
            return q
        }
    }

    /// The joins waiting (empty, without allocating, when there are none).
    func take() -> [(handoff: Handoff, from: PeerAddress)] {
        wakeup.drain()
        return queue.withLock { q in
            if q.isEmpty { return [] }
            defer { q = [] }
            return q
        }
    }
}

/// One worker loop: owns a socket, a `RelayCore` and the rooms hashed to it; drives the core with batched I/O.
final class Worker: @unchecked Sendable {
    // Invariant: `core`, `batch` and the loop state are touched only by the worker's own thread (inside `run`);
    // other threads use only `inbox` and `stopping`, which are thread-safe.
    let index: Int
    let socket: UDPSocket
    let publicSocket: UDPSocket
    let inbox: WorkerInbox
    let shared: RelayShared
    let log: LogSink
    let stopping: Atomic<Bool>
    var peers: [WorkerInbox] = []
    /// Every worker's socket: a share of another worker's room goes out on that worker's socket (`FanOutRing`).
    var peerSockets: [UDPSocket] = []
    /// Rings to each other worker (nil at this worker's index), and from each.
    var outgoingRings: [FanOutRing?] = []
    var incomingRings: [FanOutRing?] = []
    /// Busy CPU nanoseconds of this worker's thread (for metrics).
    let busyNanoseconds = Atomic<Int64>(0)
    /// What this worker last published for the HTTP API (see `Worker+API.swift`).
    let published: SnapshotSlot
    let events: EventHub
    /// Where the core's recordings go (nil: the relay has no state directory to keep them in).
    var recorder: RoomRecorder?
    /// Where the core's kept texts go (nil: the relay keeps none).
    var messageStore: TextStore?

    init(index: Int, socket: UDPSocket, publicSocket: UDPSocket, shared: RelayShared, log: LogSink, events: EventHub) throws(SystemError) {
        self.published = SnapshotSlot(worker: index)
        self.events = events
        self.index = index
        self.socket = socket
        self.publicSocket = publicSocket
        self.inbox = try WorkerInbox()
        self.shared = shared
        self.log = log
        self.stopping = Atomic(false)
    }

    func stop() {
        stopping.store(true, ordering: .releasing)
        inbox.wakeup.signal()
    }

    static func moment() -> Moment {
        Moment(monotonic: monotonic(), unixMilliseconds: Int64(Clock.unixMilliseconds()))
    }

    /// The monotonic clock's reading as the core takes it.
    static func monotonic() -> Instant { Instant(nanoseconds: Clock.monotonicNanoseconds()) }

    /// The loop; returns after `stop()` once every member has been told.
    func run() {
        let core = RelayCore(shared: shared, workerIndex: index, log: log)
        // 64 datagrams in per recvmmsg; up to 1,024 out per sendmmsg, so a batch fanned out to ~10 listeners
        // leaves in one call (the raw forwarder parley-load compares against batches the same way). When the socket
        // is full, up to one more such batch (1,024 × 1,536 bytes, touched only when used) waits for POLLOUT.
        let batch = DatagramBatch(socket: socket, capacity: 64, sendCapacity: 1024, pendingCapacity: 1024)
        let poller = Poller([socket.fd, inbox.wakeup.fd])
        // Sending another worker's share: a batch on that worker's socket (send side only: one receive slot).
        let peerBatches = peerSockets.enumerated().map { k, s in
            k == index ? nil : DatagramBatch(socket: s, capacity: 1, sendCapacity: 1024, pendingCapacity: 1024)
        }
        var api = APIPublisher()
        var failureLog = DatagramFailureLog()
        var trim = AllocatorTrimSchedule()
        while true {
            let now = Self.monotonic()
            // Timer work waits for the next wakeup (usually a packet batch) but at most `tickInterval` past its due time.
            var wakeAt = now + .seconds(1)
            if core.hasMembers, core.timersDue < wakeAt - core.tickInterval { wakeAt = max(now, core.timersDue + core.tickInterval) }
            if let mixDue = core.nextMixDeadline, mixDue < wakeAt { wakeAt = mixDue }
            let wait = max(.zero, wakeAt - now), millisecond = Interval.milliseconds(1)
            poller.watchWritable(0, batch.pendingCount > 0)
            poller.wait(timeoutMilliseconds: Int32(min((wait + millisecond - .nanoseconds(1)) / millisecond, 1000)))  // rounded up
            let busyStart = Clock.monotonicNanoseconds()
            core.hotLines.prefetch()  // the speakers' state, fetched while the socket is read
            if batch.pendingCount > 0, poller.isWritable(0) { batch.sendPending() }
            if stopping.load(ordering: .acquiring) {
                core.shutdown(now: Self.moment())
                flush(core, batch: batch)
                if let recorder, !core.recordings.isEmpty { recorder.submit(worker: index, tap: core.recordings) }
                if let messageStore, !core.history.isEmpty { messageStore.submit(core.history.take()) }
                return
            }
            if poller.isReadable(1) {
                let handoffs = inbox.take()
                for handoff in handoffs {
                    core.handleHandoff(handoff.handoff, from: handoff.from, now: Self.moment())
                }
                if !handoffs.isEmpty { flush(core, batch: batch) }  // the welcomes go now, not with the next batch
                let commands = inbox.takeCommands()
                if !commands.isEmpty {
                    let results = commands.map { $0.0.apply(to: core, now: Self.moment()) }
                    core.noteTimerWork(at: Self.monotonic())
                    flush(core, batch: batch)
                    publish(core, &api, batch, capture: true, helping: peerBatches)  // before answering, so the caller reads its own write
                    for (c, r) in zip(commands, results) { c.1.fulfil(r) }
                }
                let snapshotRequests = inbox.takeSnapshotRequests()
                if !snapshotRequests.isEmpty {
                    if commands.isEmpty { publish(core, &api, batch, capture: true, helping: peerBatches) }
                    for r in snapshotRequests { r.fulfil(.ok) }
                }
            }
            sendShares(peerBatches)
            // Drain the socket in batches, flushing output between batches (entries point into receive buffers).
            for _ in 0..<16 {
                // A receive error (counted by the batch, logged below) ends this drain; the next wakeup goes on.
                guard let n = try? batch.receive(), n > 0 else { break }
                let moment = Self.moment()
                for i in 0..<n {
                    guard let from = batch.sender(i) else { continue }
                    core.handle(batch.datagram(i), from: from, now: moment)
                }
                flush(core, batch: batch)
                if n < batch.capacity { break }
            }
            if let mixDue = core.nextMixDeadline, mixDue <= Self.monotonic() {
                let mixStart = Clock.monotonicNanoseconds()
                core.runMixes(now: Self.moment())
                api.mixTime.observe(nanoseconds: Clock.monotonicNanoseconds() - mixStart)
                flush(core, batch: batch)
            }
            if !core.hasMembers || Self.monotonic() >= core.timersDue {
                core.tick(now: Self.moment())
                flush(core, batch: batch)
                if trim.shouldTrim(sessions: core.sessionCount, now: Self.monotonic()) { returnFreeMemory() }
            }
            // Send and receive failures, at most one line per kind per 10 s (a sum of a few counters when nothing failed).
            if log.threshold <= .warning {
                for line in failureLog.lines(for: batch.counters, now: Clock.monotonicNanoseconds()) {
                    log.write(.warning, "worker \(index): \(line)")
                }
            }
            publish(core, &api, batch, capture: false, helping: peerBatches)
            if let recorder, !core.recordings.isEmpty { recorder.submit(worker: index, tap: core.recordings) }
            if let messageStore, !core.history.isEmpty { messageStore.submit(core.history.take()) }
            busyNanoseconds.add(Clock.monotonicNanoseconds() - busyStart, ordering: .relaxed)
        }
    }

    /// Gives the allocator's free pages back after sessions went (see `AllocatorTrimSchedule`).
    private func returnFreeMemory() {
        let start = Clock.monotonicNanoseconds()
        let returned = Allocator.returnFreePages()
        if log.threshold <= .debug {
            log.write(.debug, "worker \(index): free memory \(returned ? "returned" : "checked") in \((Clock.monotonicNanoseconds() - start) / 1000) µs")
        }
    }

    /// Everything the core produced since the last flush leaves: its datagrams on this worker's socket (or the public
    /// one), the spread shares to the workers that send them, the handoffs to the workers that admit them; then the
    /// core's output is cleared (its entries point into receive buffers the next receive reuses). The one way the
    /// worker empties the core, after every call that can produce output.
    private func flush(_ core: RelayCore, batch: DatagramBatch) {
        send(core.output, batch: batch)
        passShares(core, batch: batch)
        dispatchHandoffs(core)
        core.outputSent()
    }

    private func send(_ output: OutputQueue, batch: DatagramBatch) {
        for i in 0..<output.count {
            let d = output[i]
            if d.viaPublicPort && index != 0 {
                batch.sendNow(d.bytes, to: d.to, through: publicSocket)
            } else {
                batch.append(d.bytes, to: d.to)
            }
        }
        batch.flush()
    }

    /// Passes the core's spread packets to the workers whose share they are (`FanOutRing`), and wakes those workers.
    /// A full ring: this worker sends that share itself (nothing is lost, the work just is not spread).
    private func passShares(_ core: RelayCore, batch: DatagramBatch) {
        guard !core.spread.isEmpty else { return }
        var woken = 0  // a bit per worker (at most 64 workers spread)
        for job in core.spread {
            if job.worker < outgoingRings.count, let ring = outgoingRings[job.worker], ring.push(job.bytes, to: job.addresses) {
                woken |= 1 << (job.worker & 63)
            } else {
                for a in job.addresses { batch.append(job.bytes, to: a) }
            }
        }
        batch.flush()
        for k in peers.indices where woken & (1 << (k & 63)) != 0 { peers[k].wakeup.signal() }
    }

    /// Sends what other workers passed for their rooms' listeners, each on the owning worker's socket.
    private func sendShares(_ peerBatches: [DatagramBatch?]) {
        for (k, ring) in incomingRings.enumerated() {
            guard let ring, let out = peerBatches[k], ring.count > 0 else { continue }
            ring.drain { bytes, addresses in
                for a in addresses { out.append(bytes, to: a) }
                out.flush()  // before the slot is released
            }
        }
    }

    private func dispatchHandoffs(_ core: RelayCore) {
        for h in core.handoffs where h.worker < peers.count {
            peers[h.worker].post(h.handoff, from: h.from)
        }
    }
}
