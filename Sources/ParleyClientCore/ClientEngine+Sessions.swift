// One session after another: the timers (a new session when the rejoin wait is over, the relay's silence, who
// speaks), what a session said and what follows its end — a rejoin after `RejoinBackoff`'s wait, a cluster's
// redirect (`roomElsewhere`), move (goodbye `moved`) or failover to an alternate, each only with the node's key.

import ParleyAuth
import ParleyWire

extension ClientEngine {
    static let maxRedirects = 3

    /// Where the next session goes: `pointer`'s node, insisting on its key.
    private func target(_ pointer: NodePointer) {
        server = pointer.address
        serverKey = Base64URL.decode(Substring(pointer.relayKey))
    }

    /// How the next session is protected: cleartext when configured so (debugging), else encrypted, insisting on
    /// `serverKey` when one is known.
    private var sessionSecurity: SignallingSession.Security {
        if case .cleartext = configuration.security { return .cleartext }
        return .encrypted(relayKey: serverKey)
    }

    /// Moves to `next` of the cluster's nodes, the current one counted as lost for a while (kept as an alternate
    /// with the key it had).
    private func failOver(to next: NodePointer, now: Instant, events: inout [Event]) {
        lostNodes.removeAll { now - $0.at > .seconds(10) || $0.node == server }
        lostNodes.append((server, now))
        alternates.removeAll { $0 == next }
        // The node left keeps the key it proved (a configured one, or the one its handshake proved): it may come back.
        if let key = serverKey ?? session.signalling.presentedRelayKey,
           let current = NodePointer(address: server, relayKey: Base64URL.encode(key)) { alternates.append(current) }
        target(next)
        lostRetries = 0
        phase = .waitingToRejoin(until: now)
        events.append(.failingOver(to: next.address))
    }

    /// The pointer a cluster's refusal or goodbye carries as its reason, or the ending that says why it is not
    /// followed: a node named without its key (or not as "HOST:PORT KEY") is never joined, since the token would go
    /// to whoever answers there.
    private static func pointer(in reason: String) -> NodePointer? {
        try? NodePointer(parsing: reason)
    }

    /// Whether `node` was failed over from within the last 10 s.
    private func lost(_ node: PeerAddress, now: Instant) -> Bool {
        lostNodes.contains { $0.node == node && now - $0.at <= .seconds(10) }
    }

    /// Timers: opens a new session when the rejoin wait is over; the session's keepalives, retries and resume; who
    /// speaks (forward rooms).
    public func tick(now: Instant) -> [Event] {
        switch phase {
        case .over:
            return []
        case .waitingToRejoin(let until):
            guard now >= until else { return [] }
            session = ClientSession(server: server, token: token(), room: configuration.room, muted: muted, speakersFromMedia: true,
                                    redundancy: configuration.redundancy, security: sessionSecurity, now: now,
                                    unixMilliseconds: unixMilliseconds, random: &random)
            crypto = nil
            roundTrip = Self.initialRoundTrip
            mediaRoundTrip = nil
            senderReportsSent = (0, 0)
            phase = .inSession
            return settle(session.tick(now: now), now: now)
        case .inSession:
            var events = settle(session.tick(now: now), now: now)
            if phase == .inSession,
               case .silent(let quiet) = relayWatch.observe(resuming: session.state == .resuming, lastHeard: session.signalling.lastHeard, now: now) {
                events.append(.relaySilent(for: quiet))
                // A cluster: do not wait out the member timeout on a silent node; rejoin through another now (if this
                // node is alive after all, the other sends us back to it).
                if let next = alternates.first(where: { $0.address != server }) {
                    failOver(to: next, now: now, events: &events)
                    return events + tick(now: now)
                }
            }
            if phase == .inSession, mode != .mix, let heard = speaking.update(now: now) {
                events.append(.speakersHeard(heard))
            }
            return events
        }
    }

