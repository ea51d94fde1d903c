import ParleyAuth
import ParleyWire

/// Signalling for every kind of session, in one path: a datagram finds its session in `sessions` (one lookup), the
/// session's reliable channel delivers its messages in order, and what every session understands (keepalive, leave,
/// resume, texts, acks) is handled here once; only what belongs to a member (mute, room texts) or to a presence
/// session (calls, direct texts) goes to its owner (`RoomTable`, `PresenceDirectory`, `CallRouter`). Datagrams from an
/// unknown address go to admission or `PathValidator`. Also the one removal, the one timeout scan, and the one move
/// to a proven address, for members and presence sessions alike.
extension RelayCore {
    func handleSignalling(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment, viaPublicPort: Bool) {
        if SignallingEnvelope.isEnvelope(bytes) { return admission.handleEnvelope(bytes, from: from, now: now, viaPublicPort: viaPublicPort) }
        let datagram: SignalDatagram
        do {
            datagram = try SignalDatagram(parsing: bytes)
        } catch {
            return outbox.drop(.malformedSignalling, from: from, now: now)
        }
        guard config.allowCleartext else { return refuseCleartext(datagram, received: bytes.count, from: from, now: now, viaPublicPort: viaPublicPort) }
        if let entry = sessions.byAddress[from] {
            // A sealed session takes only sealed datagrams: a cleartext one at its address is anyone's forgery.
            guard entry.session.sealed == nil else { return outbox.drop(.cleartext, from: from, now: now) }
            return handleSessionSignal(entry, datagram, bytes: bytes, now: now, viaPublicPort: viaPublicPort)
        }
        noteTimerWork(at: now.monotonic)
        switch datagram.message {
        case .join, .register:
            admission.cleartextRequest(datagram.message, bytes: bytes, from: from, now: now, viaPublicPort: viaPublicPort)
        case .resume(let timestamp, let proof):
            paths.resume(connectionID: datagram.connectionID, timestamp: timestamp, proof: proof, received: bytes.count,
                         from: from, now: now, viaPublicPort: viaPublicPort)
        case .pathResponse(let challenge, let proof):
            if let entry = paths.validatedPath(connectionID: datagram.connectionID, challenge: challenge, proof: proof, from: from,
                                               now: now) {
                move(entry, to: from, now: now, viaPublicPort: viaPublicPort)
            }
        default:
            // A session's traffic from an address it has not proven (NAT rebinding): challenge the address, drop the datagram.
            if datagram.connectionID != 0 {
                _ = paths.challengeUnknownAddress(connectionID: datagram.connectionID, from: from, received: bytes.count, now: now,
                                            viaPublicPort: viaPublicPort)
            }
            outbox.drop(.unknownSender, from: from, now: now)
        }
    }

    /// Version 1 signalling when the relay admits only version 2: a join or register is told why (in no more bytes
    /// than it sent, within the budget for unverified addresses) so an old client says something clear; the rest is
    /// dropped. All of it is counted as `cleartext`.
    func refuseCleartext(_ datagram: SignalDatagram, received: Int, from: PeerAddress, now: Moment, viaPublicPort: Bool) {
        outbox.drop(.cleartext, from: from, now: now)
        switch datagram.message {
        case .join, .register:
            guard outbox.takeUnverifiedAnswer(now: now.monotonic) else { return }
            outbox.sendRefusal(.encryptionRequired, "this relay admits only encrypted signalling (protocol version 2): update parley",
                               to: from, connectionID: 0, viaPublicPort: viaPublicPort, limit: received)
        default:
            break
        }
    }

