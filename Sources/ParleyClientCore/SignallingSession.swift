import ParleyAuth
import ParleyCrypto
import ParleyWire

/// One signalling session with the relay, whatever it is for: the handshake (join a room or register presence,
/// with the cookie round trip and the welcome's nonce check), reliable messages, keepalives, resume from a new
/// address, and the ways it ends. Pure: the owner passes `now` and moves bytes. `ClientSession` (a room member) and
/// `PresenceSession` (an online identity) are this session plus what their messages mean; they see the messages
/// this type does not take itself as `.message`.
///
/// ```
/// handshaking ─welcome→ established ─relay quiet→ resuming ─resumed→ established
///      │                     │                       └─ unknown session → ended (.forgotten)
///      └─ 10 tries / refused └─ goodbye / lost contact / channel failed → ended
/// ```
///
/// Encrypted (the default, protocol version 2, `SignallingEnvelope`): the handshake is hello → cookie (with the
/// relay's key, checked against the pinned one) → Noise initiation carrying the join or register → response (the
/// session keys, `keys`) → the sealed welcome; every datagram after it is sealed. Cleartext (version 1, debugging)
/// sends the join or register as it is and repeats it with the cookie.
public final class SignallingSession {
    /// What the session asks the relay for.
    public enum Request: Equatable, Sendable {
        /// A seat in `room`. With `speakersFromMedia` the member works out who speaks from the streams it
        /// receives, so a forward room sends it no `speakers` messages.
        case join(room: String, muted: Bool, speakersFromMedia: Bool, redundancy: Bool = false)
        /// The token's identity online for calls and direct texts.
        case register
    }

    /// Where the session stands.
    public enum Phase: Equatable, Sendable {
        /// Join or register sent, waiting for the welcome.
        case handshaking
        /// Welcomed.
        case established
        /// Nothing heard from the relay for a while: proving the session from (possibly) a new address.
        case resuming
        /// Over; the reason is shown to the person.
        case ended(String)
    }

    /// How the session protects itself.
    public enum Security: Equatable, Sendable {
        /// Protocol version 2: a Noise NK handshake with the relay, sealed signalling, SRTP media. `relayKey` is the
        /// relay's public key the member insists on (from its token's `relay_key`, or given); nil takes the key the
        /// relay presents, which keeps onlookers out but not an active attacker posing as the relay.
        case encrypted(relayKey: [UInt8]?)
        /// Protocol version 1, everything readable on the path: debugging only, and only with a relay that allows it.
        case cleartext
    }

    /// What the session tells its owner.
    public enum Event: Equatable, Sendable {
        /// The relay did not prove it holds the key the member expects: it presented another key, or never
        /// answered the handshake made for that key. The session is over.
        case relayUnproven(String)
        /// The relay welcomed us.
        case welcomed(Welcome)
        /// The relay refused the join or register, or a resume.
        case refused(RefusalCode, String)
        /// The relay no longer knows this session and said so to our resume: a fresh session is the way back.
        case forgotten(String)
        /// The relay ended the session.
        case goodbye(GoodbyeCode, String)
        /// A resume from a new address was accepted.
        case resumed
        /// A ping's round trip.
        case roundTrip(Interval)
        /// The session gave up on its own: no answer to the handshake, or contact with the relay lost.
        case gaveUp(String)
        /// A message for the owner (member lists, texts, calls…), in order.
        case message(SignalMessage)
    }

    /// Tries of the join or register before giving up.
    public static let handshakeAttempts = 10
    /// Wait between tries of the join or register.
    public static let handshakeInterval: Interval = .milliseconds(500)

    /// What the session asks for.
    public let request: Request
    /// The relay's public address (first contact).
    public var server: PeerAddress { link.server }
    /// Where datagrams go now: the public address until welcomed, then the port the welcome named.
    public var destination: PeerAddress { link.destination }
    /// Where the session stands.
    public private(set) var phase: Phase = .handshaking
    /// The welcome, once received.
    public private(set) var welcome: Welcome?
    /// Datagrams retransmitted by this side.
    public var retransmissions: Int { link.channel.retransmissions }
    /// When the relay was last heard: any datagram from it, signalling or (once established) media.
    public var lastHeard: Instant { link.lastHeard }
    /// Whether the session is welcomed and not over (established or resuming).
    public var isEstablished: Bool { phase == .established || phase == .resuming }

    /// How the session protects itself.
    public let security: Security
    /// The session keys once the handshake completed (encrypted sessions): SRTP keys per direction for the media.
    public private(set) var keys: SessionKeys?
    /// The key the relay presented in its cookie answer (encrypted sessions).
    public private(set) var presentedRelayKey: [UInt8]?

