import ParleyAuth
import ParleyWire

/// Going online: `register` with the same cookie round trip as a join, admission on worker 0, resume.
extension RelayCore {
    /// The worker that holds every presence session (the owner of the public port).
    static let presenceWorker = 0

    /// A register from an address not yet verified: answer with a cookie, or pass it to worker 0.
    func handleRegisterRequest(_ request: RegisterRequest, bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment,
                               viaPublicPort: Bool) {
        guard shared.cookies.verify(request.cookie, for: from, unixSeconds: now.unixSeconds) else {
            if !request.cookie.isEmpty { counters.drops[DropReason.badCookie.rawValue] &+= 1 }
            guard retryBucket.take(now: now.monotonic) else { return drop(.joinFlood, from: from, now: now) }
            // Unverified address: never answer with more bytes than arrived.
            sendSignal(.retry(cookie: shared.cookies.mint(for: from, unixSeconds: now.unixSeconds)), to: from,
                       connectionID: 0, viaPublicPort: viaPublicPort, limit: bytes.count)
            counters.retriesSent &+= 1
            return
        }
        guard workerIndex == Self.presenceWorker else {
            handoffs.append((Self.presenceWorker, Array(bytes), from))
            return
        }
        admitPresence(request, from: from, received: bytes.count, now: now, viaPublicPort: viaPublicPort)
    }

    /// A register whose cookie another worker verified.
    func handleHandedOffRegister(_ request: RegisterRequest, from: PeerAddress, received: Int, now: Moment) {
        if let existing = presence.byAddress[from] {
            if existing.nonce == request.nonce { return }
            removePresence(existing, reason: "registered again", goodbye: nil, now: now)
        }
        admitPresence(request, from: from, received: received, now: now, viaPublicPort: true)
    }

    /// Verifies the token (signature, `exp`/`nbf`, `join` grant; the `room` claim is ignored), replaces an older
    /// session of the same identity, and welcomes the new one with room "" and mode "presence".
    func admitPresence(_ request: RegisterRequest, from: PeerAddress, received: Int, now: Moment, viaPublicPort: Bool) {
        guard workerIndex == Self.presenceWorker else { return }
        guard joinBucket.take(now: now.monotonic) else { return drop(.joinFlood, from: from, now: now) }
        guard !shuttingDown else {
            return refuse(.shuttingDown, "the relay is shutting down", to: from, now: now, viaPublicPort: viaPublicPort, limit: received)
        }
        let claims: TokenClaims
        do {
            claims = try shared.verifier.verify(request.token, now: now.unixSeconds)
        } catch {
            return refuse(RefusalCode(error), error.reason, to: from, now: now, viaPublicPort: viaPublicPort, limit: received)
        }
        guard claims.grants.join else {
            let error = TokenError.missingGrant("join")
            return refuse(RefusalCode(error), error.reason, to: from, now: now, viaPublicPort: viaPublicPort, limit: received)
        }
        if let previous = presence.byIdentity[claims.identity] {
            // As for joins: the same token from a second address while its session lives is a replay.
            if previous.token == request.token, previous.address != from { return drop(.tokenReplay, from: from, now: now) }
            removePresence(previous, reason: "replaced by a new session", goodbye: .replaced, now: now)
        }
        var connectionID: UInt32
        repeat { connectionID = Crypto.randomUInt32() } while connectionID == 0 || byConnection[connectionID] != nil
            || presence.byConnection[connectionID] != nil
        let p = Presence(id: shared.nextMemberID(), connectionID: connectionID, identity: claims.identity, name: claims.name ?? "",
                         sessionSecret: Crypto.randomBytes(32), nonce: request.nonce, token: request.token,
                         registeredAt: now.unixMilliseconds, address: from, viaPublicPort: viaPublicPort, now: now.monotonic)
        p.channel = ReliableChannel(limits: signallingLimits())
        presence.add(p)
        p.channel.enqueue(.welcome(Welcome(
            nonce: request.nonce, memberID: p.id, ssrc: 0, port: shared.workerPorts[Self.presenceWorker], sessionSecret: p.sessionSecret,
            room: "", mode: "presence", identity: p.identity, memberCount: 0,
            keepaliveMilliseconds: UInt32(min(config.keepaliveInterval, config.memberTimeout / 3) / 1_000_000),
            timeoutMilliseconds: UInt32(config.memberTimeout / 1_000_000), flags: [])))
        pumpPresence(p, now: now)
        counters.presenceRegistered &+= 1
        if log.threshold <= .info { log.write(.info, "\(p.identity) online from \(from) (presence \(p.id))") }
    }
}
