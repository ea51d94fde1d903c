import ParleyAuth
import ParleyCrypto
import ParleyWire

/// The plumbing under `SignallingSession`: the connection id, the reliable channel, the queue of datagrams to send,
/// keepalive pings, and resuming from a new address when the relay goes quiet. Pure; the session that owns it runs
/// the handshake and decides what the messages mean.
///
/// Only the relay speaks for the session. Before the welcome that is the relay's public address (first contact: the
/// join or register is answered there). After it, the port the welcome names on the same host as well: a worker keeps
/// answering from the public port until it hears the member on its own port, and sends media from its own. Anything
/// else — another port on the relay's host, another host — is ignored, and so is a datagram that names another
/// session once this one has its connection id.
struct SignallingLink {
    /// The relay's public address (first contact).
    let server: PeerAddress
    /// Where datagrams go: the public address until the welcome, then the port it named.
    private(set) var destination: PeerAddress
    /// The relay-assigned connection id (0 before the welcome).
    private(set) var connection: UInt32 = 0
    private(set) var channel = ReliableChannel()
    private var outgoing: [[UInt8]] = []
    private var lastPing = Instant.origin
    /// Pings still to send in a path probe (`probe`), and when the last one went.
    private var probesLeft = 0
    private var lastProbe = Instant.origin
    /// When the relay was last heard (signalling or media from it).
    private(set) var lastHeard: Instant
    private var lastResume = Instant.distantPast
    private let unixMilliseconds: () -> Int64
    /// Seals every datagram once the encrypted handshake gave keys (nil: cleartext, or not yet).
    private var sealer: SealedChannel?

    /// What `keepAlive` found.
    enum Liveness { case alive, resuming, lost }

    init(server: PeerAddress, now: Instant, unixMilliseconds: @escaping () -> Int64) {
        self.server = server
        destination = server
        lastHeard = now
        self.unixMilliseconds = unixMilliseconds
    }

    /// Datagrams queued, oldest first; the queue is emptied.
    mutating func drain() -> [[UInt8]] {
        defer { outgoing.removeAll(keepingCapacity: true) }
        return outgoing
    }

    /// From now on every datagram goes out sealed with `channel`, and only sealed ones are taken.
    mutating func seal(with channel: SealedChannel) { sealer = channel }

    /// Whether datagrams are sealed.
    var isSealed: Bool { sealer != nil }

    /// Queues bytes made by the handshake (hello, initiation) as they are.
    mutating func sendRaw(_ bytes: [UInt8]) { outgoing.append(bytes) }

    /// Queues a datagram, sealed when the session is.
    private mutating func queue(_ datagram: SignalDatagram) {
        guard let bytes = try? datagram.serialized() else { return }
        guard let sealer else { return outgoing.append(bytes) }
        guard bytes.count <= SignallingEnvelope.maxSealedPlaintext else { return }
        var out = SignallingEnvelope.header(.sealed, connectionID: datagram.connectionID)
        var body = [UInt8](repeating: 0, count: bytes.count + SealedChannel.overhead)
        guard let n = try? sealer.seal(bytes, into: &body) else { return }
        out += body.prefix(n)
        outgoing.append(out)
    }

    /// Opens a sealed datagram: the version 1 datagram inside, when it opens and names the connection its envelope
    /// names; nil otherwise (forged, replayed, another session's, or before the keys).
    func open(_ envelope: EnvelopeView) -> SignalDatagram? {
        guard let sealer, envelope.kind == .sealed else { return nil }
        var plaintext = [UInt8](repeating: 0, count: envelope.body.count)
        let body = Array(envelope.body)
        guard let n = try? sealer.open(body, into: &plaintext),
              let datagram = try? SignalDatagram(parsing: Array(plaintext.prefix(n))),
              datagram.connectionID == envelope.connectionID else { return nil }
        return datagram
    }

    /// Queues an unreliable message (it carries the current acknowledgement).
    mutating func send(_ message: SignalMessage) {
        queue(SignalDatagram(connectionID: connection, sequence: 0, ack: channel.ackNumber, message: message))
        channel.ackSent()
    }

    /// Queues a reliable message and sends what is due.
    mutating func sendReliable(_ message: SignalMessage, now: Instant) {
        channel.enqueue(message)
        pump(now: now)
    }

