import ParleyAuth
import ParleyCrypto
import ParleyWebRTC
import ParleyWire

/// WebRTC members (browsers, phone apps, any WHIP/WHEP client): RTP endpoints whose address is the one that passed
/// an ICE-lite check (RFC 8445 §2.5: the relay only answers checks) and whose SRTP keys come from a DTLS handshake in
/// which the relay is the server (RFC 5763/5764). Everything rides the worker's one port, told apart by the first
/// byte (RFC 7983): 0–3 STUN, 20–63 DTLS, 128–191 RTP/RTCP, and Parley's signalling (0x50).
///
/// Order of trust: a STUN check proves the sender knows the ICE password the answer carried (MESSAGE-INTEGRITY); only
/// then is its address latched, and only DTLS from a latched address reaches OpenSSL. The sender of a check may have
/// forged its source, so an address gets nothing but answers no larger than its checks (and at most three times what
/// it sent, `AddressCheck`) until it answers the relay's own check under the offer's password: then the DTLS flights
/// go there, and once connected the member moves there. Only after the handshake, whose peer certificate must match
/// the offer's fingerprint, does media flow either way. Consent (RFC 7675) is the answers to the relay's checks.
///
/// A part of the core (`CorePart`): the core hands it STUN and DTLS datagrams and the backend's WebRTC commands, asks
/// it to close a member's DTLS when the member goes, and ticks it; it reports when it next has work.
final class WebRTCMembers: CorePart {
    unowned(unsafe) let core: RelayCore  // the core owns its parts and outlives them

    init(core: RelayCore) { self.core = core }

    /// Adds a WebRTC member to `room` (opened with `createMode` when it does not exist and the token may create it):
    /// fresh ICE credentials and a DTLS server session for the answer; no address until a check arrives. A member of
    /// the same identity is replaced, as a native join replaces it.
    func create(room name: String, identity: String, displayName: String?, createMode: RoomMode?,
                                   terms: WebRTCOfferTerms, now: Moment) -> AdminResult {
        guard !core.shuttingDown else { return .unavailable("the relay is shutting down") }
        guard let context = shared.dtls else { return .unavailable("the relay has no DTLS certificate (OpenSSL failed at start)") }
        guard terms.publish || terms.subscribe else { return .invalid("the offer's audio is inactive: it neither sends nor receives") }
        var room = rooms[name]
        if room == nil {
            guard let mode = createMode else { return .notFound("room \(name) does not exist and the token may not create it") }
            switch rooms.open(name: name, mode: mode, creator: identity, now: now) {
            case .success(let r): room = r
            case .failure(let f): return .unavailable(f.reason)
            }
        }
        guard let room else { return .notFound("room \(name) does not exist") }
        if let previous = room.member(identity: identity) {
            removeMember(previous, reason: "replaced by a new session", goodbye: .replaced, now: now)
        }
        let capacity = rooms.capacity(of: room)
        guard room.members.count < capacity else { return .conflict("room \(name) is full (\(capacity) members)") }
        let dtls: DTLSSession
        do {
            dtls = try DTLSSession(context: context, role: .server, peerFingerprint: terms.remoteFingerprint)
        } catch {
            return .unavailable("the relay could not start DTLS: \(error)")
        }
        var credentials = WebRTCTransport.credentials(random)
        while sessions.byICEUfrag[credentials.ufrag] != nil { credentials = WebRTCTransport.credentials(random) }

        let session = RelaySession(connectionID: sessions.newConnectionID(random), identity: identity, name: displayName ?? "",
                                        sessionSecret: [], nonce: [], token: "", signals: false,
                                        address: PeerAddress(ipv4: 0, port: 0), viaPublicPort: false, now: now.monotonic)
        let webrtc = WebRTCTransport(localUfrag: credentials.ufrag, localPassword: credentials.password, remoteUfrag: terms.remoteUfrag,
                                     remotePassword: terms.remotePassword, tieBreaker: random.uint64(), dtls: dtls, createdAt: now.monotonic,
                                     payloadType: terms.payloadType, audioLevelExtensionID: terms.audioLevelExtensionID ?? 0)
        let member = Member(id: shared.nextMemberID(), session: session, kind: .webrtc, endpoint: EndpointLink(webrtc: webrtc), ssrc: core.newMemberSSRC(),
                            canPublish: terms.publish, canSubscribe: terms.subscribe, joinedAt: now.unixMilliseconds, room: room,
                            muted: false, mixSequence: random.uint16())
        member.hasDestination = false  // until DTLS gives keys: nothing goes out in the clear
        if terms.subscribe && !room.hearsMix(member) {
            // One stream per receiving section of the offer, up to the room's forwarding slots.
            member.endpoint!.streams = (0..<max(1, min(terms.slots, config.maxForwardedSpeakers))).map { _ in
                RTPStreamRewriter(ssrc: core.newMemberSSRC(), initialSequence: random.uint16(), initialTimestamp: random.uint32())
            }
        }
        if room.mutedByRoom.contains(identity) { member.muted = true; member.mutedByRoom = true }
        room.members.append(member)
        room.emptySince = nil
        room.cascade?.retarget(room: room)
        if room.mixesHere { room.mix?.start(now: now.monotonic) }
        sessions.add(.member(member), at: nil)
        sessions.bySSRC[member.ssrc] = member
        sessions.byICEUfrag[credentials.ufrag] = member
        noteTimerWork(at: now.monotonic)
        member.traits.isAudience = room.roster.audienceMode && !member.canPublish
        rooms.announceJoin(member, now: now)
        if log.threshold <= .info {
            log.write(.info, "WebRTC member \(identity) added to \(room.name) (member \(member.id), \(terms.publish ? "sends" : "")\(terms.publish && terms.subscribe ? " and " : "")\(terms.subscribe ? "receives" : ""))")
        }
        let port = shared.workerPorts[min(workerIndex, shared.workerPorts.count - 1)]
        return .webRTCMember(WebRTCMemberInfo(identity: identity, memberID: member.id, port: port, iceUfrag: credentials.ufrag,
                                              icePassword: credentials.password,
                                              sendSSRCs: !terms.subscribe ? [] : room.hearsMix(member) ? [room.mix!.ssrc] : member.endpoint!.streams.map(\.ssrc),
                                              cname: core.relayCNAME))
    }

