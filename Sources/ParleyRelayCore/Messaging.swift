import ParleyWire

/// A direct text the store kept, on its way to its recipient (`deliverWaiting`) or back to its sender (`textsFailed`).
public struct KeptText: Equatable, Sendable {
    /// The store's id.
    public var id: Int64
    public var from: String, to: String, text: String
    /// When it was sent (Unix ms).
    public var at: Int64
    /// The session that sent it (its connection id) and its id for the text.
    public var senderConnection: UInt32, senderMessageID: UInt32
    /// Why it failed (`textsFailed`).
    public var reason: String
    /// The ids of the images it carries.
    public var attachments: [String]
    /// A kept text.
    public init(id: Int64, from: String, to: String, text: String, at: Int64, senderConnection: UInt32, senderMessageID: UInt32, reason: String = "",
                attachments: [String] = []) {
        self.id = id; self.from = from; self.to = to; self.text = text; self.at = at
        self.senderConnection = senderConnection; self.senderMessageID = senderMessageID; self.reason = reason
        self.attachments = attachments
    }
}

/// Messaging on this worker (worker 0 holds presence): what the message store answers and what web pages online for
/// calls ask. A part of the core (`CorePart`) over its presence directory and call router; the backend and the store
/// reach it as `RelayCore.messaging`.
///
/// What the message store answers (through worker 0's inbox): a text kept (the sender is told `stored`), texts to
/// deliver to an identity now online, texts that failed (expired, or their chat declined); and a recipient's answer to
/// a chat request. A room text the store could not keep is answered through its room's worker (`roomTextNotKept`). The core tells only the sending session itself — the same connection id and identity — so a
/// sender that went away learns nothing wrong; `parley listen` shows what happened later.
///
/// Web pages online for one-to-one calls and direct texts: what a Parley client does over its presence session, a
/// page does over HTTP. Its private event stream (`GET /v1/presence/events`) is its presence: opened when the
/// stream starts, gone when it closes. The relay tells it what it would tell a client as events (`incoming_call`,
/// `call_status`, `direct_text`); it calls, answers and hangs up through the API, naming its stream. Calls route
/// exactly as between clients (`CallRouter`), so a page and a `parley call` ring each other, and an answered call
/// gives the page a token for the call room, which it joins as a WebRTC member.
///
/// Every request names the stream and carries a token; the stream must belong to the token's identity, so knowing
/// another page's stream id gets nobody anything.
public final class Messaging: CorePart {
    unowned(unsafe) let core: RelayCore  // the core owns its parts and outlives them
    var presence: PresenceDirectory { core.presence }
    var calls: CallRouter { core.calls }
    var history: TextLog { core.history }

    init(core: RelayCore) { self.core = core }

    // MARK: What the message store answers

    /// The session of `identity` with connection id `connection`, if it is still online here.
    func presenceSession(_ identity: String, connection: UInt32) -> RelaySession? {
        guard connection != 0 else { return nil }
        return presence.sessions(of: identity).first { $0.session?.connectionID == connection }?.session
    }

    /// The store kept (or could not keep) a direct text: its sender is told `stored`, or that it failed and why.
    public func textStored(from identity: String, connection: UInt32, messageID: UInt32, stored: Bool, reason: String, now: Moment) -> AdminResult {
        guard let session = presenceSession(identity, connection: connection) else { return .ok }
        outbox.enqueue(stored ? .textStored(messageID: messageID) : .textStatus(messageID: messageID, delivered: false, reason: reason), to: session)
        outbox.pump(session, now: now)
        return .ok
    }

    /// The store could not keep a room text: its sender, when that session is still in the room, hears it in a second
    /// `text status` (delivered as the first said, with why it was not kept).
    public func roomTextNotKept(room name: String, identity: String, connection: UInt32, messageID: UInt32, delivered: Bool,
                                reason: String, now: Moment) -> AdminResult {
        guard connection != 0, let member = rooms[name]?.member(identity: identity), member.session.connectionID == connection else { return .ok }
        outbox.enqueue(.textStatus(messageID: messageID, delivered: delivered, reason: "not kept in the room's history: \(reason)"), to: member.session)
        outbox.pump(member.session, now: now)
        return .ok
    }

    /// Texts kept for `identity`, now online: delivered to its devices (with when they were sent, and the request flag
    /// on a chat's first text), the store told, each sender that is still connected told `delivered`.
    public func deliverWaiting(to identity: String, texts: [KeptText], now: Moment) -> AdminResult {
        let recipients = presence.sessions(of: identity)
        guard !recipients.isEmpty else {  // gone again: they stay kept
            history.append(.notDelivered(ids: texts.map(\.id)))
            return .ok
        }
        var delivered: [Int64] = [], undelivered: [Int64] = []
        // Two registrations close together both ask the store before it hears of the first delivery: a text delivered
        // already (to every device online) is not delivered again.
        for t in texts where !presence.recentlyDelivered.contains(t.id) {
            core.backendMessageID &+= 1
            let chat = presence.chats.chat(t.from, identity)
            let request = presence.history.enabled && chat?.state == .requested && chat?.requester == t.from
            guard presence.deliver(t.text, attachments: t.attachments, from: t.from, fromID: 0, to: recipients, messageID: core.backendMessageID, sentAt: t.at,
                                   request: request, now: now) else {
                undelivered.append(t.id)
                continue
            }
            delivered.append(t.id)
            if let sender = presenceSession(t.from, connection: t.senderConnection) {
                outbox.enqueue(.textStatus(messageID: t.senderMessageID, delivered: true, reason: ""), to: sender)
                outbox.pump(sender, now: now)
            }
        }
        if !delivered.isEmpty { history.append(.delivered(ids: delivered, at: now.unixMilliseconds)) }
        if !undelivered.isEmpty { history.append(.notDelivered(ids: undelivered)) }
        presence.noteDelivered(delivered)
        return .ok
    }