    /// A datagram from a session's own address.
    func handleSessionSignal(_ entry: SessionTable.Entry, _ datagram: SignalDatagram, bytes: UnsafeRawBufferPointer, now: Moment,
                             viaPublicPort: Bool) {
        let session = entry.session
        switch (entry, datagram.message) {
        case (.member, .join), (.presence, .register):
            break  // a client that restarted on the same address may join or register afresh (handled below)
        default:
            guard datagram.connectionID == session.connectionID else { return outbox.drop(.connectionMismatch, from: session.address, now: now) }
        }
        if case .presence = entry { noteTimerWork(at: now.monotonic) }
        session.lastHeard = now.monotonic
        if !viaPublicPort { session.viaPublicPort = false }
        let delivered = session.channel.receive(sequence: datagram.sequence, ack: datagram.ack, message: datagram.message,
                                                now: now.monotonic)
        // Acks and pings (most of the signalling a room in steady state receives) change nothing `tick` looks at but
        // this session's channel, whose next due time is marked after the pump below; anything else may.
        if delivered.contains(where: { !$0.isAckOrPing }) { noteTimerWork(at: now.monotonic) }
        for message in delivered {
            guard sessions.holds(entry) else { return }  // removed while handling
            switch message {
            case .leave:
                removeSession(entry, reason: "left", goodbye: .left, now: now)
                return
            case .ping(let timestamp):
                outbox.sendSignal(.pong(timestamp: timestamp), to: session)
                session.channel.ackSent()
            case .sendText(let to, let fragment):
                for finished in session.texts.take(fragment) {
                    switch (finished, entry) {
                    case (.text(let id, let text, let images), .member(let m)):
                        rooms.deliverText(text, attachments: images, from: m, to: to, messageID: id, now: now)
                    case (.text(let id, let text, let images), .presence(let p)):
                        presence.deliverDirectText(text, attachments: images, from: p, to: to, messageID: id, now: now)
                    case (.refused(let id, let why), _): outbox.enqueue(.textStatus(messageID: id, delivered: false, reason: why.reason), to: session)
                    }
                }
            case .resume(let timestamp, let proof):
                // From the session's own address: nothing moves, but the proof must hold like any other.
                if session.resumeIsProven(timestamp: timestamp, proof: proof, now: now) {
                    outbox.enqueue(.resumed, to: session)
                } else {
                    outbox.drop(.resumeRejected, from: session.address, now: now)
                }
            case .pathResponse:
                break  // an answer to a challenge from the address the session already has: nothing to move
            case .ack:
                break
            case .join(let request):
                // A sealed session joins afresh with a new handshake, never with a join inside its channel.
                guard case .member = entry, session.sealed == nil else { outbox.drop(.unexpectedMessage, from: session.address, now: now); continue }
                if request.nonce == session.nonce { continue }  // a repeat: the welcome is on its way
                let address = session.address
                removeSession(entry, reason: "rejoined", goodbye: nil, now: now)
                admission.cleartextRequest(message, bytes: bytes, from: address, now: now, viaPublicPort: viaPublicPort)
                return
            case .register(let request):
                guard case .presence = entry, session.sealed == nil else { outbox.drop(.unexpectedMessage, from: session.address, now: now); continue }
                if request.nonce == session.nonce { continue }  // a repeat: the welcome is on its way
                let address = session.address
                removeSession(entry, reason: "registered again", goodbye: nil, now: now)
                admission.cleartextRequest(message, bytes: bytes, from: address, now: now, viaPublicPort: viaPublicPort)
                return
            default:
                let handled: Bool
                switch entry {
                case .member(let m): handled = handleMemberMessage(message, from: m, now: now)
                case .presence(let p): handled = handlePresenceMessage(message, from: p, now: now)
                }
                if !handled { outbox.drop(.unexpectedMessage, from: session.address, now: now) }
            }
        }
        if sessions.holds(entry) {
            outbox.pump(session, now: now)
            noteTimerWork(at: session.channel.serviceDue)
        }
    }

    /// What only a room member sends; false for anything else.
    func handleMemberMessage(_ message: SignalMessage, from member: Member, now: Moment) -> Bool {
        switch message {
        case .setMuted(let muted): rooms.setMuted(member, muted, now: now)
        default: return false
        }
        return true
    }

    /// What only a presence session sends; false for anything else.
    func handlePresenceMessage(_ message: SignalMessage, from p: Presence, now: Moment) -> Bool {
        switch message {
        case .callInvite(let callID, let to, let share): calls.invite(from: p, callID: callID, to: to, keyShare: share, now: now)
        case .callAnswer(let callID, let accept, let share): calls.answer(by: p, callID: callID, accept: accept, keyShare: share, now: now)
        case .callHangup(let callID): calls.hangUp(by: p, callID: callID, now: now)
        case .chatAnswer(let requester, let accept): messaging.answerChat(from: p, requester: requester, accept: accept, now: now)
        default: return false
        }
        return true
    }

    /// Removes any session: a member leaves its room, a presence session goes offline (telling it why when
    /// `goodbye` is set).
    func removeSession(_ entry: SessionTable.Entry, reason: String, goodbye: GoodbyeCode?, now: Moment) {
        switch entry {
        case .member(let m): removeMember(m, reason: reason, goodbye: goodbye, now: now)
        case .presence(let p): removePresence(p, reason: reason, goodbye: goodbye, now: now)
        }
    }

    /// Removes a member: tells it why (when `goodbye` is set) and tells the room it left.
    func removeMember(_ member: Member, reason: String, goodbye: GoodbyeCode?, goodbyeReason: String? = nil, now: Moment) {
        if let code = goodbye { outbox.sayGoodbye(code, goodbyeReason ?? reason, to: member.session) }
        sessions.remove(.member(member), at: member.isRTPEndpoint ? member.endpoint?.rtpSource : member.address)
        for a in member.endpoint?.rtcpSources ?? [] { sessions.unlink(a, from: .member(member)) }
        sessions.bySSRC[member.ssrc] = nil
        if let webrtc = member.webrtc {
            webRTCMembers.close(member)
            sessions.byICEUfrag[webrtc.localUfrag] = nil
            if let trial = webrtc.trial?.address, trial != member.endpoint?.rtpSource { sessions.unlink(trial, from: .member(member)) }
        }
        rtcp.streamsEnded(for: member, now: now)
        if roomKeys.holdsRoomKey(member) { roomKeys.holderLeaving(member, now: now.monotonic) }  // the room's key leaves with it
        rooms.memberLeft(member, reason: reason, now: now)
    }