    /// Ends the WebRTC member `identity` of `room` (the WHIP/WHEP `DELETE`): it leaves (`removeMember` sends its
    /// browser a close_notify).
    func delete(room name: String, identity: String, now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        guard let member = room.member(identity: identity), member.webrtc != nil else {
            return .notFound("\(identity) has no WebRTC session in room \(name)")
        }
        removeMember(member, reason: "left (WebRTC session ended)", goodbye: nil, now: now)
        return .ok
    }

    // MARK: STUN (ICE-lite)

    /// A STUN datagram: a member's check (a Binding request), or an answer to one of the relay's own checks.
    func handleSTUN(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        if bytes.count >= 2, UInt16(bytes[0]) << 8 | UInt16(bytes[1]) == STUNWriter.bindingSuccessType {
            return handleCheckAnswer(bytes, from: from, now: now)
        }
        handleCheck(bytes, from: from, now: now)
    }

    /// A Binding request whose USERNAME names a member's ICE credentials and whose MESSAGE-INTEGRITY checks with its
    /// password gets a success response (XOR-MAPPED-ADDRESS, MESSAGE-INTEGRITY, FINGERPRINT: no larger than the
    /// request). Before the handshake it latches the sender's address (DTLS is taken from there); once connected, a
    /// nominated check from elsewhere puts that address on trial. Either way the relay checks the address itself
    /// before sending it anything more. Anything else is dropped without a reply: the relay answers no one who does
    /// not hold a password it handed out.
    private func handleCheck(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        guard let request = try? STUNBindingRequest(parsing: bytes), request.isConnectivityCheck,
              let username = request.username,
              let colon = username.firstIndex(of: ":"),
              let member = sessions.byICEUfrag[String(username[..<colon])],
              let webrtc = member.webrtc,
              username[username.index(after: colon)...] == webrtc.remoteUfrag[...],
              request.hasValidIntegrity(key: webrtc.localPassword, in: bytes)
        else { return outbox.drop(.stunRejected, from: from, now: now) }
        // An address that is another session's (a member's, or an online identity's) is not this member's to take.
        if let owner = sessions.byAddress[from], !owner.isSame(as: .member(member)) { return outbox.drop(.stunRejected, from: from, now: now) }
        if member.endpoint?.rtpSource != from && (member.endpoint?.rtpSource == nil || request.useCandidate) {
            if member.endpointSRTP == nil {
                latch(member, at: from, now: now)  // still setting up: DTLS is taken from here, sent here once it answers
            } else if webrtc.trial?.address != from {
                // Connected: a check alone does not move the media (a check whose source was forged would). The
                // address goes on trial; the member moves there when it answers the relay's own check.
                if let old = webrtc.trial?.address { sessions.unlink(old, from: .member(member)) }
                webrtc.trial = AddressCheck(address: from, now: now.monotonic)
                sessions.link(from, to: .member(member))
            }
        }
        let response = STUNWriter.bindingSuccessSize(mapped: from)
        if from != webrtc.proven, webrtc.trial?.address == from {
            webrtc.trial!.heard(bytes.count, now: now.monotonic)
            webrtc.trial!.bytesOut += response
        }
        let space = output.reserve(STUNWriter.maxResponseSize)
        let n = STUNWriter.bindingSuccess(transactionID: request.transactionID, mapped: from, integrityKey: webrtc.localPassword, into: space)
        output.commit(space, length: n, to: from)
        sendTrialCheck(member, webrtc, now: now)
        noteTimerWork(at: now.monotonic)
    }

