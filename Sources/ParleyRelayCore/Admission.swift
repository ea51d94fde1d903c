import ParleyAuth
import ParleyCrypto
import ParleyWire

/// Admission: a join (into a room) or a register (online, on worker 0) from an address not yet verified gets a
/// cookie back (`JoinCookie`); with a valid cookie it goes to the worker that owns the room (or worker 0), which
/// verifies the token and opens a `RelaySession` for it.
///
/// The one way in for a session: a part of the core (`CorePart`) that owns the join budget and the handshake cache.
/// Every join and register — encrypted (`handleEnvelope`: hello, initiation), cleartext (`cleartextRequest`), or
/// handed off by the worker that received it (`handleHandoff`) — is charged to the budget in one place per protocol,
/// parsed once, and admitted (`admit`, `admitPresence`) or refused (`refuse`) here.
final class Admission: CorePart {
    unowned(unsafe) let core: RelayCore  // the core owns its parts and outlives them
    /// Joins and registers with a valid cookie this worker admits per second, fair among sources.
    var joinBudget: JoinBudget
    /// Responses to recent handshake initiations, resent when an initiation repeats.
    let handshakeResponses = HandshakeResponses()

    init(core: RelayCore) {
        self.core = core
        joinBudget = JoinBudget(perSecond: core.config.joinsPerSecond)
    }

    /// A cleartext join or register (`allowCleartext`) from an address with no session: answered with a cookie when its
    /// cookie does not verify, passed to the worker that admits it, or admitted here within the join budget.
    func cleartextRequest(_ message: SignalMessage, bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment, viaPublicPort: Bool) {
        let cookie: [UInt8], owner: Int
        switch message {
        case .join(let request): (cookie, owner) = (request.cookie, shared.worker(forRoom: request.room))
        case .register(let request): (cookie, owner) = (request.cookie, RelayCore.presenceWorker)
        default: return outbox.drop(.unexpectedMessage, from: from, now: now)
        }
        guard shared.cookies.verify(cookie, for: from, unixSeconds: now.unixSeconds) else {
            if !cookie.isEmpty { outbox.counters.drops[DropReason.badCookie.rawValue] &+= 1 }
            guard outbox.takeUnverifiedAnswer(now: now.monotonic) else { return outbox.drop(.joinFlood, from: from, now: now) }
            // Unverified address: never answer with more bytes than arrived.
            outbox.sendSignal(.retry(cookie: shared.cookies.mint(for: from, unixSeconds: now.unixSeconds)), to: from,
                       connectionID: 0, viaPublicPort: viaPublicPort, limit: bytes.count)
            outbox.counters.retriesSent &+= 1
            return
        }
        guard owner == workerIndex else {
            core.handoffs.append((owner, .cleartext(Array(bytes)), from))
            return
        }
        admitWithinBudget(message, reply: AdmissionReply(address: from, viaPublicPort: viaPublicPort, received: bytes.count, keys: nil), now: now)
    }

    /// The one budget check of every join and register admitted here (`JoinBudget`: fair among sources), then the
    /// join or the register. (Encrypted ones are charged before their handshake's Diffie-Hellman instead: `handleInitiation`.)
    private func admitWithinBudget(_ message: SignalMessage, reply: AdmissionReply, now: Moment) {
        guard joinBudget.take(from: reply.address, now: now.monotonic) else { return outbox.drop(.joinFlood, from: reply.address, now: now) }
        switch message {
        case .join(let request): admit(request, reply: reply, now: now)
        case .register(let request): admitPresence(request, reply: reply, now: now)
        default: outbox.drop(.malformedSignalling, from: reply.address, now: now)
        }
    }

    /// Opens the signalling session of a join or register the caller admitted: a fresh connection id and secret,
    /// sealed with the handshake's keys when it came through the encrypted protocol.
    func openSession(identity: String, name: String, nonce: [UInt8], token: String, reply: AdmissionReply,
                     limits: ReliableChannel.Limits, now: Moment) -> RelaySession {
        let session = RelaySession(connectionID: sessions.newConnectionID(random), identity: identity, name: name,
                                        sessionSecret: random.bytes(32), nonce: nonce, token: token, address: reply.address,
                                        viaPublicPort: reply.viaPublicPort, channel: ReliableChannel(limits: limits), now: now.monotonic)
        session.sealed = reply.keys?.signallingChannel()
        return session
    }

