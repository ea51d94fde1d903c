import ParleyAuth
import ParleyHistory
import ParleyNet
import ParleyRelayCore
import Synchronization

/// A webhook receiver: where events are POSTed and the secret they are signed with.
public struct WebhookEndpoint: Sendable, Equatable {
    /// `http://` or `https://` URL.
    public var url: String
    /// The `whsec_…` secret.
    public var secret: WebhookSecret

    /// A receiver.
    public init(url: String, secret: WebhookSecret) {
        self.url = url
        self.secret = secret
    }
}

/// Sends the relay's events to its webhook receivers on a thread of its own (`run`), never on a worker's: workers
/// (through the event hub) and the recorder hand events over (`submit`: a lock held for one append, bounded, the
/// overflow counted); the dispatcher gives each an id, commits it to the `WebhookOutbox` for every receiver, then
/// POSTs it (`WebhookTransport`, many at once), signed per attempt. Failures are retried with backoff until the retry
/// window ends; one room's events reach a receiver in order, and only that room waits behind a failing one.
/// `update(endpoints:)` replaces the receivers (a config reload): waiting events of a receiver removed are dropped.
public final class WebhookDispatcher: @unchecked Sendable {
    // Invariant: `outbox`, `transport`'s transfers, `endpoints` and `attempts` are touched only by the dispatcher's
    // thread (`run`; before it starts, by the thread that made it); other threads touch `inbound`, `replacement`,
    // `stopping` and `stats`, and call `transport.wake()`.
    private let outbox: WebhookOutbox
    private let transport: WebhookTransport
    private var endpoints: [WebhookEndpoint]
    private var attempts: [Int: (delivery: WebhookOutbox.Delivery, started: Int64)] = [:]
    private let inbound = Mutex<[Item]>([])
    private let replacement = Mutex<[WebhookEndpoint]?>(nil)
    private let stopping = Atomic<Bool>(false)
    private let log: LogSink
    private let clock: @Sendable () -> Int64
    /// In a cluster: this node's id, in every event's data (`node`).
    private let node: String?
    /// What the dispatcher did, for `/metrics`.
    public let stats = WebhookStats()
    /// Events handed over and not yet stored, at most (a stalled disk costs events, counted, never memory).
    static let maxInbound = 100_000
    /// Attempts under way to one receiver at most.
    static let maxInFlightPerEndpoint = 8

    /// What is handed over: a relay event to map, or a webhook event made elsewhere (`recording.finished`).
    enum Item {
        case relay(RelayEvent)
        case made(WebhookEvent)
    }

    /// A dispatcher over the outbox at `path` (`<state_dir>/webhooks.db`; ":memory:" without a state directory).
    public init(
        endpoints: [WebhookEndpoint], path: String, retryWindowSeconds: Int = 86_400, capacity: Int = 100_000,
        timeoutMilliseconds: Int = 10_000, node: String? = nil, log: LogSink,
        clock: @escaping @Sendable () -> Int64 = { Int64(Clock.unixMilliseconds()) }
    ) throws(ConfigError) {
        do {
            outbox = try WebhookOutbox(path: path, retryWindow: Int64(retryWindowSeconds) * 1_000, capacity: capacity)
        } catch {
            throw ConfigError("cannot open the webhook outbox \(path): \(error)")
        }
        guard
            let transport = WebhookTransport(
                timeoutMilliseconds: timeoutMilliseconds,
                connectTimeoutMilliseconds: min(5_000, timeoutMilliseconds))
        else {
            throw ConfigError("libcurl cannot start: no webhooks")
        }
        self.transport = transport
        self.endpoints = endpoints
        self.log = log
        self.clock = clock
        self.node = node
        stats.endpoints.store(endpoints.count, ordering: .relaxed)
        stats.waiting.store(outbox.count, ordering: .relaxed)
        if outbox.count > 0 { log.write(.info, "webhooks: \(outbox.count) deliveries wait from before the restart") }
    }

    /// Whether a relay event becomes a webhook event (checked on the worker's thread: only those are handed over).
    static func carries(_ e: RelayEvent) -> Bool {
        switch e.kind {
        case .memberJoined, .memberLeft: !e.otherNode
        case .roomStarted, .roomClosed, .callStarted, .callAnswered, .textHeld: true
        case .callEnded: e.callEvent?.endReason.map { WebhookEvent.missedReasons.contains($0) } ?? false
        default: false
        }
    }

    /// Hands over relay events (any thread; the event hub's observer). Those webhooks do not carry are skipped.
    public func submit(_ events: [RelayEvent]) {
        let items = events.filter(Self.carries).map(Item.relay)
        if !items.isEmpty { take(items) }
    }

    /// Hands over a webhook event made elsewhere (any thread).
    public func submit(_ event: WebhookEvent) { take([.made(event)]) }