    /// Queues reliable messages without sending yet (call `pump`).
    mutating func enqueue(_ message: SignalMessage) { channel.enqueue(message) }

    /// Sends what the reliable channel has due, or a bare ack if one is owed.
    mutating func pump(now: Instant) {
        let due = channel.transmissions(now: now)
        for t in due {
            queue(SignalDatagram(connectionID: connection, sequence: t.sequence, ack: channel.ackNumber, message: t.message))
        }
        if !due.isEmpty { channel.ackSent() } else if channel.ackOwed { send(.ack) }
    }

    /// Whether a datagram from `address` can be the relay's (see the type's comment).
    func isRelay(_ address: PeerAddress) -> Bool {
        address == server || address == destination
    }

    /// The welcome arrived: the session is `connection`, and continues with the relay's `port` on the same host.
    mutating func welcomed(connection: UInt32, port: UInt16, now: Instant) {
        self.connection = connection
        destination = PeerAddress(high: server.high, low: server.low, port: port)
        lastPing = now
    }

    /// Takes a received datagram: the relay was heard; returns the messages now deliverable in order. A datagram from
    /// an address that is not the relay's, or naming another session, is dropped unseen (it does not count as hearing
    /// from the relay either).
    mutating func receive(_ datagram: SignalDatagram, from: PeerAddress, now: Instant) -> [SignalMessage] {
        guard isRelay(from), connection == 0 || datagram.connectionID == connection else { return [] }
        lastHeard = now
        return channel.receive(sequence: datagram.sequence, ack: datagram.ack, message: datagram.message, now: now)
    }

    /// Records a sign of life other than signalling (media from the relay).
    mutating func heard(now: Instant) { lastHeard = now }

    /// Pings every keepalive interval (every second once the relay has been quiet for 3 s); after a further second of
    /// silence sends a resume (our address may have changed: NAT rebinding); sends what is due. `.lost` once nothing
    /// was heard for the timeout plus 5 s.
    mutating func keepAlive(_ welcome: Welcome, now: Instant) -> Liveness {
        let keepalive = Interval.milliseconds(Int64(welcome.keepaliveMilliseconds))
        let timeout = Interval.milliseconds(Int64(welcome.timeoutMilliseconds))
        let quiet = now - lastHeard
        if quiet > timeout + .seconds(5) { return .lost }
        if probesLeft > 0, now - lastProbe >= Self.probeSpacing {
            probesLeft -= 1
            lastProbe = now
            lastPing = now
            send(.ping(timestamp: UInt64(now.nanoseconds)))
        } else if now - lastPing >= keepalive || (quiet > .seconds(3) && now - lastPing >= .seconds(1)) {
            lastPing = now
            send(.ping(timestamp: UInt64(now.nanoseconds)))
        }
        var liveness = Liveness.alive
        if quiet > min(keepalive, .seconds(3)) + .seconds(1), now - lastResume >= .seconds(1) {
            sendResume(secret: welcome.sessionSecret, now: now)
            liveness = .resuming
        }
        pump(now: now)
        return liveness
    }

    /// Pings `count` times, `probeSpacing` apart, from the next `keepAlive` on (the pongs' round trips show the path's
    /// jitter: `JitterPrior`).
    mutating func probe(count: Int) {
        probesLeft = count
        lastProbe = .origin
    }

    /// Time between the pings of a probe: a media frame, so they meet the path as packets of a stream do.
    static let probeSpacing: Interval = .milliseconds(20)

    /// Answers the relay's challenge to our (new) address with a proof made with the session secret.
    mutating func answer(_ challenge: [UInt8], secret: [UInt8]) {
        send(.pathResponse(challenge: challenge, proof: ResumeProof.pathResponse(secret: secret, connectionID: connection, challenge: challenge)))
    }

    /// Proves the session from wherever we are now: HMAC of the connection id and the time with the session secret.
    mutating func sendResume(secret: [UInt8], now: Instant) {
        lastResume = now
        let ts = UInt64(unixMilliseconds())
        send(.resume(timestamp: ts, proof: ResumeProof.make(secret: secret, connectionID: connection, timestamp: ts)))
    }
}