    /// Kept texts that failed (expired, or declined): each sender still connected is told why.
    public func textsFailed(_ texts: [KeptText], now: Moment) -> AdminResult {
        for t in texts {
            guard let sender = presenceSession(t.from, connection: t.senderConnection) else { continue }
            outbox.enqueue(.textStatus(messageID: t.senderMessageID, delivered: false, reason: t.reason), to: sender)
            outbox.pump(sender, now: now)
        }
        return .ok
    }

    /// The store's chats, changed on other nodes of a cluster too: they replace what worker 0 knew of each pair
    /// (`ChatBook.replace`). A chat answered elsewhere settles the texts this node held for it meanwhile (the answering
    /// node settled those it knew of; the store's claims make a second settling change nothing): declined, they fail;
    /// accepted, they wait like any other, and go out now to a recipient online here.
    public func replaceChats(_ chats: [ChatBook.Chat]) -> AdminResult {
        for c in presence.chats.replace(with: chats) {
            switch c.state {
            case .declined:
                history.append(.failHeld(from: c.requester, to: c.recipient, reason: "\(c.recipient) declined your chat request"))
            case .accepted:
                history.append(.release(from: c.requester, to: c.recipient))
                if !presence.sessions(of: c.recipient).isEmpty { history.append(.deliverWaiting(identity: c.recipient, from: c.requester)) }
            case .requested:
                break
            }
        }
        return .ok
    }

    /// `p` answers the chat `requester` asked for: accepted, the texts held for it follow; declined, they fail and
    /// later ones too. Both sides' clients are told. Nothing without a store, or without such a request.
    func answerChat(from p: Presence, requester: String, accept: Bool, now: Moment) {
        guard history.enabled, let chat = presence.chats.answer(requester: requester, recipient: p.identity, accept: accept) else { return }
        history.append(.chat(requester: requester, recipient: p.identity, state: chat.state, at: now.unixMilliseconds))
        if accept {
            history.append(.release(from: requester, to: p.identity))
            history.append(.deliverWaiting(identity: p.identity, from: requester))
        } else {
            history.append(.failHeld(from: requester, to: p.identity, reason: "\(p.identity) declined your chat request"))
        }
        presence.tellChat(chat, now: now)
    }

    /// A web page answers a chat request (`POST /v1/presence/{stream}/chats/{identity}`).
    public func webAnswerChat(stream: UInt64, identity: String, requester: String, accept: Bool, now: Moment) -> AdminResult {
        switch webPresence(stream, identity) {
        case .success(let p):
            guard history.enabled else { return .unavailable("this relay keeps no chats (no state directory)") }
            guard presence.chats.chat(requester, identity).map({ $0.state == .requested && $0.requester == requester }) == true else {
                return .notFound("\(requester) has not asked to chat with \(identity)")
            }
            answerChat(from: p, requester: requester, accept: accept, now: now)
            return .ok
        case .failure(let refusal): return refusal.result
        }
    }

    // MARK: Web pages online

    /// Puts the web page whose presence stream is `stream` online as `identity` (its token's `sub`, checked by the
    /// API); the page learns its stream id from the `presence_online` event. Past `maxPresenceSessionsPerIdentity`
    /// devices, the oldest is replaced, as for clients.
    public func openWebPresence(stream: UInt64, identity: String, name: String, now: Moment) -> AdminResult {
        guard workerIndex == RelayCore.presenceWorker else { return .unavailable("presence lives on worker 0") }
        guard !core.shuttingDown else { return .unavailable("the relay is shutting down") }
        guard stream != 0, presence.byWebStream[stream] == nil else { return .conflict("presence stream \(stream) is already online") }
        let online = presence.sessions(of: identity)
        let bound = max(1, config.maxPresenceSessionsPerIdentity)
        for oldest in online.prefix(max(0, online.count - bound + 1)) {
            core.removePresence(oldest, reason: "replaced by a new session (at most \(bound) devices online per identity; this was the oldest)",
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
        core.removePresence(p, reason: identity == nil ? "its event stream closed" : "it left", goodbye: nil, now: now)
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
            core.backendMessageID &+= 1
            presence.deliverDirectText(text, from: p, to: to, messageID: core.backendMessageID, now: now)
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
