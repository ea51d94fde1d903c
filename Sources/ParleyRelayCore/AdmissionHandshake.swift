import ParleyCrypto
import ParleyWire

/// A join or register one worker passes to the worker that admits it (the owner of the room, or worker 0).
public enum Handoff: Sendable {
    /// Version 1 (cleartext, debugging only): the datagram as received, its cookie verified.
    case cleartext([UInt8])
    /// Version 2: the handshake's payload (a version 1 `join` or `register` datagram, parsed once where it arrived),
    /// the session keys (the relay's view; the response already went out) and the size of the initiation, which
    /// bounds a refusal.
    case sealed(request: SignalDatagram, keys: SessionKeys, received: Int)
}

/// The encrypted protocol's front door (a part of `Admission`) (`SignallingEnvelope`, `ParleyHandshake`): hellos get cookies, initiations
/// with a valid cookie get the Noise response and go to admission with their session keys, and sealed datagrams
/// are opened with their session's keys before the one signalling path sees them. An initiation repeated while its
/// response was lost is answered from `HandshakeResponses`, without a second Diffie-Hellman.
extension Admission {
    /// Any version 2 datagram.
    func handleEnvelope(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment, viaPublicPort: Bool) {
        let envelope: EnvelopeView
        do {
            envelope = try EnvelopeView(parsing: bytes)
        } catch {
            return outbox.drop(.malformedSignalling, from: from, now: now)
        }
        switch envelope.kind {
        case .sealed:
            core.handleSealed(envelope, received: bytes.count, from: from, now: now, viaPublicPort: viaPublicPort)
        case .hello:
            noteTimerWork(at: now.monotonic)
            guard (try? envelope.helloNonce()) != nil else { return outbox.drop(.malformedSignalling, from: from, now: now) }
            answerWithCookie(to: from, received: bytes.count, now: now, viaPublicPort: viaPublicPort)
        case .initiation:
            noteTimerWork(at: now.monotonic)
            handleInitiation(envelope, received: bytes.count, from: from, now: now, viaPublicPort: viaPublicPort)
        case .cookie, .response:
            outbox.drop(.unexpectedMessage, from: from, now: now)
        }
    }

    /// A cookie for `from` and the relay's public key, in no more bytes than arrived, within the budget for answers
    /// to unverified addresses.
    func answerWithCookie(to from: PeerAddress, received: Int, now: Moment, viaPublicPort: Bool) {
        guard let identity = shared.identity else { return outbox.drop(.handshakeFailed, from: from, now: now) }
        guard outbox.takeUnverifiedAnswer(now: now.monotonic) else { return outbox.drop(.joinFlood, from: from, now: now) }
        let answer = SignallingEnvelope.cookieAnswer(cookie: shared.cookies.mint(for: from, unixSeconds: now.unixSeconds),
                                                     relayKey: identity.publicKey)
        guard answer.count <= received else { return }
        answer.withUnsafeBytes { outbox.sendRaw($0, to: from, viaPublicPort: viaPublicPort) }
        outbox.counters.retriesSent &+= 1
    }

    /// An initiation: the cookie first (a stale one gets a fresh cookie), then one Diffie-Hellman-bearing handshake
    /// per verified address within the join budget; the response goes out at once and the join or register, with
    /// its keys, to the worker that admits it.
    func handleInitiation(_ envelope: EnvelopeView, received: Int, from: PeerAddress, now: Moment, viaPublicPort: Bool) {
        guard let identity = shared.identity else { return outbox.drop(.handshakeFailed, from: from, now: now) }
        guard let (cookie, noiseMessage) = try? envelope.initiation() else { return outbox.drop(.malformedSignalling, from: from, now: now) }
        guard shared.cookies.verify(cookie, for: from, unixSeconds: now.unixSeconds) else {
            outbox.counters.drops[DropReason.badCookie.rawValue] &+= 1
            return answerWithCookie(to: from, received: received, now: now, viaPublicPort: viaPublicPort)
        }
        if let response = handshakeResponses.response(to: noiseMessage, from: from) {
            return response.withUnsafeBytes { outbox.sendRaw($0, to: from, viaPublicPort: viaPublicPort) }
        }
        // Nothing is charged for what cannot be a join; what can is charged to its source first (`JoinBudget`), so
        // one address flooding initiations spends its own share of the budget, not everyone's.
        guard noiseMessage.count >= ParleyHandshake.minimumInitiationLength else { return outbox.drop(.malformedSignalling, from: from, now: now) }
        guard joinBudget.take(from: from, now: now.monotonic) else { return outbox.drop(.joinFlood, from: from, now: now) }
        guard let opened = try? ParleyHandshake.read(initiation: noiseMessage, cookie: cookie, relayKey: identity) else {
            return outbox.drop(.handshakeFailed, from: from, now: now)
        }
        let payload = opened.0
        var handshake = opened.1
        let request: SignalDatagram
        do {
            request = try SignalDatagram(parsing: payload)
        } catch {
            return outbox.drop(.malformedSignalling, from: from, now: now)
        }
        let owner: Int
        switch request.message {
        case .join(let join): owner = shared.worker(forRoom: join.room)
        case .register: owner = RelayCore.presenceWorker
        default: return outbox.drop(.malformedSignalling, from: from, now: now)
        }
        guard let (message, keys) = try? ParleyHandshake.respond(&handshake) else {
            return outbox.drop(.handshakeFailed, from: from, now: now)
        }
        let response = SignallingEnvelope.header(.response) + message
        handshakeResponses.remember(response, for: noiseMessage, from: from, now: now.monotonic)
        response.withUnsafeBytes { outbox.sendRaw($0, to: from, viaPublicPort: viaPublicPort) }
        outbox.counters.handshakes &+= 1
        if owner == workerIndex {
            admitSealed(request, keys: keys, received: received, from: from, now: now, viaPublicPort: viaPublicPort)
        } else {
            core.handoffs.append((owner, .sealed(request: request, keys: keys, received: received), from))
        }
    }