    private func take(_ items: [Item]) {
        let accepted = inbound.withLock { pending -> Bool in
            guard pending.count + items.count <= Self.maxInbound else { return false }
            pending.append(contentsOf: items)
            return true
        }
        if accepted { transport.wake() } else { stats.droppedBehind.add(UInt64(items.count), ordering: .relaxed) }
    }

    /// Replaces the receivers (any thread; applied by the dispatcher's thread at once). A receiver kept (the same URL)
    /// keeps its waiting events, with the new secret; one removed loses them (logged).
    public func update(endpoints new: [WebhookEndpoint]) {
        replacement.withLock { $0 = new }
        transport.wake()
    }

    /// Ends `run` once the events handed over are stored (call after the workers stopped). Attempts under way are
    /// abandoned: their events are sent again, with the same ids, by the next start.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        transport.wake()
    }

    /// The dispatcher's thread.
    public func run() {
        while true {
            let last = stopping.load(ordering: .acquiring)
            if let new = replacement.withLock({ r in
                defer { r = nil }; return r
            }) {
                apply(new)
            }
            let items = inbound.withLock { q in
                defer { q = [] }; return q
            }
            if !items.isEmpty { store(items) }
            if last { return }
            let now = clock()
            let wake = startDue(now: now)
            let ended = transport.poll(timeoutMilliseconds: Int(max(0, wake - now)))
            if !ended.isEmpty {
                let at = clock()
                do {
                    try outbox.batch { for (tag, outcome) in ended { finish(tag, outcome, now: at) } }
                } catch {
                    log.write(
                        .error,
                        "webhooks: cannot commit the outcomes of \(ended.count) attempts (sent again later): \(error)")
                }
            }
            stats.inFlight.store(transport.inFlight, ordering: .relaxed)
            stats.waiting.store(outbox.count, ordering: .relaxed)
        }
    }

    private func apply(_ new: [WebhookEndpoint]) {
        endpoints = new
        stats.endpoints.store(new.count, ordering: .relaxed)
        do {
            let removed = try outbox.forget(endpointsOtherThan: new.map(\.url))
            if removed > 0 {
                log.write(.warning, "webhooks: \(removed) waiting deliveries dropped with the receivers removed")
            }
        } catch {
            log.write(.error, "webhooks: cannot drop the removed receivers' events: \(error)")
        }
        log.write(.info, "webhooks: \(new.count) receiver(s)")
    }

    private func store(_ items: [Item]) {
        guard !endpoints.isEmpty else { return }
        var events: [WebhookEvent] = []
        for item in items {
            switch item {
            case .relay(let e):
                if let w = WebhookEvent.from(e, id: WebhookEvent.newID(Crypto.randomBytes(16)), node: node) {
                    events.append(w)
                }
            case .made(let w): events.append(w)
            }
        }
        do {
            let dropped = try outbox.store(events, for: endpoints.map(\.url))
            stats.stored.add(UInt64(events.count), ordering: .relaxed)
            if dropped > 0 {
                stats.droppedFull.add(UInt64(dropped), ordering: .relaxed)
                log.write(.warning, "webhooks: the outbox is full: \(dropped) oldest deliveries dropped")
            }
        } catch {
            stats.droppedBehind.add(UInt64(events.count), ordering: .relaxed)
            log.write(.error, "webhooks: \(events.count) events lost, the outbox cannot store them: \(error)")
        }
    }

    /// Starts every due head whose room has no attempt under way, up to `maxInFlightPerEndpoint` per receiver;
    /// returns when the earliest head not under way is due (at most 1 s ahead, so a reload is seen soon). One read of
    /// the heads per receiver and pass.
    private func startDue(now: Int64) -> Int64 {
        var wake = now + 1_000
        for endpoint in endpoints {
            let mine = attempts.values.filter { $0.delivery.endpoint == endpoint.url }
            let busy = Set(mine.map(\.delivery.event.orderKey))
            let heads: [(delivery: WebhookOutbox.Delivery, next: Int64)]
            do {
                heads = try outbox.heads(endpoint: endpoint.url).filter { !busy.contains($0.delivery.event.orderKey) }
            } catch {
                log.write(.error, "webhooks: cannot read the outbox: \(error)")
                return wake
            }
            var free = Self.maxInFlightPerEndpoint - mine.count
            for (d, next) in heads {
                guard next <= now, free > 0 else {
                    if next > now { wake = min(wake, next) }
                    continue
                }
                free -= 1
                let seconds = now / 1_000
                let headers = [
                    "webhook-id: \(d.event.id)", "webhook-timestamp: \(seconds)",
                    "webhook-signature: "
                        + endpoint.secret.signature(id: d.event.id, timestamp: seconds, body: d.event.body),
                ]
                if let tag = transport.post(url: endpoint.url, headers: headers, body: d.event.body) {
                    attempts[tag] = (d, now)
                } else {
                    finish(nil, d, WebhookTransport.Outcome(status: 0, error: "libcurl refused the request"), now: now)
                }
            }
        }
        return wake
    }

    private func finish(_ tag: Int, _ outcome: WebhookTransport.Outcome, now: Int64) {
        guard let (d, _) = attempts.removeValue(forKey: tag) else { return }
        finish(tag, d, outcome, now: now)
    }

    private func finish(_ tag: Int?, _ d: WebhookOutbox.Delivery, _ outcome: WebhookTransport.Outcome, now: Int64) {
        do {
            if outcome.delivered {
                try outbox.delivered(d)
                stats.delivered.add(1, ordering: .relaxed)
                return
            }
            stats.failedAttempts.add(1, ordering: .relaxed)
            let why = outcome.error ?? "HTTP \(outcome.status)"
            switch try outbox.failed(d, now: now) {
            case .at(let next):
                if d.attempts == 0 || log.threshold <= .debug {
                    log.write(
                        .warning,
                        "webhooks: \(d.event.type) \(d.event.id) to \(Self.shown(d.endpoint)) failed (\(why)); "
                            + "tried again in \((next - now + 999) / 1_000) s")
                }
            case .expired:
                stats.expired.add(1, ordering: .relaxed)
                log.write(
                    .warning,
                    "webhooks: \(d.event.type) \(d.event.id) to \(Self.shown(d.endpoint)) dropped after "
                        + "\(d.attempts + 1) attempts (\(why)): older than the retry window")
            }
        } catch {
            log.write(.error, "webhooks: cannot update the outbox: \(error)")
        }
    }

    /// A URL as logs show it: without user and password.
    static func shown(_ url: String) -> String {
        guard let at = url.firstIndex(of: "@"), let scheme = url.range(of: "://"), scheme.upperBound < at else {
            return url
        }
        return String(url[..<scheme.upperBound]) + "…" + String(url[at...])
    }
}