    /// Applies what the session said, sends what it queued, and decides what follows when it ended.
    func settle(_ sessionEvents: [ClientSession.Event], now: Instant) -> [Event] {
        var events: [Event] = []
        for event in sessionEvents {
            events.append(.session(event))
            switch event {
            case .welcomed(let w):
                // A mode this client does not know is treated as forwarding.
                mode = RoomMode(rawValue: w.mode) ?? .forward
                redirects = 0
                alternates = w.alternates.compactMap(Self.pointer(in:))
                sender?.ssrc = w.ssrc
                sender?.redundancyLimit = w.flags.contains(.redundancy) ? RedundancyPolicy.maximumDistance : 0
                cname = Self.randomCNAME(using: &random)
                sentHistory?.clear()
                crypto = try? session.makeMediaCrypto()
                followRoomMute(w.flags)
                joinRoundTrips = []
                session.signalling.probePath(count: JitterPrior.probes)
                events += relayAnswers(now: now)
            case .resumed:
                events += relayAnswers(now: now)
            case .roomKey(let key, let indices):
                try? crypto?.installRoomKey(key, streamIndices: indices)
            case .member(.muted, let m, _) where m.memberID == session.welcome?.memberID,
                 .member(.unmuted, let m, _) where m.memberID == session.welcome?.memberID:
                followRoomMute(m.flags)
            case .member(.left, let m, _):
                speaking.forget(ssrc: m.ssrc)
            case .roundTrip(let rtt):
                roundTrip = rtt
                if joinRoundTrips.count < JitterPrior.probes {
                    // The first pongs of a session answer the pings sent at the welcome: where streams start.
                    joinRoundTrips.append(rtt)
                    let red = session.welcome?.flags.contains(.redundancy) == true
                    receiver.startupPrior = JitterPrior.delay(roundTrips: joinRoundTrips,
                                                              redundancy: red ? RedundancyPolicy.maximumDistance : 0)
                    let lossy = JitterPrior.spread(roundTrips: joinRoundTrips)
                        .map { $0.spread >= JitterPrior.repairThreshold }
                    sender?.pathLooksLossy = lossy ?? false
                }
            case .refused(.roomElsewhere, let reason) where Self.pointer(in: reason).map({ lost($0.address, now: now) }) == true:
                // The directory still names the node we just lost (its record lives a few seconds): ask this node
                // again shortly, until it lets the dead node go and opens the room itself.
                lostRetries += 1
                guard lostRetries <= 40 else { return events + finish(.refused(.roomElsewhere, reason)) }
                phase = .waitingToRejoin(until: now + .milliseconds(250))
                return events
            case .refused(.roomElsewhere, let reason) where redirects < Self.maxRedirects:
                // A cluster: the room lives on another node; join there now, insisting on the key this node named.
                guard let node = Self.pointer(in: reason) else { return events + finish(.refused(.roomElsewhere, Self.unfollowed(reason))) }
                redirects += 1
                target(node)
                phase = .waitingToRejoin(until: now)
                events.append(.redirected(node.address))
                return events + tick(now: now)
            case .refused(let code, let reason):
                return events + finish(.refused(code, reason))
            case .relayUnproven(let reason):
                return events + finish(.relayUnproven(reason))
            case .goodbye(.relayShutdown, _) where configuration.reconnect, .goodbye(.timedOut, _) where configuration.reconnect:
                break
            case .goodbye(.left, _):
                return events + finish(.left)
            case .goodbye(.moved, let reason) where configuration.reconnect:
                // A cluster: the node drains; join the room at the node it named now (the room's other members there
                // or elsewhere hear us again as soon as that node has us).
                guard let node = Self.pointer(in: reason) else { return events + finish(.removed(.moved, Self.unfollowed(reason))) }
                lostNodes.removeAll { now - $0.at > .seconds(10) || $0.node == node.address }
                lostNodes.append((server, now))
                alternates.removeAll { $0 == node }
                let draining = server
                target(node)
                redirects = 0
                phase = .waitingToRejoin(until: now)
                events.append(.moving(node.address, from: draining))
                return events + tick(now: now)
            case .goodbye(let code, let reason):
                return events + finish(.removed(code, reason))
            default:
                break
            }
        }
        flush()
        if session.state == .joined {
            everWelcomed = true
            backoff.reset()
        }
        guard case .ended(let reason) = session.state else { return events }
        if !everWelcomed && session.welcome == nil { return events + finish(.unreachable(reason)) }
        events.append(.connectionLost(reason))
        guard configuration.reconnect else { return events + finish(.lost(reason)) }
        if let next = alternates.first(where: { $0.address != server }) {
            // A cluster: this node is lost; rejoin at another (which sends us on if the room has a node already).
            failOver(to: next, now: now, events: &events)
        }
        let wait = backoff.take()
        phase = .waitingToRejoin(until: now + wait)
        events.append(.rejoining(after: wait))
        return events
    }

    /// Why a cluster's pointer without a usable key is not followed (the ending's reason).
    static func unfollowed(_ reason: String) -> String {
        "sent to another node of the cluster without its relay key (\"\(reason.prefix(100))\"): not followed, the token goes to no one unproven"
    }

    /// The relay answered: ends a silence, if there was one.
    private func relayAnswers(now: Instant) -> [Event] {
        guard case .back(let after) = relayWatch.answered(now: now) else { return [] }
        return [.relayBack(after: after)]
    }

    private func finish(_ ending: Ending) -> [Event] {
        flush()
        phase = .over(ending)
        return [.over(ending)]
    }

    /// Follows the relay's word on this member's own flags: a mute by the room mutes us and holds; when the room
    /// lifts it, we are as the relay says (unmuted).
    private func followRoomMute(_ flags: MemberFlags) {
        let byRoom = flags.contains(.mutedByRoom)
        if byRoom || mutedByRoom { muted = flags.contains(.muted) }
        mutedByRoom = byRoom
    }
}