    /// Forgets a presence session (telling it why when `goodbye` is set); its call ends for the other party, or, when
    /// it was one of several devices ringing, just stops ringing there.
    func removePresence(_ p: Presence, reason: String, goodbye: GoodbyeCode?, now: Moment) {
        switch p.link {
        case .signalling(let session):
            if let code = goodbye { outbox.sayGoodbye(code, reason, to: session) }
            sessions.remove(.presence(p), at: session.address)
        case .web(let stream):
            presence.notify(RelayEvent(kind: .presenceOffline, room: "", identity: p.identity, detail: reason,
                                       unixMilliseconds: now.unixMilliseconds, recipient: stream))
        case .remote:
            break
        }
        presence.remove(p)
        calls.sessionLost(p, now: now)
        if log.threshold <= .info { log.write(.info, "\(p.identity) offline: \(reason)") }
    }

    /// Moves a session whose new address answered its challenge (a session already at that address is removed).
    func move(_ entry: SessionTable.Entry, to from: PeerAddress, now: Moment, viaPublicPort: Bool) {
        let session = entry.session
        sessions.unlink(session.address, from: entry)
        if let other = sessions.byAddress[from] { removeSession(other, reason: "address taken over", goodbye: nil, now: now) }
        let old = session.address
        switch entry {
        case .member(let m): m.address = from  // through the member: its room's fan-out table follows
        case .presence: session.address = from
        }
        session.viaPublicPort = viaPublicPort
        session.lastHeard = now.monotonic
        sessions.link(from, to: entry)
        outbox.counters.resumes &+= 1
        outbox.send(.resumed, to: session, now: now)
        noteTimerWork(at: now.monotonic)
        if log.threshold <= .info { log.write(.info, "\(entry.label) moved: \(old) → \(from)") }
    }

    /// A sealed datagram: from its session's own address, opened and handled like any signalling; from another
    /// address, opened with the keys of the session it names, and only a resume or a path response is taken (the
    /// address is challenged before the session moves).
    func handleSealed(_ envelope: EnvelopeView, received: Int, from: PeerAddress, now: Moment, viaPublicPort: Bool) {
        let known = sessions.byAddress[from]
        let entry: SessionTable.Entry
        if let known, known.session.connectionID == envelope.connectionID {
            entry = known
        } else if let named = sessions.byConnection[envelope.connectionID] {
            entry = named
        } else {
            outbox.drop(known == nil ? .unknownSender : .connectionMismatch, from: from, now: now)
            // A session this relay forgot (it restarted, or timed the session out): say so, in no more bytes than
            // arrived, so the member joins afresh at once. Unsealed, as no key is left to seal it with; a forged
            // one only makes a resuming member rejoin.
            if known == nil, outbox.takeUnverifiedAnswer(now: now.monotonic) {
                outbox.sendRefusal(.unknownSession, "unknown session", to: from, connectionID: envelope.connectionID,
                                   viaPublicPort: viaPublicPort, limit: received)
            }
            return
        }
        guard let channel = entry.session.sealed else { return outbox.drop(.cleartext, from: from, now: now) }
        let plaintext = outbox.openScratch
        let length: Int
        do {
            length = try channel.open(envelope.body, into: plaintext)
        } catch .replayed, .tooOld {
            return outbox.drop(.sealedReplayed, from: from, now: now)
        } catch {
            return outbox.drop(.sealedRejected, from: from, now: now)
        }
        let inner = UnsafeRawBufferPointer(rebasing: plaintext[..<length])
        guard let datagram = try? SignalDatagram(parsing: inner), datagram.connectionID == envelope.connectionID else {
            return outbox.drop(.malformedSignalling, from: from, now: now)
        }
        if let known, known.isSame(as: entry) {
            return handleSessionSignal(entry, datagram, bytes: inner, now: now, viaPublicPort: viaPublicPort)
        }
        // The session's keys, from an address that is not its own (NAT rebinding, a new network).
        noteTimerWork(at: now.monotonic)
        switch datagram.message {
        case .resume(let timestamp, let proof):
            paths.resume(connectionID: datagram.connectionID, timestamp: timestamp, proof: proof, received: received,
                         from: from, now: now, viaPublicPort: viaPublicPort)
        case .pathResponse(let challenge, let proof):
            if let moving = paths.validatedPath(connectionID: datagram.connectionID, challenge: challenge, proof: proof, from: from, now: now) {
                move(moving, to: from, now: now, viaPublicPort: viaPublicPort)
            }
        default:
            _ = paths.challengeUnknownAddress(connectionID: datagram.connectionID, from: from, received: received, now: now,
                                              viaPublicPort: viaPublicPort)
            outbox.drop(.unknownSender, from: from, now: now)
        }
    }
}