    /// An answer to one of the relay's checks: from the address it went to, to its latest transaction, under the
    /// offer's password. The trial's answer proves the address (its held DTLS flight goes out; a connected member
    /// moves there); a consent check's answer renews consent. Anything else is dropped.
    private func handleCheckAnswer(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        guard let member = sessions.member(at: from), let webrtc = member.webrtc,
              let answer = try? STUNBindingResponse(parsing: bytes), answer.isSuccess,
              answer.hasValidIntegrity(key: webrtc.remotePassword, in: bytes) else {
            return outbox.drop(.stunRejected, from: from, now: now)
        }
        if let trial = webrtc.trial, trial.address == from, !trial.transactionID.isEmpty, answer.transactionID == trial.transactionID {
            webrtc.trial = nil
            webrtc.proven = from
            webrtc.lastConsent = now.monotonic
            webrtc.nextConsentCheck = now.monotonic + consentDelay()
            if member.endpoint?.rtpSource != from { latch(member, at: from, now: now) }  // connected: the member moves here
            if !webrtc.heldFlight.isEmpty {
                let flight = webrtc.heldFlight
                webrtc.heldFlight = []
                for datagram in flight { sendDatagram(datagram, to: from) }
            }
            if log.threshold <= .info { log.write(.info, "WebRTC member \(member.identity) in \(member.room.name): \(from) answered the relay's check") }
        } else if from == webrtc.proven, let id = webrtc.consentTransaction, answer.transactionID == id {
            webrtc.consentTransaction = nil
            webrtc.lastConsent = now.monotonic
        } else {
            return outbox.drop(.stunRejected, from: from, now: now)
        }
        noteTimerWork(at: now.monotonic)
    }

    /// Sends the trial's check when one is due and the address's budget allows it (else it waits for more checks).
    private func sendTrialCheck(_ member: Member, _ webrtc: WebRTCTransport, now: Moment) {
        guard let trial = webrtc.trial, let due = trial.nextSend, due <= now.monotonic else { return }
        let size = STUNWriter.bindingRequestSize(username: webrtc.checkUsername, useCandidate: false)
        guard trial.attempts < AddressCheck.maxAttempts, trial.allows(size) else {
            // Unanswered, or out of budget: the trial stops until the address sends another check. Once connected
            // the member stays where it was and the address is forgotten.
            webrtc.trial!.giveUp()
            if member.endpointSRTP != nil {
                if trial.address != member.endpoint?.rtpSource { sessions.unlink(trial.address, from: .member(member)) }
                webrtc.trial = nil
            }
            return
        }
        let id = sendCheck(webrtc, to: trial.address)
        webrtc.trial!.sent(size, transactionID: id, now: now.monotonic)
    }

