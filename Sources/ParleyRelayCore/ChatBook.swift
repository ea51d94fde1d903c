/// Where each chat between two identities stands, as the core decides direct texts by it (worker 0; a copy of the
/// store's `chats`, loaded at start and changed by the core, which tells the store). Pure.
///
///     (none) --A writes B--> requested by A --B accepts (or writes A)--> accepted
///                                  |--B declines--> declined: A's texts fail; a text from B asks afresh
///
/// While a chat is requested, A's first text went through as a request (flagged for B's client); later ones are held
/// until B answers.
public final class ChatBook {
    public typealias State = TextLog.ChatState

    /// One chat.
    public struct Chat: Equatable, Sendable {
        public var requester: String, recipient: String, state: State
        public init(requester: String, recipient: String, state: State) {
            self.requester = requester; self.recipient = recipient; self.state = state
        }
    }

    /// What to do with a direct text.
    public enum Verdict: Equatable, Sendable {
        /// Deliver it (or keep it for an absent recipient).
        case deliver
        /// It opens the chat: deliver it flagged as a request.
        case request
        /// The chat waits for the recipient's answer: hold the text until then.
        case hold
        /// The recipient declined: the text fails with this reason.
        case refuse(String)
    }

    private var chats: [String: Chat] = [:]

    /// A book holding `chats`.
    public init(_ chats: [Chat] = []) { for c in chats { self.chats[Self.key(c.requester, c.recipient)] = c } }

    static func key(_ a: String, _ b: String) -> String { a < b ? a + "\u{0}" + b : b + "\u{0}" + a }

    /// The chat between `a` and `b`, if any.
    public func chat(_ a: String, _ b: String) -> Chat? { chats[Self.key(a, b)] }

    /// Whether `a` and `b` have an accepted chat (calls between them ring without the request marker).
    public func accepted(_ a: String, _ b: String) -> Bool { chat(a, b)?.state == .accepted }

    /// Decides a text from `from` to `to`, changing the chat where the text does (a first text requests it; a reply to
    /// a request accepts it; a text to someone whose request one declined asks afresh). Returns the verdict and the
    /// chat's new state when it changed.
    public func decide(from: String, to: String) -> (Verdict, Chat?) {
        let key = Self.key(from, to)
        guard let c = chats[key] else {
            let new = Chat(requester: from, recipient: to, state: .requested)
            chats[key] = new
            return (.request, new)
        }
        switch c.state {
        case .accepted:
            return (.deliver, nil)
        case .requested where c.requester == from:
            return (.hold, nil)
        case .requested:
            // The recipient writes back: that answers the request.
            let new = Chat(requester: c.requester, recipient: c.recipient, state: .accepted)
            chats[key] = new
            return (.deliver, new)
        case .declined where c.requester == from:
            return (.refuse("\(to) declined your chat request"), nil)
        case .declined:
            // The one who declined writes: it asks afresh.
            let new = Chat(requester: from, recipient: to, state: .requested)
            chats[key] = new
            return (.request, new)
        }
    }

    /// `recipient` answers the request of `requester`: the chat's new state, or nil when there was no such request.
    public func answer(requester: String, recipient: String, accept: Bool) -> Chat? {
        let key = Self.key(requester, recipient)
        guard let c = chats[key], c.state == .requested, c.requester == requester else { return nil }
        let new = Chat(requester: requester, recipient: recipient, state: accept ? .accepted : .declined)
        chats[key] = new
        return new
    }

    /// The store's chats (in a cluster, changed by other nodes too) replace what the book knew of each pair. A pair
    /// the book knows and `chats` lacks stays: its chat was opened here and is not in the store yet (a chat is never
    /// removed). A change made here that the store had not written when it read the list is undone until its next
    /// list (a second later), which holds it.
    /// Returns the chats the book knew that changed (only a chat known here can have texts held here).
    @discardableResult
    public func replace(with chats: [Chat]) -> [Chat] {
        var changed: [Chat] = []
        for c in chats {
            let key = Self.key(c.requester, c.recipient)
            if let known = self.chats[key], known != c { changed.append(c) }
            self.chats[key] = c
        }
        return changed
    }

    /// Chats known.
    public var count: Int { chats.count }
}