    private let token: String
    private let nonce: [UInt8]
    private var cookie: [UInt8] = []
    private var handshake: MemberHandshake?
    private var link: SignallingLink
    private var lastHandshake = Instant.distantPast
    private var handshakes = 0

    /// A session that will ask `server` for `request` with `token`; its nonce (16 bytes) comes from `random`.
    public init(server: PeerAddress, token: String, request: Request, security: Security = .encrypted(relayKey: nil), now: Instant,
                unixMilliseconds: @escaping () -> Int64, random: inout some RandomNumberGenerator) {
        self.token = token
        self.request = request
        self.security = security
        self.nonce = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        self.link = SignallingLink(server: server, now: now, unixMilliseconds: unixMilliseconds)
    }

    /// Datagrams to send to `destination`, oldest first.
    public func drainOutgoing() -> [[UInt8]] { link.drain() }

    /// Whether a datagram from `address` can be the relay's: its public address, or the port the welcome named.
    public func isFromRelay(_ address: PeerAddress) -> Bool { link.isRelay(address) }

    /// Counts media from the relay as a sign of life (it only reaches us when the relay has our current address).
    public func noteTraffic(now: Instant) {
        if phase == .established { link.heard(now: now) }
    }

    /// The join or register as the relay reads it (cleartext: as it is; encrypted: inside the initiation).
    private var requestMessage: SignalMessage {
        switch request {
        case .join(let room, let muted, let speakersFromMedia, let redundancy):
            .join(JoinRequest(token: token, room: room, cookie: security == .cleartext ? cookie : [], nonce: nonce, muted: muted,
                              speakersFromMedia: speakersFromMedia, redundancy: redundancy))
        case .register:
            .register(RegisterRequest(token: token, cookie: security == .cleartext ? cookie : [], nonce: nonce))
        }
    }

    private func sendHandshake(now: Instant) {
        lastHandshake = now
        handshakes += 1
        guard security != .cleartext else { return link.send(requestMessage) }
        if keys != nil { return }  // keyed: the relay's reliable channel brings the welcome (or a refusal)
        if let handshake {
            link.sendRaw(SignallingEnvelope.initiation(cookie: cookie, noiseMessage: handshake.initiation))
        } else {
            link.sendRaw(SignallingEnvelope.hello(nonce: nonce))
        }
    }