    /// Writes one of the relay's checks to `address` (a new transaction); returns its transaction ID.
    private func sendCheck(_ webrtc: WebRTCTransport, to address: PeerAddress) -> [UInt8] {
        let id = random.bytes(STUN.transactionIDSize)
        let username = webrtc.checkUsername
        let space = output.reserve(STUNWriter.bindingRequestSize(username: username, useCandidate: false))
        let n = STUNWriter.bindingRequest(transactionID: id, username: username, integrityKey: webrtc.remotePassword,
                                          priority: Self.checkPriority, useCandidate: false,
                                          role: .controlled(tieBreaker: webrtc.tieBreaker), into: space)
        output.commit(space, length: n, to: address)
        return id
    }

    /// The PRIORITY of the relay's checks: the answer's one host candidate's (`SDPAnswer`).
    static let checkPriority: UInt32 = 2_130_706_431

    /// A consent interval drawn from `WebRTCTransport.consentInterval`.
    private func consentDelay() -> Interval {
        let range = WebRTCTransport.consentInterval
        let span = UInt64(range.upperBound.nanoseconds - range.lowerBound.nanoseconds)
        return range.lowerBound + .nanoseconds(Int64(random.uint64() % (span + 1)))
    }

    /// Makes `address` the member's only address: its RTP, RTCP and DTLS come from there and its media goes there.
    func latch(_ member: Member, at address: PeerAddress, now: Moment) {
        if let old = member.endpoint?.rtpSource { sessions.unlink(old, from: .member(member)) }
        if let webrtc = member.webrtc {
            if webrtc.proven != address, webrtc.trial?.address != address {
                // Before the handshake: the latched address is on trial until it answers (a new one replaces the old;
                // the flight held stays the session's, for whichever address proves itself).
                webrtc.trial = AddressCheck(address: address, now: now.monotonic)
            }
        }
        member.endpoint?.rtpSource = address
        member.address = address
        sessions.link(address, to: .member(member))
        if log.threshold <= .info { log.write(.info, "WebRTC member \(member.identity) in \(member.room.name) at \(address)") }
    }

    // MARK: DTLS

    /// A DTLS record from a latched WebRTC member's address goes to its DTLS session; the handshake's flights go back
    /// to that address. When the handshake completes (peer certificate matching the offer's fingerprint, an SRTP
    /// profile agreed) the exported keys start the member's SRTP and media flows. A failed handshake removes it.
    func handleDTLS(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        guard let member = sessions.member(at: from), let webrtc = member.webrtc, member.endpoint?.rtpSource == from else {
            return outbox.drop(.dtlsUncheckedAddress, from: from, now: now)
        }
        let event = webrtc.dtls.receive(bytes)
        sendDTLS(webrtc.dtls, to: from, member: member)
        webrtc.retransmitAt = webrtc.dtls.secondsUntilRetransmit().map { now.monotonic + Interval(seconds: $0) }
        dtlsEvent(event, member: member, now: now)
    }

    private func dtlsEvent(_ event: DTLSEvent, member: Member, now: Moment) {
        switch event {
        case .handshaking:
            noteTimerWork(at: now.monotonic)
        case .ignored:
            outbox.drop(.dtlsRejected, from: member.endpoint?.rtpSource ?? member.address, now: now)
        case .connected:
            guard member.endpointSRTP == nil else { return }
            let profile: (SRTPProfile) -> SRTPProtectionProfile = {
                switch $0 {
                case .aes128CmHmacSha1_80: .aesCM128HmacSHA1_80
                case .aeadAes128Gcm: .aeadAES128GCM
                case .aeadAes256Gcm: .aeadAES256GCM
                }
            }
            guard let keys = member.webrtc?.dtls.keys,
                  let srtp = EndpointSRTP(profile: profile(keys.profile), peerSends: keys.remoteMasterKey, relaySends: keys.localMasterKey) else {
                return removeMember(member, reason: "left (SRTP could not start)", goodbye: nil, now: now)
            }
            member.endpointSRTP = srtp
            // Somewhere to send: media when it subscribes (fan-out and the mixer check both), and in any case the
            // relay's reports about its uplink and the NACKs that repair it.
            member.hasDestination = true
            noteTimerWork(at: now.monotonic)
            if log.threshold <= .info { log.write(.info, "WebRTC member \(member.identity) in \(member.room.name): DTLS done, \(keys.profile)") }
        case .failed(let error):
            outbox.drop(.dtlsRejected, from: member.endpoint?.rtpSource ?? member.address, now: now)
            removeMember(member, reason: "left (DTLS failed: \(error.reason))", goodbye: nil, now: now)
        case .closed:
            removeMember(member, reason: "left (DTLS closed)", goodbye: nil, now: now)
        }
    }

