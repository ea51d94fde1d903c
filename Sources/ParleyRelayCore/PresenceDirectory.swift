import ParleyWire

/// Worker 0's online identities and the direct texts between them (the sessions themselves are in the core's
/// `SessionTable`, their calls in its `CallRouter`). An identity may be online from several devices: each has its
/// own presence session, oldest first, at most `maxPresenceSessionsPerIdentity`. Owned by one `RelayCore` (one thread).
///
/// Everything the relay tells a device goes through `send`: a Parley client gets the signalling message; a web page
/// gets it as a private event (`notices`, drained with the relay's events into its presence stream).
final class PresenceDirectory {
    /// Online identities: every live presence session of each, oldest first (never an empty list).
    private(set) var byIdentity: [String: [Presence]] = [:]
    /// Web pages' presence sessions by their event stream.
    private(set) var byWebStream: [UInt64: Presence] = [:]
    /// Private events for web pages not yet drained, oldest first; at most `noticeCapacity` (the oldest dropped).
    private(set) var notices: [RelayEvent] = []
    /// Bumped by every notice, so the worker drains them at once (a ring must not wait for the next poll).
    private(set) var noticeRevision: UInt64 = 0
    static let noticeCapacity = 1024
    private let outbox: Outbox
    /// Where kept texts and chats go (`RelayCore+StoredTexts.swift`); off without a store.
    let history: TextLog
    /// Where each chat stands (decided only while `history` is on: declines must outlive a restart).
    let chats: ChatBook

    init(outbox: Outbox, history: TextLog = TextLog(), chats: ChatBook = ChatBook()) {
        self.outbox = outbox
        self.history = history
        self.chats = chats
    }

    /// Kept texts delivered lately (the store's ids), oldest first, at most `recentCapacity`: a second answer from the
    /// store for the same texts, asked before it heard of the first delivery, delivers nothing.
    private(set) var recentlyDelivered: Set<Int64> = []
    private var recentOrder: [Int64] = []
    static let recentCapacity = 4_096

    func noteDelivered(_ ids: [Int64]) {
        for id in ids where recentlyDelivered.insert(id).inserted { recentOrder.append(id) }
        if recentOrder.count > Self.recentCapacity {
            let drop = recentOrder.count - Self.recentCapacity
            for id in recentOrder.prefix(drop) { recentlyDelivered.remove(id) }
            recentOrder.removeFirst(drop)
        }
    }

    /// Whether a call from `caller` rings `callee` as a request (no accepted chat between them; only with a store).
    func isRequest(from caller: String, to callee: String) -> Bool { history.enabled && !chats.accepted(caller, callee) }

    /// Every live session of `identity`, oldest first (empty when it is not online).
    func sessions(of identity: String) -> [Presence] { byIdentity[identity] ?? [] }

    /// Presence sessions online, across identities.
    var sessionCount: Int { byIdentity.values.reduce(0) { $0 + $1.count } }

    func add(_ p: Presence) {
        byIdentity[p.identity, default: []].append(p)
        if let stream = p.webStream { byWebStream[stream] = p }
    }

    func remove(_ p: Presence) {
        if let stream = p.webStream, byWebStream[stream] === p { byWebStream[stream] = nil }
        guard var list = byIdentity[p.identity] else { return }
        list.removeAll { $0 === p }
        byIdentity[p.identity] = list.isEmpty ? nil : list
    }

    /// Whether `p` is still one of its identity's live sessions (false once it went offline or was replaced).
    func isOnline(_ p: Presence) -> Bool {
        p.isRemote || p.isSIPStandIn || byIdentity[p.identity]?.contains { $0 === p } ?? false
    }

    /// Whether any session of `identity` takes part in a call (ringing, calling or answered): one call per identity.
    func isInCall(_ identity: String) -> Bool { byIdentity[identity]?.contains { $0.call != nil || $0.remoteCall != nil } ?? false }

    /// Forgets every identity.
    func removeAll() {
        byIdentity.removeAll()
        byWebStream.removeAll()
    }

    /// Tells one device `message`: a client's session gets it; a page gets the event that says the same. Only what
    /// calls and direct texts send to a device has an event; anything else is not sent to a page.
    func send(_ message: SignalMessage, to p: Presence, now: Moment) {
        switch p.link {
        case .signalling(let session): outbox.send(message, to: session, now: now)
        case .web(let stream):
            guard let event = Self.notice(message, for: p, stream: stream, now: now) else { return }
            notify(event)
        case .remote:
            sendRemote?(message, p)
        }
    }