    /// The keepalive interval a welcome asks for (never more than a third of the timeout), in milliseconds.
    var welcomeKeepaliveMilliseconds: UInt32 { UInt32(min(config.keepaliveInterval, config.memberTimeout / 3).milliseconds) }

    /// Handed-off joins and registers are deduplicated by address and nonce: a repeat is dropped, anything else
    /// replaces the session at that address.
    func replaceSession(at from: PeerAddress, nonce: [UInt8], reason: String, now: Moment) -> Bool {
        guard let existing = sessions.byAddress[from] else { return true }
        if existing.session.nonce == nonce { return false }
        core.removeSession(existing, reason: reason, goodbye: nil, now: now)
        return true
    }

    /// A join or register another worker passed here because this worker admits it: a cleartext one whose cookie
    /// that worker verified, or a sealed one whose handshake it completed.
    func handleHandoff(_ handoff: Handoff, from: PeerAddress, now: Moment) {
        noteTimerWork(at: now.monotonic)
        switch handoff {
        case .sealed(let request, let keys, let received):
            admitSealed(request, keys: keys, received: received, from: from, now: now, viaPublicPort: true)
        case .cleartext(let bytes):
            bytes.withUnsafeBytes { handleHandedOffCleartext($0, from: from, now: now) }
        }
    }

    /// A cleartext join or register handed off (debugging only: `allowCleartext`).
    func handleHandedOffCleartext(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        guard let datagram = try? SignalDatagram(parsing: bytes) else { return outbox.drop(.malformedSignalling, from: from, now: now) }
        let reply = AdmissionReply(address: from, viaPublicPort: true, received: bytes.count, keys: nil)
        switch datagram.message {
        case .register(let request):
            guard replaceSession(at: from, nonce: request.nonce, reason: "registered again", now: now) else { return }
        case .join(let request):
            guard replaceSession(at: from, nonce: request.nonce, reason: "rejoined", now: now) else { return }
        default:
            return outbox.drop(.malformedSignalling, from: from, now: now)
        }
        admitWithinBudget(datagram.message, reply: reply, now: now)
    }

    /// Refuses a join or register: sealed with its handshake's keys, or (cleartext) in no more bytes than the request
    /// (the reason is cut to fit).
    func refuse(_ code: RefusalCode, _ reason: String, reply: AdmissionReply, now: Moment) {
        outbox.counters.joinsRefused[code.rawValue, default: 0] &+= 1
        if log.threshold <= .info { log.write(.info, "join from \(reply.address) refused: \(reason)") }
        // A refusal's keys seal this one datagram: no session is ever opened with them, so counter 0 is used once.
        let channel = reply.keys?.signallingChannel()
        outbox.sendRefusal(code, reason, to: reply.address, connectionID: 0, viaPublicPort: reply.viaPublicPort,
                           limit: channel == nil ? reply.received : Signalling.maxDatagramSize, sealedWith: channel)
    }


