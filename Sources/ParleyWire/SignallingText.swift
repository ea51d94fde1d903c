// Texts over signalling: a fragment, a text split into fragments and reassembled from them, why one is refused,
// and where a chat between two identities stands.

/// A text fragment: texts longer than one datagram travel as several, reassembled in order.
public struct TextFragment: Equatable, Sendable {
    /// The sender's id for this text (client-chosen on send; echoed in the status).
    public var messageID: UInt32
    /// Index of this fragment, from 0.
    public var index: UInt8
    /// Number of fragments of the text (1…5).
    public var count: UInt8
    /// This fragment's UTF-8 bytes.
    public var chunk: [UInt8]
    /// The images the text carries (`TextAttachments`: at most 4 ids), on its first fragment only; empty on the others.
    public var attachments: [String]

    /// A fragment.
    public init(messageID: UInt32, index: UInt8, count: UInt8, chunk: [UInt8], attachments: [String] = []) {
        self.messageID = messageID
        self.index = index
        self.count = count
        self.chunk = chunk
        self.attachments = attachments
    }
}

extension TextFragment {
    /// Splits a text into fragments of at most `Signalling.maxTextFragmentBytes`, never inside a UTF-8 sequence; the
    /// attachment ids ride on the first, whose chunk gives up their fields' room (`TextAttachments.fieldSize` each), so
    /// no datagram grows beyond a text-only one's. Returns nil for a text longer than `Signalling.maxTextBytes`, an
    /// empty text without attachments (an image-only text is one empty fragment), or ids that are not
    /// `TextAttachments.areValid`.
    public static func split(_ text: String, messageID: UInt32, attachments: [String] = []) -> [TextFragment]? {
        let bytes = Array(text.utf8)
        guard bytes.count <= Signalling.maxTextBytes, !bytes.isEmpty || !attachments.isEmpty,
              TextAttachments.areValid(attachments) else { return nil }
        var chunks: [[UInt8]] = []
        var start = 0
        var room = Signalling.maxTextFragmentBytes - attachments.count * TextAttachments.fieldSize
        repeat {
            var end = min(start + room, bytes.count)
            while end < bytes.count && end > start && (bytes[end] & 0xC0) == 0x80 { end -= 1 }  // continuation byte
            chunks.append(Array(bytes[start..<end]))
            start = end
            room = Signalling.maxTextFragmentBytes
        } while start < bytes.count
        return chunks.enumerated().map {
            TextFragment(messageID: messageID, index: UInt8($0.offset), count: UInt8(chunks.count), chunk: $0.element,
                         attachments: $0.offset == 0 ? attachments : [])
        }
    }
}

/// Why a text cannot be delivered (told to its sender in a failed `text status`).
public enum TextRefusal: Equatable, Sendable {
    /// Its fragments add up to more than `Signalling.maxTextBytes`.
    case tooLong
    /// Its bytes are not valid UTF-8.
    case notUTF8
    /// It has no bytes and no attachments.
    case empty
    /// A fragment arrived that does not continue the text in progress (another text's, or one skipped ahead).
    case outOfOrder

    /// The reason, for people.
    public var reason: String {
        switch self {
        case .tooLong: "a text must be at most \(Signalling.maxTextBytes) bytes"
        case .notUTF8: "a text must be valid UTF-8"
        case .empty: "a text must not be empty"
        case .outOfOrder: "text fragments arrived out of order"
        }
    }
}

/// What a room text's `text status` says (not delivered) when nobody else was in the room to take it but the relay
/// keeps the room's texts: it is not lost — whoever joins later reads it (`parley join --history`, the web page) — so
/// clients show it as kept, not as a failure. Should the store then fail to keep it, a second status says so.
public enum RoomTextKept {
    /// The status's reason.
    public static let reason = "kept in the room's history; nobody else is here now"
}

/// What a fragment finished: a whole text, or a text that cannot be delivered.
public enum TextAssembly: Equatable, Sendable {
    /// The text with this id is complete, with the attachment ids its first fragment carried (an image-only text is "").
    case text(messageID: UInt32, String, attachments: [String] = [])
    /// The text with this id is given up; nothing of it is kept.
    case refused(messageID: UInt32, TextRefusal)
}

/// Reassembles text fragments that arrive in order (the reliable channel guarantees order). Holds at most
/// `Signalling.maxTextBytes` of one text: a longer one is refused at the fragment that crosses the limit.
public struct TextReassembler: Sendable {
    private var messageID: UInt32 = 0
    private var parts: [UInt8] = []
    private var expected: UInt8 = 0
    private var count: UInt8 = 0
    /// The text in progress's attachment ids (from its first fragment).
    private var attachments: [String] = []
    private var inProgress = false
    /// A text already refused whose remaining fragments are dropped without another refusal.
    private var discarding: UInt32?

    /// An empty reassembler.
    public init() {}

    /// Takes a fragment; returns every text it finished, whole or refused (none while a text is still incomplete;
    /// two when a first fragment cuts short the text in progress and is itself a whole text). Each text is
    /// finished exactly once.
    public mutating func take(_ f: TextFragment) -> [TextAssembly] {
        var finished: [TextAssembly] = []
        if f.index == 0 {
            if inProgress { finished.append(.refused(messageID: messageID, .outOfOrder)) }
            messageID = f.messageID
            count = f.count
            expected = 0
            parts.removeAll(keepingCapacity: true)
            attachments = f.attachments
            inProgress = true
            discarding = nil
        } else if !inProgress || f.messageID != messageID || f.index != expected || f.count != count {
            if inProgress { finished.append(.refused(messageID: messageID, .outOfOrder)) }
            if f.messageID != discarding, !inProgress || f.messageID != messageID {
                finished.append(.refused(messageID: f.messageID, .outOfOrder))
            }
            discarding = f.messageID
            inProgress = false
            parts.removeAll()
            attachments.removeAll()
            return finished
        }
        guard parts.count + f.chunk.count <= Signalling.maxTextBytes else {
            finished.append(.refused(messageID: messageID, .tooLong))
            discarding = messageID
            inProgress = false
            parts.removeAll()
            attachments.removeAll()
            return finished
        }
        parts += f.chunk
        expected += 1
        guard expected == count else { return finished }
        inProgress = false
        defer { parts.removeAll(); attachments.removeAll() }
        if parts.isEmpty && attachments.isEmpty {
            finished.append(.refused(messageID: messageID, .empty))
        } else if let text = String(validating: parts, as: UTF8.self) {
            finished.append(.text(messageID: messageID, text, attachments: attachments))
        } else {
            finished.append(.refused(messageID: messageID, .notUTF8))
        }
        return finished
    }

    /// Adds a fragment; returns the whole text when its last fragment arrives, nil before (or for a text that
    /// cannot be delivered: see `take`, which says why, and gives the text's attachments).
    public mutating func add(_ f: TextFragment) -> String? {
        for case .text(_, let text, _) in take(f) { return text }
        return nil
    }
}

/// Where a chat between two identities stands, as `chatStatus` tells one of them.
public struct ChatStatus: Equatable, Sendable {
    /// The state, as sent.
    public enum State: UInt8, Sendable {
        /// `identity` asked to chat (its first text came as a request); not answered yet.
        case requested = 1
        /// Texts flow both ways.
        case accepted = 2
        /// The chat was declined: `identity`'s texts (or ours to it) fail.
        case declined = 3
    }
    /// The other identity.
    public var identity: String
    /// Where it stands.
    public var state: State
    /// A chat status.
    public init(identity: String, state: State) {
        self.identity = identity
        self.state = state
    }
}