    /// In a cluster: passes a direct text (its fragments) to the node its recipient is online on; false when it is
    /// online nowhere.
    var directTextElsewhere: (([TextFragment], Presence, String) -> Bool)?

    /// A fragment of a direct text from an identity online on another node: to every session of `identity` here (a
    /// client reassembles it; a page gets a text that fits one fragment, as every page's own texts do).
    func deliverRemoteDirectText(_ fragment: TextFragment, from sender: String, to identity: String, now: Moment) {
        for r in sessions(of: identity) {
            switch r.link {
            case .web(let stream):
                guard fragment.count == 1 else { continue }
                notify(RelayEvent(kind: .directText, room: "", identity: sender, detail: String(decoding: fragment.chunk, as: UTF8.self),
                                  unixMilliseconds: now.unixMilliseconds, recipient: stream, attachments: fragment.attachments))
            case .signalling(let session):
                guard fragment.index > 0 || outbox.canTakeText(session.channel, fragments: Int(fragment.count)) else { continue }
                outbox.enqueue(.text(fromMemberID: 0, fromIdentity: sender, direct: true, fragment: fragment), to: session)
                outbox.pump(session, now: now)
            case .remote:
                break
            }
        }
    }

    /// In a cluster: passes what a caller of another node is told to that node (set by the core).
    var sendRemote: ((SignalMessage, Presence) -> Void)?

    /// Queues a private event for a page.
    func notify(_ event: RelayEvent) {
        if notices.count >= Self.noticeCapacity { notices.removeFirst() }
        notices.append(event)
        noticeRevision &+= 1
    }

    /// The private events queued since the last drain, oldest first.
    func drainNotices() -> [RelayEvent] {
        defer { notices.removeAll(keepingCapacity: true) }
        return notices
    }

    /// The event a page gets for what a client would be sent, or nil when a page has no use for it.
    static func notice(_ message: SignalMessage, for p: Presence, stream: UInt64, now: Moment) -> RelayEvent? {
        switch message {
        case .incomingCall(let callID, let fromIdentity, let fromName, _, _):
            return RelayEvent(kind: .incomingCall, room: "", identity: fromIdentity, detail: fromName, unixMilliseconds: now.unixMilliseconds,
                              recipient: stream,
                              call: .init(callID: callID, state: "ringing", reason: "", token: "", callee: p.identity))
        case .callStatus(let status):
            return RelayEvent(kind: .callStatus, room: status.room, identity: p.identity, unixMilliseconds: now.unixMilliseconds,
                              recipient: stream, call: .init(callID: status.callID, state: status.state.label, reason: status.reason, token: status.token))
        default:
            return nil
        }
    }

    /// A direct text between online identities: delivered to every presence session of `identity` as
    /// `text(direct: true)` (a page: a `direct_text` event); delivered when at least one session took it (one that
    /// cannot take it is skipped). Its attachment ids go to every device unchanged.
    ///
    /// With a store (`history.enabled`): the text is kept (delivered, or for later); one to an identity not online is
    /// stored and delivered when it comes online (the store tells the sender `stored`); chats decide first
    /// (`ChatBook`): a first text is a request, later ones wait for the answer, a declined chat's texts fail.
    func deliverDirectText(_ text: String, attachments: [String] = [], from p: Presence, to identity: String, messageID: UInt32, now: Moment) {
        guard !identity.isEmpty else { return status(p, messageID, delivered: false, "a direct text needs a recipient") }
        var request = false
        if history.enabled {
            let (verdict, changed) = chats.decide(from: p.identity, to: identity)
            if let c = changed { history.append(.chat(requester: c.requester, recipient: c.recipient, state: c.state, at: now.unixMilliseconds)) }
            if changed?.state == .accepted { tellChat(changed!, now: now) }
            switch verdict {
            case .refuse(let why): return status(p, messageID, delivered: false, why)
            case .hold:
                history.append(.directText(from: p.identity, to: identity, text: text, at: now.unixMilliseconds, delivered: false, held: true,
                                           senderConnection: p.session?.connectionID ?? 0, senderMessageID: messageID, attachments: attachments))
                held(from: p.identity, to: identity, attachments: attachments, now: now)
                return
            case .request: request = true
            case .deliver: break
            }
        }
        let recipients = sessions(of: identity)
        var reason = recipients.isEmpty ? "\(identity) is not online" : Outbox.laggards([identity])
        // Online on another node of the cluster: passed there (delivered as far as this node can tell).
        if recipients.isEmpty, directTextElsewhere?(TextFragment.split(text, messageID: messageID, attachments: attachments) ?? [], p, identity) == true {
            reason = ""
        }
        if deliver(text, attachments: attachments, from: p.identity, fromID: p.id, to: recipients, messageID: messageID, sentAt: 0,
                   request: request, now: now) { reason = "" }
        guard history.enabled else { return status(p, messageID, delivered: reason.isEmpty, reason) }
        let delivered = reason.isEmpty
        history.append(.directText(from: p.identity, to: identity, text: text, at: now.unixMilliseconds, delivered: delivered, held: false,
                                   senderConnection: p.session?.connectionID ?? 0, senderMessageID: messageID, attachments: attachments))
        if delivered { status(p, messageID, delivered: true, "") }  // else the store says `stored`
        if !delivered { held(from: p.identity, to: identity, attachments: attachments, now: now) }
    }