    /// Admits a join whose cookie (and, encrypted, handshake) checked out; the caller took it from the join budget.
    func admit(_ request: JoinRequest, reply: AdmissionReply, now: Moment) {
        let from = reply.address
        // Every refusal below answers this join: sealed, or no larger than its `received` bytes.
        func refuse(_ code: RefusalCode, _ reason: String) { self.refuse(code, reason, reply: reply, now: now) }
        guard !core.shuttingDown else {
            return refuse(.shuttingDown, "the relay is shutting down")
        }
        if let problem = Self.roomNameProblem(request.room) {
            return refuse(.badRequest, problem)
        }
        let claims: TokenClaims
        do {
            claims = try shared.verifier.verify(request.token, now: now.unixSeconds)
        } catch {
            return refuse(RefusalCode(error), error.reason)
        }
        if let (code, reason) = RoomAdmission.refusal(claims, room: request.room) {
            return refuse(code, reason)
        }
        var room = rooms[request.room]
        if room == nil || shared.isDraining,
           let node = shared.placement.node(for: request.room, cascadeAfter: config.cascadeAfter, draining: shared.isDraining) {
            return refuse(.roomElsewhere, node.description)  // a cluster's other node
        }
        if room == nil {
            guard claims.grants.create else {
                return refuse(.roomNotFound, "room \(request.room) does not exist and the token may not create it")
            }
            let mode: RoomMode
            switch claims.mode.map({ ($0, RoomMode(rawValue: $0)) }) {
            case nil: mode = config.defaultRoomMode
            case (_, let known?)?: mode = known
            case (let name, nil)?:
                return refuse(.badRequest, "unknown room mode \(name): it must be \(RoomMode.choices)")
            }
            if let (code, reason) = EndToEndRoom.refusal(claims, room: request.room, mode: mode) {
                return refuse(code, reason)  // before the room exists
            }
            let created: Room
            switch rooms.open(name: request.room, mode: mode, creator: claims.identity, audience: claims.audience == true, now: now) {
            case .success(let r): created = r
            case .failure(let f): return refuse(f.code, f.reason)
            }
            room = created
        }
        guard let room else { return }
        if let (code, reason) = EndToEndRoom.refusal(claims, room: room.name, mode: room.mode) {
            return refuse(code, reason)
        }
        if let previous = room.member(identity: claims.identity) {
            // The same token from a second address while its session lives is a replay: the owner moves with
            // resume, and a restarted client presents a fresh token.
            if previous.session.token == request.token, previous.address != from { return outbox.drop(.tokenReplay, from: from, now: now) }
            removeMember(previous, reason: "replaced by a new session", goodbye: .replaced, now: now)
        }
        let capacity = rooms.capacity(of: room)
        guard room.members.count < capacity else {
            return refuse(.roomFull, "room \(room.name) is full (\(capacity) members)")
        }

        let session = openSession(identity: claims.identity, name: claims.name ?? "", nonce: request.nonce, token: request.token,
                                  reply: reply, limits: outbox.signallingLimits(roomCapacity: capacity), now: now)
        var ssrc = core.newMemberSSRC()
        while room.downstream?.isRetired(ssrc) == true { ssrc = core.newMemberSSRC() }  // never an SSRC the room's key protected
        let member = Member(id: shared.nextMemberID(), session: session, ssrc: ssrc, canPublish: claims.grants.publish,
                            canSubscribe: claims.grants.subscribe, joinedAt: now.unixMilliseconds, room: room, muted: request.muted,
                            mixSequence: random.uint16())
        member.traits.speakersFromMedia = request.speakersFromMedia
        member.traits.endToEnd = claims.endToEnd == true
        member.traits.redundancy = request.redundancy
        if let keys = reply.keys {
            do {
                try member.startMedia(keys: keys, maxStreams: capacity)
            } catch {
                return refuse(.badRequest, "the relay cannot run SRTP: \(error)")
            }
        }
        if room.mutedByRoom.contains(member.identity) { member.muted = true; member.mutedByRoom = true }
        member.traits.isAudience = room.roster.audienceMode && !member.canPublish
        // The joiner learns of the announced members (not the audience, which it is told the size of).
        let others = room.roster.audienceMode ? room.members.filter { !$0.traits.isAudience } : room.members
        room.members.append(member)
        room.emptySince = nil
        room.cascade?.retarget(room: room)
        if room.mixesHere { room.mix?.start(now: now.monotonic) }
        sessions.add(.member(member), at: from)
        sessions.bySSRC[ssrc] = member

        let port = shared.workerPorts[min(workerIndex, shared.workerPorts.count - 1)]
        var flags = member.flags
        if room.mix != nil && (config.mixNack || config.mixForwardLoneSpeaker) { flags.insert(.mixRepaired) }
        if member.traits.redundancy { flags.insert(.redundancy) }
        var welcome = Welcome(nonce: request.nonce, memberID: member.id, ssrc: ssrc, port: port,
                              sessionSecret: session.sessionSecret, room: room.name, mode: room.mode.rawValue,
                              identity: member.identity,
                              memberCount: UInt32(others.count),
                              keepaliveMilliseconds: welcomeKeepaliveMilliseconds,
                              timeoutMilliseconds: UInt32(config.memberTimeout.milliseconds),
                              flags: flags,
                              roomMediaKey: reply.keys != nil && room.forwards && !room.hearsMix(member) ? room.downstreamKey.material : [],
                              streamIndices: reply.keys != nil ? Self.streamIndices(room) : [])
        welcome.fitAlternates(shared.placement.otherNodes().map(\.description))
        outbox.enqueue(.welcome(welcome), to: session)
        let pages = Self.memberPages(others.map(\.entry))
        for (i, page) in pages.enumerated() {
            outbox.enqueue(.memberPage(index: UInt16(i), count: UInt16(pages.count), members: page), to: session)
        }
        if room.roster.audienceMode {
            let audience = room.roster.audienceCount + (member.traits.isAudience ? 1 : 0)
            outbox.enqueue(.memberDelta(MemberDelta(audience: UInt32(clamping: audience))), to: session)
        }
        if !room.announcedSpeakers.isEmpty, member.wantsSpeakerLists { outbox.enqueue(.speakers(room.announcedSpeakers), to: session) }
        if let recording = room.recording { outbox.enqueue(.recording(active: true, id: recording.name), to: session) }
        core.roomKeys.sendNextKey(room, to: member)
        outbox.pump(session, now: now)
        rooms.announceJoin(member, now: now)
        // In a cluster, the room's other nodes learn of the joiner now (at most every 50 ms; else with the next pass).
        if let cascade = room.cascade {
            if cascade.lastDiscovery == .distantPast { core.cluster.discoverPeers(room, now: now) }
            if now.monotonic - cascade.lastRoster >= .milliseconds(50) { core.cluster.sendRoster(room, now: now) }
        }
        outbox.counters.joinsAccepted &+= 1
        if log.threshold <= .info {
            log.write(.info, "\(member.identity) joined \(room.name) from \(from) (member \(member.id), ssrc \(ssrc), "
                      + "\(room.members.count) in room)",
                      fields: [("room", room.name), ("identity", member.identity), ("member", "\(member.id)")])
        }
    }

