import ParleyAuth
import ParleyNet
import ParleyRelayCore
import ParleySIP
import ParleyWire
import Synchronization

/// The relay as the HTTP API sees it: the workers' published snapshots to read, their inboxes to post
/// commands to, and the event hub. Thread-safe; never touches a `RelayCore`.
public final class RelayAPI: Sendable {
    private let slots: [SnapshotSlot]
    private let inboxes: [WorkerInbox]
    /// Settings and room → worker hashing.
    public let shared: RelayShared
    /// Events for the event stream.
    public let events: EventHub
    /// Signs the tokens `POST /v1/tokens` mints (the relay's first API key).
    public let signer: TokenSigner?
    /// Seconds a command waits for its worker before the API answers 503.
    public let commandTimeout: Double
    /// The addresses clients are told to send media to (`MediaAddresses`).
    public let media: MediaAddresses
    /// The SIP gateway, once started (`--sip`): what `POST /v1/rooms/NAME/sip-calls` asks to place a call.
    public let sipGateway = Mutex<SIPGateway?>(nil)
    /// The relay's TCP port (ICE-TCP and the client's tunnel: `TCPBridge`), nil without one.
    public let tcpPort: UInt16?
    /// Which worker an ICE-TCP connection's checks go to, by the ufrag of the answer that named the TCP candidate.
    public let iceTCP: ICETCPRoutes
    /// Where room recordings are kept (nil: the relay has no state directory).
    public let recordings: RecordingCatalog?
    /// Where texts are kept (nil: nowhere).
    public let messages: TextStore?
    /// The webhooks' counters (nil: no dispatcher).
    public let webhookStats: WebhookStats?

    init(slots: [SnapshotSlot], inboxes: [WorkerInbox], shared: RelayShared, events: EventHub, recordings: RecordingCatalog? = nil,
         messages: TextStore? = nil, commandTimeout: Double = 2,
         media: MediaAddresses = MediaAddresses(bound: PeerAddress(ipv4: 127, 0, 0, 1, port: 0)), tcpPort: UInt16? = nil,
         iceTCP: ICETCPRoutes = ICETCPRoutes(), webhookStats: WebhookStats? = nil) {
        self.webhookStats = webhookStats
        self.tcpPort = tcpPort
        self.iceTCP = iceTCP
        self.recordings = recordings
        self.messages = messages
        self.media = media
        self.slots = slots
        self.inboxes = inboxes
        self.shared = shared
        self.events = events
        self.signer = shared.verifier.keyIDs.first.flatMap { shared.verifier.signer(forKey: $0) }
        self.commandTimeout = commandTimeout
    }

    /// Every worker's snapshot, worker 0 first, none older than `APIPublisher.interval` (200 ms): workers capture
    /// snapshots only on demand, so a stale one is refreshed first (a round trip through the worker's inbox, waited
    /// for at most `snapshotTimeout`; a worker that does not answer in time is shown as it last published).
    public func snapshots() -> [WorkerSnapshot] {
        let now = Worker.monotonic()
        var waiting: [ReplyBox] = []
        for (slot, inbox) in zip(slots, inboxes) where now - slot.capturedAt > APIPublisher.interval {
            let box = ReplyBox()
            inbox.requestSnapshot(reply: box)
            waiting.append(box)
        }
        let deadline = now + Interval(seconds: snapshotTimeout)
        for box in waiting {
            _ = box.wait(seconds: max(.zero, deadline - Worker.monotonic()).seconds)
        }
        return slots.map { $0.load() }
    }

    /// Seconds a reader waits for stale snapshots to be refreshed.
    public var snapshotTimeout: Double { min(commandTimeout, 0.5) }

    /// Posts `command` to the worker owning its room and waits for the answer; nil after `commandTimeout`.
    public func execute(_ command: AdminCommand) -> AdminResult? {
        let box = ReplyBox()
        inbox(for: command).post(command, reply: box)
        return box.wait(seconds: commandTimeout)
    }

    /// Posts `command` to its worker without waiting for the answer.
    public func post(_ command: AdminCommand) {
        inbox(for: command).post(command, reply: ReplyBox())
    }

    /// Presence commands go to worker 0; the rest to the worker owning their room.
    private func inbox(for command: AdminCommand) -> WorkerInbox {
        if case .drain(let w) = command { return inboxes[min(max(0, w), inboxes.count - 1)] }
        if case .reconfigure(let w, _) = command { return inboxes[min(max(0, w), inboxes.count - 1)] }
        let worker = command.isPresence ? 0 : shared.worker(forRoom: command.room)
        return inboxes[min(worker, inboxes.count - 1)]
    }
}