    /// Tells the webhooks (an operator event, on no stream) that a direct text waits in the store for `identity`.
    private func held(from sender: String, to identity: String, attachments: [String], now: Moment) {
        var event = RelayEvent(kind: .textHeld, room: "", identity: sender, detail: identity,
            unixMilliseconds: now.unixMilliseconds,
                               attachments: attachments)
        event.operatorOnly = true
        notify(event)
    }

    /// A direct text to `recipients` (a Parley client gets `text`, a page a `direct_text` event), its attachment ids
    /// unchanged; whether one took it.
    func deliver(_ text: String, attachments: [String] = [], from identity: String, fromID: UInt32, to recipients: [Presence], messageID: UInt32,
                 sentAt: Int64, request: Bool, now: Moment) -> Bool {
        let fragments = TextFragment.split(text, messageID: messageID, attachments: attachments) ?? []
        var taken = false
        for r in recipients {
            switch r.link {
            case .web(let stream):
                notify(RelayEvent(kind: .directText, room: "", identity: identity, detail: text, unixMilliseconds: sentAt != 0 ? sentAt : now.unixMilliseconds,
                                  recipient: stream, attachments: attachments))
                taken = true
            case .signalling(let session):
                guard outbox.canTakeText(session.channel, fragments: fragments.count) else { continue }
                for (k, f) in fragments.enumerated() {
                    outbox.enqueue(.text(fromMemberID: fromID, fromIdentity: identity, direct: true, fragment: f,
                                         sentAt: k == 0 ? UInt64(max(0, sentAt)) : 0, request: k == 0 && request), to: session)
                }
                outbox.pump(session, now: now)
                taken = true
            case .remote:
                break
            }
        }
        return taken
    }

    /// A text status to the sender's client (a page has none).
    func status(_ p: Presence, _ messageID: UInt32, delivered: Bool, _ reason: String) {
        if let session = p.session { outbox.enqueue(.textStatus(messageID: messageID, delivered: delivered, reason: reason), to: session) }
    }

    /// Tells both sides' clients where a chat stands now.
    func tellChat(_ c: ChatBook.Chat, now: Moment) {
        let state: ChatStatus.State = switch c.state { case .requested: .requested; case .accepted: .accepted; case .declined: .declined }
        for p in sessions(of: c.requester) { if let s = p.session { outbox.enqueue(.chatStatus(ChatStatus(identity: c.recipient, state: state)), to: s); outbox.pump(s, now: now) } }
        for p in sessions(of: c.recipient) { if let s = p.session { outbox.enqueue(.chatStatus(ChatStatus(identity: c.requester, state: state)), to: s); outbox.pump(s, now: now) } }
    }
}

extension CallState {
    /// The state as the API names it.
    public var label: String {
        switch self {
        case .ringing: "ringing"
        case .answered: "answered"
        case .declined: "declined"
        case .noAnswer: "no_answer"
        case .unavailable: "unavailable"
        case .ended: "ended"
        case .failed: "failed"
        }
    }
}
