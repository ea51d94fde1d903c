import ParleyWire

/// Web pages online for one-to-one calls and direct texts: what a Parley client does over its presence session, a
/// page does over HTTP. Its private event stream (`GET /v1/presence/events`) is its presence: opened when the
/// stream starts, gone when it closes. The relay tells it what it would tell a client as events (`incoming_call`,
/// `call_status`, `direct_text`); it calls, answers and hangs up through the API, naming its stream. Calls route
/// exactly as between clients (`CallRouter`), so a page and a `parley call` ring each other, and an answered call
/// gives the page a token for the call room, which it joins as a WebRTC member.
///
/// Every request names the stream and carries a token; the stream must belong to the token's identity, so knowing
/// another page's stream id gets nobody anything.
extension RelayCore {
    /// Puts the web page whose presence stream is `stream` online as `identity` (its token's `sub`, checked by the
    /// API); the page learns its stream id from the `presence_online` event. Past `maxPresenceSessionsPerIdentity`
    /// devices, the oldest is replaced, as for clients.
    public func openWebPresence(stream: UInt64, identity: String, name: String, now: Moment) -> AdminResult {
        guard workerIndex == Self.presenceWorker else { return .unavailable("presence lives on worker 0") }
        guard !shuttingDown else { return .unavailable("the relay is shutting down") }
        guard stream != 0, presence.byWebStream[stream] == nil else { return .conflict("presence stream \(stream) is already online") }
        let online = presence.sessions(of: identity)
        let bound = max(1, config.maxPresenceSessionsPerIdentity)
        for oldest in online.prefix(max(0, online.count - bound + 1)) {
            removePresence(oldest, reason: "replaced by a new session (at most \(bound) devices online per identity; this was the oldest)",
                           goodbye: .replaced, now: now)
        }
        let p = Presence(id: shared.nextMemberID(), webStream: stream, identity: identity, name: name, registeredAt: now.unixMilliseconds)
        presence.add(p)
        history.append(.deliverWaiting(identity: p.identity, from: nil))
        presence.notify(RelayEvent(kind: .presenceOnline, room: "", identity: identity, detail: String(stream),
                                   unixMilliseconds: now.unixMilliseconds, recipient: stream))
        outbox.counters.presenceRegistered &+= 1
        if log.threshold <= .info { log.write(.info, "\(identity) online from a web page (presence \(p.id))") }
        return .ok
    }

    /// The page goes offline (its call ends for the other party): its presence stream closed (`identity` nil), or
    /// the page said it leaves (`identity`: its token's, which must own the stream).
    public func closeWebPresence(stream: UInt64, identity: String? = nil, now: Moment) -> AdminResult {
        let p: Presence
        if let identity {
            switch webPresence(stream, identity) {
            case .success(let found): p = found
            case .failure(let refusal): return refusal.result
            }
        } else {
            guard let found = presence.byWebStream[stream] else { return .notFound("no presence stream \(stream)") }
            p = found
        }
        removePresence(p, reason: identity == nil ? "its event stream closed" : "it left", goodbye: nil, now: now)
        return .ok
    }

    /// The page calls `callee`; answers the id the page's `call_status` events will carry. Ringing, or why not, comes
    /// as an event.
    public func webCall(stream: UInt64, identity: String, callee: String, now: Moment) -> AdminResult {
        let p: Presence
        switch webPresence(stream, identity) {
        case .success(let found): p = found
        case .failure(let refusal): return refusal.result
        }
        repeat { p.lastWebCallID &+= 1 } while p.lastWebCallID == 0
        calls.invite(from: p, callID: p.lastWebCallID, to: callee, now: now)
        return .webCall(callID: p.lastWebCallID)
    }

    /// The page accepts or declines the call `callID` ringing on it.
    public func webAnswer(stream: UInt64, identity: String, callID: UInt32, accept: Bool, now: Moment) -> AdminResult {
        switch webPresence(stream, identity) {
        case .success(let p):
            guard p.call?.matches(p, callID: callID) == true else { return .notFound("call \(callID) is not ringing here") }
            calls.answer(by: p, callID: callID, accept: accept, now: now)
            return .ok
        case .failure(let refusal): return refusal.result
        }
    }

    /// The page hangs up (cancels, declines) its call `callID`.
    public func webHangUp(stream: UInt64, identity: String, callID: UInt32, now: Moment) -> AdminResult {
        switch webPresence(stream, identity) {
        case .success(let p):
            guard p.call?.matches(p, callID: callID) == true else { return .notFound("call \(callID) is over") }
            calls.hangUp(by: p, callID: callID, now: now)
            return .ok
        case .failure(let refusal): return refusal.result
        }
    }

    /// A direct text from the page to every device of `to`; answers whether any took it.
    public func webDirectText(stream: UInt64, identity: String, to: String, text: String, now: Moment) -> AdminResult {
        switch webPresence(stream, identity) {
        case .success(let p):
            guard !text.isEmpty, text.utf8.count <= Signalling.maxTextBytes else {
                return .invalid("a text must be 1–\(Signalling.maxTextBytes) bytes")
            }
            guard history.enabled || !presence.sessions(of: to).isEmpty else { return .notFound("\(to) is not online") }
            backendMessageID &+= 1
            presence.deliverDirectText(text, from: p, to: to, messageID: backendMessageID, now: now)
            return .ok
        case .failure(let refusal): return refusal.result
        }
    }

    struct WebPresenceRefusal: Error { var result: AdminResult }

    /// The page's presence, if `stream` is online and belongs to `identity`.
    func webPresence(_ stream: UInt64, _ identity: String) -> Result<Presence, WebPresenceRefusal> {
        guard let p = presence.byWebStream[stream] else {
            return .failure(.init(result: .notFound("presence stream \(stream) is not online")))
        }
        guard p.identity == identity else {
            return .failure(.init(result: .forbidden("presence stream \(stream) is not \(identity)'s")))
        }
        return .success(p)
    }
}