    /// Where the room's forwarded streams stand under its downstream key, for a joiner's welcome: the forwarded
    /// speakers first (those it hears next), then the others, at most `Welcome.maxStreamIndices`.
    static func streamIndices(_ room: Room) -> [Welcome.StreamIndex] {
        guard room.forwards, let downstream = room.downstream else { return [] }
        let all = downstream.highestRTPIndices
        guard !all.isEmpty else { return [] }
        let forwarded = Set(room.selector.forwarded.compactMap { room.member(id: $0)?.ssrc })
        let ordered = all.filter { forwarded.contains($0.ssrc) } + all.filter { !forwarded.contains($0.ssrc) }
        return ordered.prefix(Welcome.maxStreamIndices).map { Welcome.StreamIndex(ssrc: $0.ssrc, index: $0.index) }
    }

    /// Why a join cannot name `room` (nil when it can): 1–`Signalling.maxNameBytes` bytes without control characters.
    /// The codec carries longer names so that this refusal, not a silent drop, answers them.
    static func roomNameProblem(_ room: String) -> String? {
        let bytes = room.utf8.count
        if bytes == 0 { return "the room name is empty" }
        if bytes > Signalling.maxNameBytes {
            return "the room name is too long: \(bytes) bytes (longest allowed: \(Signalling.maxNameBytes) bytes)"
        }
        if room.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "the room name contains a control character"
        }
        return nil
    }

    /// Verifies the token (signature, `exp`/`nbf`, `join` grant; the `room` claim is ignored) and welcomes the new
    /// session with room "" and mode "presence". An identity may be online from several devices at once; beyond
    /// `maxPresenceSessionsPerIdentity` its oldest session is replaced.
    func admitPresence(_ request: RegisterRequest, reply: AdmissionReply, now: Moment) {
        let from = reply.address
        guard workerIndex == RelayCore.presenceWorker else { return }
        guard !core.shuttingDown else { return refuse(.shuttingDown, "the relay is shutting down", reply: reply, now: now) }
        let claims: TokenClaims
        do {
            claims = try shared.verifier.verify(request.token, now: now.unixSeconds)
        } catch {
            return refuse(RefusalCode(error), error.reason, reply: reply, now: now)
        }
        guard claims.grants.join else {
            let error = TokenError.missingGrant("join")
            return refuse(RefusalCode(error), error.reason, reply: reply, now: now)
        }
        let online = core.presence.sessions(of: claims.identity)
        // As for joins: the same token from a second address while a session opened with it lives is a replay (the
        // owner moves with resume). A second device presents its own token, and is welcome beside the first.
        if online.contains(where: { $0.session.map { $0.token == request.token && $0.address != from } ?? false }) {
            return outbox.drop(.tokenReplay, from: from, now: now)
        }
        let bound = max(1, config.maxPresenceSessionsPerIdentity)
        for oldest in online.prefix(max(0, online.count - bound + 1)) {
            let reason = bound == 1 ? "replaced by a new session"
                : "replaced by a new session (at most \(bound) devices online per identity; this was the oldest)"
            core.removePresence(oldest, reason: reason, goodbye: .replaced, now: now)
        }
        let session = openSession(identity: claims.identity, name: claims.name ?? "", nonce: request.nonce, token: request.token,
                                  reply: reply, limits: outbox.signallingLimits(), now: now)
        let p = Presence(id: shared.nextMemberID(), session: session, registeredAt: now.unixMilliseconds)
        sessions.add(.presence(p), at: from)
        core.presence.add(p)
        core.history.append(.deliverWaiting(identity: p.identity, from: nil))
        outbox.enqueue(.welcome(Welcome(
            nonce: request.nonce, memberID: p.id, ssrc: 0, port: shared.workerPorts[RelayCore.presenceWorker], sessionSecret: session.sessionSecret,
            room: "", mode: "presence", identity: p.identity, memberCount: 0, keepaliveMilliseconds: welcomeKeepaliveMilliseconds,
            timeoutMilliseconds: UInt32(config.memberTimeout.milliseconds), flags: [])), to: session)
        outbox.pump(session, now: now)
        outbox.counters.presenceRegistered &+= 1
        if log.threshold <= .info { log.write(.info, "\(p.identity) online from \(from) (presence \(p.id))") }
    }

    /// Splits member entries into pages whose datagrams fit in `Signalling.maxDatagramSize`.
    static func memberPages(_ entries: [MemberEntry]) -> [[MemberEntry]] {
        guard !entries.isEmpty else { return [] }
        let budget = SignallingEnvelope.maxSealedPlaintext - Signalling.headerSize - 2 * 5
        var pages: [[MemberEntry]] = [[]]
        var used = 0
        for e in entries {
            let size = 3 + 11 + min(255, e.identity.utf8.count) + min(255, e.name.utf8.count)
            if used + size > budget, !pages[pages.count - 1].isEmpty {
                pages.append([])
                used = 0
            }
            pages[pages.count - 1].append(e)
            used += size
        }
        return pages
    }
}


extension RefusalCode {
    /// The refusal that reports a token error.
    init(_ error: TokenError) {
        switch error {
        case .malformed: self = .tokenMalformed
        case .unsupportedAlgorithm: self = .tokenAlgorithm
        case .unknownKey: self = .tokenUnknownKey
        case .badSignature: self = .tokenBadSignature
        case .expired: self = .tokenExpired
        case .notYetValid: self = .tokenNotYetValid
        case .wrongRoom, .noRoom: self = .tokenWrongRoom
        case .missingGrant: self = .tokenMissingGrant
        case .wrongRelay: self = .tokenWrongRelay
        }
    }
}