    /// A WebRTC member leaving for any reason (its DELETE, a kick, the room closing, a replacement): a DTLS
    /// close_notify tells its browser at once, instead of after its consent checks go unanswered.
    func close(_ member: Member) {
        guard let webrtc = member.webrtc, let address = member.endpoint?.rtpSource, webrtc.dtls.state == .connected else { return }
        webrtc.dtls.close()
        sendDTLS(webrtc.dtls, to: address, member: member)
    }

    /// Queues what the DTLS session wrote (handshake flights, retransmissions, alerts) to `address` once it proved
    /// itself; until then the latest flight is held for it (a ClientHello from a forged source gets nothing).
    private func sendDTLS(_ dtls: DTLSSession, to address: PeerAddress, member: Member) {
        let datagrams = dtls.takeOutgoing()
        guard let webrtc = member.webrtc, webrtc.proven == address else {
            if !datagrams.isEmpty { member.webrtc?.heldFlight = datagrams }
            return
        }
        for datagram in datagrams { sendDatagram(datagram, to: address) }
    }

    private func sendDatagram(_ datagram: [UInt8], to address: PeerAddress) {
        let space = output.reserve(datagram.count)
        datagram.withUnsafeBytes { space.copyMemory(from: $0) }
        output.commit(space, length: datagram.count, to: address)
    }

    // MARK: Timers

    /// For `tick`: a WebRTC member whose consent lapsed (or whose setup never finished) is removed; the relay's
    /// checks go out when due (an address on trial, consent of the proven one); a handshake in progress retransmits
    /// its last flight when OpenSSL's timer says so.
    func service(_ member: Member, _ webrtc: WebRTCTransport, now: Moment) -> Bool {
        let connected = member.endpointSRTP != nil
        if webrtc.hasExpired(now: now.monotonic, connected: connected) {
            removeMember(member, reason: connected ? "timed out (no ICE consent for 30 s)" : "timed out (ICE and DTLS did not finish)",
                         goodbye: nil, now: now)
            return false
        }
        sendTrialCheck(member, webrtc, now: now)
        if let proven = webrtc.proven, let due = webrtc.nextConsentCheck, due <= now.monotonic {
            webrtc.consentTransaction = sendCheck(webrtc, to: proven)
            webrtc.nextConsentCheck = now.monotonic + consentDelay()
        }
        if !connected, let at = webrtc.retransmitAt, at <= now.monotonic, let address = member.endpoint?.rtpSource {
            // OpenSSL keeps the handshake's timer (on the real clock); it resends its last flight only when it is due.
            let event = webrtc.dtls.handleTimeout()
            sendDTLS(webrtc.dtls, to: address, member: member)
            webrtc.retransmitAt = webrtc.dtls.secondsUntilRetransmit().map { now.monotonic + Interval(seconds: $0) }
            if case .failed = event { dtlsEvent(event, member: member, now: now); return false }
        }
        return true
    }

    /// When `serviceWebRTC` next has work for `member`.
    func nextDeadline(_ member: Member, _ webrtc: WebRTCTransport) -> Instant {
        let connected = member.endpointSRTP != nil
        var due = webrtc.nextDeadline(connected: connected)
        if !connected, let at = webrtc.retransmitAt { due = min(due, at) }
        return due
    }
}