    /// A cookie answer: checks the relay's key and starts (or, with a fresh cookie, restarts) the Noise handshake.
    private func takeCookie(_ envelope: EnvelopeView, now: Instant) -> [Event] {
        guard phase == .handshaking, keys == nil, let (newCookie, relayKey) = try? envelope.cookieAnswer() else { return [] }
        if case .encrypted(let pinned?) = security, pinned != relayKey {
            let reason = "the relay at \(server) presented key \(Base64URL.encode(relayKey)), not the expected \(Base64URL.encode(pinned))"
            return end(reason, .relayUnproven(reason))
        }
        guard let payload = try? SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: requestMessage).serialized(),
              let started = try? MemberHandshake(relayKey: relayKey, cookie: newCookie, payload: payload) else { return [] }
        presentedRelayKey = relayKey
        cookie = newCookie
        handshake = started
        sendHandshake(now: now)
        return []
    }

    /// The relay's response: the session keys; from now on everything is sealed.
    private func takeResponse(_ envelope: EnvelopeView, now: Instant) {
        guard phase == .handshaking, keys == nil, var pending = handshake,
              let (_, sessionKeys) = try? pending.finish(response: Array(envelope.body)) else { return }
        handshake = pending
        keys = sessionKeys
        link.seal(with: sessionKeys.signallingChannel())
        link.heard(now: now)
    }

    private func end(_ reason: String, _ event: Event) -> [Event] {
        phase = .ended(reason)
        return [event]
    }

    /// Pings the relay `count` times, 20 ms apart, from the next `tick` on: each pong is a `.roundTrip` event, so the
    /// caller sees how much the path's delay varies before media has shown it (`JitterPrior`).
    public func probePath(count: Int) {
        link.probe(count: count)
    }

    /// Periodic work: handshake retries, keepalives, retransmissions, resume when the relay went quiet, giving up
    /// (also when the reliable channel gave up on a message).
    public func tick(now: Instant) -> [Event] {
        switch phase {
        case .ended:
            return []
        case .handshaking:
            guard now - lastHandshake >= Self.handshakeInterval else { return [] }
            if handshakes >= Self.handshakeAttempts {
                if case .encrypted(let pinned?) = security, presentedRelayKey != nil {
                    let reason = "the relay at \(server) did not prove it holds key \(Base64URL.encode(pinned)) (no valid handshake response)"
                    return end(reason, .relayUnproven(reason))
                }
                let reason = "no answer from the relay at \(server)"
                return end(reason, .gaveUp(reason))
            }
            sendHandshake(now: now)
        case .established, .resuming:
            guard let welcome else { return [] }
            switch link.channel.failed ? .lost : link.keepAlive(welcome, now: now) {
            case .lost:
                let reason = "lost contact with the relay"
                return end(reason, .gaveUp(reason))
            case .resuming: phase = .resuming
            case .alive: break
            }
        }
        return []
    }

    /// Takes a signalling datagram that came from `from`; anything not from the relay (`isFromRelay`), or naming
    /// another session, is ignored. Messages after the one that ended the session are dropped.
    public func handle(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Instant) -> [Event] {
        guard isFromRelay(from) else { return [] }
        if case .ended = phase { return [] }
        let datagram: SignalDatagram
        if SignallingEnvelope.isEnvelope(bytes) {
            guard security != .cleartext, let envelope = try? EnvelopeView(parsing: bytes) else { return [] }
            switch envelope.kind {
            case .cookie: return takeCookie(envelope, now: now)
            case .response:
                takeResponse(envelope, now: now)
                return []
            case .sealed:
                guard let opened = link.open(envelope) else { return [] }
                datagram = opened
            case .hello, .initiation:
                return []
            }
        } else {
            guard let parsed = try? SignalDatagram(parsing: bytes) else { return [] }
            if security != .cleartext {
                // Unsealed, only what a relay without our keys can say: it forgot the session we try to resume, or
                // it is an old relay that speaks only cleartext.
                switch parsed.message {
                case .refused(.unknownSession, let reason) where phase == .resuming:
                    return end(reason, .forgotten(reason))
                default:
                    return []
                }
            }
            datagram = parsed
        }
        var events: [Event] = []
        for message in link.receive(datagram, from: from, now: now) {
            if case .ended = phase { break }
            switch message {
            case .retry(let c):
                guard phase == .handshaking, security == .cleartext else { continue }
                cookie = c
                sendHandshake(now: now)
            case .welcome(let w):
                guard w.nonce == nonce, welcome == nil else { continue }
                welcome = w
                link.welcomed(connection: datagram.connectionID, port: w.port, now: now)
                phase = .established
                events.append(.welcomed(w))
            case .refused(.unknownSession, let reason) where phase == .resuming:
                events += end(reason, .forgotten(reason))
            case .refused(let code, let reason):
                if phase == .handshaking || phase == .resuming { events += end(reason, .refused(code, reason)) }
            case .goodbye(let code, let reason):
                events += end(reason, .goodbye(code, reason))
            case .pong(let timestamp):
                events.append(.roundTrip(now - Instant(nanoseconds: Int64(bitPattern: timestamp))))
            case .resumed:
                if phase == .resuming { phase = .established }
                events.append(.resumed)
            case .pathChallenge(let challenge):
                if let w = welcome { link.answer(challenge, secret: w.sessionSecret) }
            default:
                events.append(.message(message))
            }
        }
        if case .ended = phase {} else { link.pump(now: now) }
        return events
    }

    /// Sends a reliable message now (what is due of the channel goes with it).
    public func sendReliable(_ message: SignalMessage, now: Instant) {
        link.sendReliable(message, now: now)
    }

    /// Queues a text for `to` ("" = the room) with the image ids it carries as reliable fragments and sends what is
    /// due; false when empty without an image, over 4 KB, with ids that are not `TextAttachments.areValid`, or when the
    /// relay has left too many messages unacknowledged to queue it (`ReliableChannel.Limits.maxPending`).
    public func sendText(_ text: String, attachments: [String] = [], to: String, messageID: UInt32, now: Instant) -> Bool {
        guard let fragments = TextFragment.split(text, messageID: messageID, attachments: attachments),
              link.channel.hasRoom(for: fragments.count, within: .max) else { return false }
        for f in fragments { link.enqueue(.sendText(to: to, fragment: f)) }
        link.pump(now: now)
        return true
    }

    /// Leaves now: the relay forgets the session on receipt (a session not yet welcomed just ends).
    public func leave(now: Instant) {
        if isEstablished { link.sendReliable(.leave, now: now) }
        phase = .ended("left")
    }
}
