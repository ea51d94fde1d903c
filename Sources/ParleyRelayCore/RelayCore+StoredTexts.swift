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

/// What the message store answers (through worker 0's inbox): a text kept (the sender is told `stored`), texts to
/// deliver to an identity now online, texts that failed (expired, or their chat declined); and a recipient's answer to
/// a chat request. A room text the store could not keep is answered through its room's worker (`roomTextNotKept`). The core tells only the sending session itself — the same connection id and identity — so a
/// sender that went away learns nothing wrong; `parley listen` shows what happened later.
extension RelayCore {
    /// The session of `identity` with connection id `connection`, if it is still online here.
    func presenceSession(_ identity: String, connection: UInt32) -> SignallingSession? {
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
            backendMessageID &+= 1
            let chat = presence.chats.chat(t.from, identity)
            let request = presence.history.enabled && chat?.state == .requested && chat?.requester == t.from
            guard presence.deliver(t.text, attachments: t.attachments, from: t.from, fromID: 0, to: recipients, messageID: backendMessageID, sentAt: t.at,
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
}
