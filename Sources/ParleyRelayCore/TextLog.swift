/// What the core hands the message store (`ParleyRelay`'s `TextStore`, SQLite on a thread of its own), in order:
/// room texts and direct texts to keep, identities to deliver waiting texts to, deliveries, chats changing state.
/// The worker moves the records out after each batch; the store answers through the worker's inbox
/// (`RelayCore+StoredTexts.swift`). The core never waits for the disk: a sender learns its text was `stored` when the
/// store says so. Off (`enabled` false) when the relay keeps no history: then a text to someone offline fails as before.
public final class TextLog {
    /// Where a chat between two identities stands (the store keeps it; the core holds a copy to decide without waiting).
    public enum ChatState: Int, Sendable, Equatable {
        /// The requester wrote first; the recipient has not answered. The first text went through as a request,
        /// later ones wait.
        case requested
        /// Texts flow both ways.
        case accepted
        /// The recipient declined: the requester's texts fail.
        case declined
    }

    /// Who waits to hear that a room text was not kept: the sending session (its connection id, its id for the text,
    /// and whether the text reached anyone: the status repeats it), and an HTTP request waiting on the store
    /// (`request`; 0: none).
    public struct KeepReceipt: Equatable, Sendable {
        /// The sender's session (0: none, e.g. the backend's text).
        public var connection: UInt32
        /// The sender's id for the text.
        public var messageID: UInt32
        /// Whether the text reached anyone when it was sent.
        public var delivered: Bool
        /// The HTTP request waiting (`TextStore.expectKeeping`), 0 for none.
        public var request: UInt64

        /// A receipt.
        public init(connection: UInt32 = 0, messageID: UInt32 = 0, delivered: Bool = true, request: UInt64 = 0) {
            self.connection = connection
            self.messageID = messageID
            self.delivered = delivered
            self.request = request
        }
    }

    /// One record.
    public enum Record: Equatable, Sendable {
        /// A text to a whole room (`at`: Unix ms), with the ids of the images it carries; `receipt`: who is told when the
        /// store could not keep it.
        case roomText(room: String, identity: String, name: String, text: String, at: Int64, attachments: [String] = [],
                      receipt: KeepReceipt? = nil)
        /// A direct text: `delivered` at once, or to be kept until its recipient comes online (`held`: until the
        /// recipient accepts the chat). The store tells the sender (its session and its id for the text) it is stored.
        /// `attachments`: the ids of the images it carries, kept and delivered with it.
        case directText(from: String, to: String, text: String, at: Int64, delivered: Bool, held: Bool, senderConnection: UInt32, senderMessageID: UInt32,
                        attachments: [String] = [])
        /// `identity` is online: deliver what waits for it (from `from` only, when given).
        case deliverWaiting(identity: String, from: String?)
        /// Texts the core delivered from the store.
        case delivered(ids: [Int64], at: Int64)
        /// Texts the store handed over (`deliverWaiting`) that no device took: they wait again (a store several nodes
        /// share had claimed them for this one).
        case notDelivered(ids: [Int64])
        /// A chat's new state.
        case chat(requester: String, recipient: String, state: ChatState, at: Int64)
        /// The recipient accepted: texts held for it from `from` wait for it like any other now.
        case release(from: String, to: String)
        /// The recipient declined: texts held for it from `from` fail with `reason`.
        case failHeld(from: String, to: String, reason: String)
    }

    /// Whether a store takes the records (the relay has a state directory and the database opened).
    public var enabled = false
    /// Records not yet taken.
    public private(set) var records: [Record] = []

    /// An empty log.
    public init() {}

    /// Appends a record (nothing when no store takes them).
    func append(_ record: Record) {
        guard enabled else { return }
        records.append(record)
    }

    /// Takes the records, oldest first.
    public func take() -> [Record] {
        defer { records.removeAll(keepingCapacity: true) }
        return records
    }

    /// Whether records wait.
    public var isEmpty: Bool { records.isEmpty }
}
