import ParleyAuth
import ParleyWire

extension RelayCore {
    func handleSignalling(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment, viaPublicPort: Bool) {
        let datagram: SignalDatagram
        do {
            datagram = try SignalDatagram(parsing: bytes)
        } catch {
            return drop(.malformedSignalling, from: from, now: now)
        }
        if let p = presence.byAddress[from] {
            noteTimerWork(at: now.monotonic)
            return handlePresenceSignal(p, datagram, bytes: bytes, now: now, viaPublicPort: viaPublicPort)
        }
        if let member = byAddress[from] {
            if case .join = datagram.message {
                // A client that restarted on the same address may join afresh (handled below).
            } else if datagram.connectionID != member.connectionID {
                return drop(.connectionMismatch, from: from, now: now)
            }
            return handleMemberSignal(member, datagram, bytes: bytes, now: now, viaPublicPort: viaPublicPort)
        }
        noteTimerWork(at: now.monotonic)
        switch datagram.message {
        case .join(let request):
            handleJoinRequest(request, bytes: bytes, from: from, now: now, viaPublicPort: viaPublicPort)
        case .register(let request):
            handleRegisterRequest(request, bytes: bytes, from: from, now: now, viaPublicPort: viaPublicPort)
        case .resume(let timestamp, let proof):
            handleResume(connectionID: datagram.connectionID, timestamp: timestamp, proof: proof, received: bytes.count,
                         from: from, now: now, viaPublicPort: viaPublicPort)
        case .pathResponse(let challenge, let proof):
            handlePathResponse(connectionID: datagram.connectionID, challenge: challenge, proof: proof, from: from, now: now,
                               viaPublicPort: viaPublicPort)
        default:
            // A session's traffic from an address it has not proven (NAT rebinding): challenge the address, drop the datagram.
            if datagram.connectionID != 0 {
                _ = challengeUnknownAddress(connectionID: datagram.connectionID, from: from, received: bytes.count, now: now,
                                            viaPublicPort: viaPublicPort)
            }
            drop(.unknownSender, from: from, now: now)
        }
    }

    /// A join from an address not yet verified: answer with a cookie, or pass it to the room's worker.
    func handleJoinRequest(_ request: JoinRequest, bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment, viaPublicPort: Bool) {
        guard shared.cookies.verify(request.cookie, for: from, unixSeconds: now.unixSeconds) else {
            if !request.cookie.isEmpty { counters.drops[DropReason.badCookie.rawValue] &+= 1 }
            guard retryBucket.take(now: now.monotonic) else { return drop(.joinFlood, from: from, now: now) }
            // Unverified address: never answer with more bytes than arrived.
            sendSignal(.retry(cookie: shared.cookies.mint(for: from, unixSeconds: now.unixSeconds)), to: from,
                       connectionID: 0, viaPublicPort: viaPublicPort, limit: bytes.count)
            counters.retriesSent &+= 1
            return
        }
        let owner = shared.worker(forRoom: request.room)
        if owner != workerIndex {
            handoffs.append((owner, Array(bytes), from))
            return
        }
        admit(request, from: from, received: bytes.count, now: now, viaPublicPort: viaPublicPort)
    }

    /// A join another worker verified the cookie of and passed here because this worker owns the room.
    /// (Also takes registers, which always go to worker 0.)
    public func handleHandedOffJoin(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        noteTimerWork(at: now.monotonic)
        guard let datagram = try? SignalDatagram(parsing: bytes) else { return drop(.malformedSignalling, from: from, now: now) }
        if case .register(let request) = datagram.message { return handleHandedOffRegister(request, from: from, received: bytes.count, now: now) }
        guard case .join(let request) = datagram.message else {
            return drop(.malformedSignalling, from: from, now: now)
        }
        if let existing = byAddress[from] {
            if existing.joinNonce == request.nonce { return }
            removeMember(existing, reason: "rejoined", goodbye: nil, now: now)
        }
        admit(request, from: from, received: bytes.count, now: now, viaPublicPort: true)
    }

    /// Refuses a join or register of `received` bytes, in no more bytes than that (the reason is cut to fit).
    func refuse(_ code: RefusalCode, _ reason: String, to address: PeerAddress, now: Moment, viaPublicPort: Bool, limit received: Int) {
        counters.joinsRefused[code.rawValue, default: 0] &+= 1
        if log.threshold <= .info { log.write(.info, "join from \(address) refused: \(reason)") }
        sendRefusal(code, reason, to: address, connectionID: 0, viaPublicPort: viaPublicPort, limit: received)
    }