    /// Admits an opened join or register with its session keys (here or, handed off, on the worker that owns it).
    func admitSealed(_ request: SignalDatagram, keys: SessionKeys, received: Int, from: PeerAddress, now: Moment, viaPublicPort: Bool) {
        let reply = AdmissionReply(address: from, viaPublicPort: viaPublicPort, received: received, keys: keys)
        // An initiation replayed (from its own address, within its cookie's life, after its cached response was
        // forgotten) carries the nonce of the session it opened: it may not replace that session with keys its
        // sender does not hold.
        if let existing = sessions.byAddress[from], existing.session.sealed != nil, existing.session.nonce == request.message.requestNonce {
            return outbox.drop(.sealedReplayed, from: from, now: now)
        }
        switch request.message {
        case .join(let join):
            if let existing = sessions.byAddress[from] { core.removeSession(existing, reason: "rejoined", goodbye: nil, now: now) }
            admit(join, reply: reply, now: now)
        case .register(let register):
            if let existing = sessions.byAddress[from] { core.removeSession(existing, reason: "registered again", goodbye: nil, now: now) }
            admitPresence(register, reply: reply, now: now)
        default:
            outbox.drop(.malformedSignalling, from: from, now: now)
        }
    }
}


/// Where an admission's answer goes and how: the address, the port, the size of the request (no refusal to a
/// cleartext request is larger) and, for the encrypted protocol, the session keys a refusal is sealed with.
struct AdmissionReply {
    let address: PeerAddress
    let viaPublicPort: Bool
    let received: Int
    let keys: SessionKeys?
}

/// The responses to recent initiations, by the initiation's ephemeral key and address: a repeated initiation (its
/// response was lost) gets the same response again, so both sides keep the same keys, and costs no Diffie-Hellman.
/// Bounded (`capacity`, oldest forgotten first) and as long-lived as a cookie (`lifetime`: the 60 s a cookie lives
/// and its 2 s of skew); an initiation repeated after its response was forgotten cannot replace its session either
/// (`admitSealed` knows it by its nonce).
final class HandshakeResponses {
    private struct Entry {
        let address: PeerAddress
        let response: [UInt8]
        let at: Instant
    }
    private var entries: [[UInt8]: Entry] = [:]
    private var order: [[UInt8]] = []
    private var head = 0
    let capacity: Int
    let lifetime: Interval

    init(capacity: Int = 4096, lifetime: Interval = .seconds(62)) {
        self.capacity = capacity
        self.lifetime = lifetime
    }

    /// The response already sent for this initiation from this address, if any.
    func response(to noiseMessage: [UInt8], from address: PeerAddress) -> [UInt8]? {
        guard noiseMessage.count >= 32, let entry = entries[Array(noiseMessage.prefix(32))], entry.address == address else { return nil }
        return entry.response
    }

    /// Remembers the response to an initiation.
    func remember(_ response: [UInt8], for noiseMessage: [UInt8], from address: PeerAddress, now: Instant) {
        let key = Array(noiseMessage.prefix(32))
        // Forget what expired or overflows, oldest first.
        while head < order.count, let oldest = entries[order[head]], order.count - head >= capacity || now - oldest.at > lifetime {
            entries[order[head]] = nil
            head += 1
        }
        if head > 1024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
        if entries[key] == nil { order.append(key) }
        entries[key] = Entry(address: address, response: response, at: now)
    }

    /// Responses held.
    var count: Int { entries.count }

    /// Forgets every response (tests: as if the capacity had pushed them out).
    func removeAll() {
        entries.removeAll()
        order.removeAll()
        head = 0
    }
}

extension SignalMessage {
    /// The nonce of a join or register (nil for anything else).
    var requestNonce: [UInt8]? {
        switch self {
        case .join(let j): j.nonce
        case .register(let r): r.nonce
        default: nil
        }
    }
}