/// The dispatcher's counters and gauges (`/metrics`: `parley_webhook_*`).
public final class WebhookStats: Sendable {
    /// Events committed to the outbox.
    public let stored = Atomic<UInt64>(0)
    /// Deliveries a receiver took (2xx).
    public let delivered = Atomic<UInt64>(0)
    /// Attempts that failed (no answer in time, refused, not 2xx).
    public let failedAttempts = Atomic<UInt64>(0)
    /// Deliveries dropped after the retry window.
    public let expired = Atomic<UInt64>(0)
    /// Deliveries dropped because a receiver's outbox was full.
    public let droppedFull = Atomic<UInt64>(0)
    /// Events lost before the outbox: the dispatcher fell behind, or the outbox could not store them.
    public let droppedBehind = Atomic<UInt64>(0)
    /// Deliveries waiting, attempts under way, receivers configured.
    public let waiting = Atomic<Int>(0), inFlight = Atomic<Int>(0), endpoints = Atomic<Int>(0)

    init() {}

    /// The Prometheus text of these figures.
    public func prometheus() -> String {
        func family(_ name: String, _ type: String, _ help: String, _ value: String) -> String {
            "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
        }
        return family(
            "parley_webhook_events_stored_total", "counter", "Webhook events committed to the outbox.",
            "\(stored.load(ordering: .relaxed))")
            + family(
                "parley_webhook_deliveries_total", "counter", "Webhook deliveries a receiver took (2xx).",
                "\(delivered.load(ordering: .relaxed))")
            + family(
                "parley_webhook_failed_attempts_total", "counter",
                "Webhook attempts that failed (timeout, refused, not 2xx).",
                "\(failedAttempts.load(ordering: .relaxed))")
            + family(
                "parley_webhook_expired_total", "counter", "Webhook deliveries dropped after the retry window.",
                "\(expired.load(ordering: .relaxed))")
            + family(
                "parley_webhook_dropped_full_total", "counter",
                "Webhook deliveries dropped because a receiver's outbox was full.",
                "\(droppedFull.load(ordering: .relaxed))")
            + family(
                "parley_webhook_dropped_behind_total", "counter",
                "Webhook events lost before the outbox (dispatcher behind or store failed).",
                "\(droppedBehind.load(ordering: .relaxed))")
            + family(
                "parley_webhook_waiting", "gauge", "Webhook deliveries waiting in the outbox.",
                "\(waiting.load(ordering: .relaxed))")
            + family(
                "parley_webhook_in_flight", "gauge", "Webhook attempts under way.",
                "\(inFlight.load(ordering: .relaxed))")
            + family(
                "parley_webhook_endpoints", "gauge", "Webhook receivers configured.",
                "\(endpoints.load(ordering: .relaxed))")
    }
}