    func admit(_ request: JoinRequest, from: PeerAddress, received: Int, now: Moment, viaPublicPort: Bool) {
        // Every refusal below answers this join: none may be larger than its `received` bytes.
        func refuse(_ code: RefusalCode, _ reason: String, to address: PeerAddress, now: Moment, viaPublicPort: Bool) {
            self.refuse(code, reason, to: address, now: now, viaPublicPort: viaPublicPort, limit: received)
        }
        guard joinBucket.take(now: now.monotonic) else { return drop(.joinFlood, from: from, now: now) }
        guard !shuttingDown else {
            return refuse(.shuttingDown, "the relay is shutting down", to: from, now: now, viaPublicPort: viaPublicPort)
        }
        guard !request.room.isEmpty, !request.room.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            return refuse(.badRequest, "room names must be 1–128 bytes without control characters", to: from, now: now, viaPublicPort: viaPublicPort)
        }
        let claims: TokenClaims
        do {
            claims = try shared.verifier.verify(request.token, now: now.unixSeconds, room: request.room,
                                                requiring: \.join, grantName: "join")
        } catch {
            return refuse(RefusalCode(error), error.reason, to: from, now: now, viaPublicPort: viaPublicPort)
        }
        if let (code, reason) = CallRoom.refusal(claims, room: request.room) {
            return refuse(code, reason, to: from, now: now, viaPublicPort: viaPublicPort)
        }
        var room = rooms[request.room]
        if room == nil {
            guard claims.grants.create else {
                return refuse(.roomNotFound, "room \(request.room) does not exist and the token may not create it",
                              to: from, now: now, viaPublicPort: viaPublicPort)
            }
            let mode = claims.mode ?? config.defaultRoomMode
            guard mode == "forward" || mode == "mix" else {
                return refuse(.badRequest, "unknown room mode \(mode)", to: from, now: now, viaPublicPort: viaPublicPort)
            }
            let created: Room
            switch openRoom(name: request.room, mode: mode, creator: claims.identity, now: now) {
            case .success(let r): created = r
            case .failure(let f): return refuse(f.code, f.reason, to: from, now: now, viaPublicPort: viaPublicPort)
            }
            room = created
        }
        guard let room else { return }
        if let previous = room.member(identity: claims.identity) {
            // The same token from a second address while its session lives is a replay: the owner moves with
            // resume, and a restarted client presents a fresh token.
            if previous.token == request.token, previous.address != from { return drop(.tokenReplay, from: from, now: now) }
            removeMember(previous, reason: "replaced by a new session", goodbye: .replaced, now: now)
        }
        let capacity = CallRoom.isCallRoom(room.name) ? CallRoom.capacity : room.maxMembers ?? config.maxMembersPerRoom
        guard room.members.count < capacity else {
            return refuse(.roomFull, "room \(room.name) is full (\(capacity) members)", to: from, now: now, viaPublicPort: viaPublicPort)
        }

        var connectionID: UInt32
        repeat { connectionID = Crypto.randomUInt32() } while connectionID == 0 || byConnection[connectionID] != nil
            || presence.byConnection[connectionID] != nil
        let ssrc = newMemberSSRC()
        let member = Member(id: shared.nextMemberID(), connectionID: connectionID, ssrc: ssrc, identity: claims.identity,
                            name: claims.name ?? "", canPublish: claims.grants.publish, canSubscribe: claims.grants.subscribe,
                            sessionSecret: Crypto.randomBytes(32), joinNonce: request.nonce, joinedAt: now.unixMilliseconds,
                            token: request.token, room: room, address: from, viaPublicPort: viaPublicPort, muted: request.muted, now: now.monotonic)
        member.channel = ReliableChannel(limits: signallingLimits(roomCapacity: capacity))
        member.speakersFromMedia = request.speakersFromMedia
        let others = room.members
        room.members.append(member)
        room.emptySince = nil
        room.mix?.start(now: now.monotonic)
        byAddress[from] = member
        byConnection[connectionID] = member
        bySSRC[ssrc] = member

        let port = shared.workerPorts[min(workerIndex, shared.workerPorts.count - 1)]
        enqueue(.welcome(Welcome(nonce: request.nonce, memberID: member.id, ssrc: ssrc, port: port,
                                 sessionSecret: member.sessionSecret, room: room.name, mode: room.mode, identity: member.identity,
                                 memberCount: UInt32(others.count),
                                 keepaliveMilliseconds: UInt32(min(config.keepaliveInterval, config.memberTimeout / 3) / 1_000_000),
                                 timeoutMilliseconds: UInt32(config.memberTimeout / 1_000_000), flags: member.flags)), to: member)
        let pages = Self.memberPages(others.map(\.entry))
        for (i, page) in pages.enumerated() {
            enqueue(.memberPage(index: UInt16(i), count: UInt16(pages.count), members: page), to: member)
        }
        if !room.announcedSpeakers.isEmpty, member.wantsSpeakerLists { enqueue(.speakers(room.announcedSpeakers), to: member) }
        pump(member, now: now)
        broadcast(.memberEvent(kind: .joined, member: member.entry, reason: ""), in: room, except: member, now: now)
        counters.joinsAccepted &+= 1
        events.append(RelayEvent(kind: .memberJoined, room: room.name, identity: member.identity, detail: member.name,
                                 unixMilliseconds: now.unixMilliseconds))
        if log.threshold <= .info {
            log.write(.info, "\(member.identity) joined \(room.name) from \(from) (member \(member.id), ssrc \(ssrc), \(room.members.count) in room)")
        }
    }

    /// Splits member entries into pages whose datagrams fit in `Signalling.maxDatagramSize`.
    static func memberPages(_ entries: [MemberEntry]) -> [[MemberEntry]] {
        guard !entries.isEmpty else { return [] }
        let budget = Signalling.maxDatagramSize - Signalling.headerSize - 2 * 5
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
        }
    }
}
