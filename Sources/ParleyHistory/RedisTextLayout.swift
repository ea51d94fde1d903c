import ParleyCluster
import ParleyWire

/// Texts kept in the cluster's Redis, as `RedisTextArchive` lays them out (pure: keys, values both ways, and the
/// commands that write them; the archive runs them). Every key starts with `parley:texts:`.
///
///     id                       string  INCR: the next id (room and direct texts share it)
///     room:<room>              zset    score id, member a packed room text; the newest `roomCap` of each room
///     text:<id>                hash    a direct text: from to body at state expires_at conn mid node reason attachments
///                                      (state 0 stored, 1 delivered, 2 failed, 3 held); delivered or failed ones live
///                                      `finishedLifetime`
///     waiting:<to>             zset    score id, member id: stored texts waiting for `to`          (claimed by ZREM)
///     held:<n>:<from><to>      zset    score id, member id: texts from→to held until `to` answers  (claimed by ZREM)
///     pending-to:<to>          zset    score expires_at, member id: stored or held texts for `to`  (the per-recipient bound)
///     pending-from:<from>      zset    score expires_at, member id: stored or held texts from `from` (the per-sender bound)
///     delivering               zset    score claim time, member id: claimed, not yet delivered; back to waiting after
///                                      `claimLease` (a node that died between claim and delivery)
///     expiry                   zset    score expires_at, member id: stored and held texts
///     chats                    hash    field <n>:<low><high>, value a packed chat (requester, recipient, state, at)
///     chats-version            string  INCR at every chat change, from a random start (each node's copy of the
///                                      chats follows it)
///
/// `<n>` is the first identity's length in UTF-8 bytes, so a pair of identities is one key whatever they hold. A packed
/// value is its fields, each as `<UTF-8 length>:<bytes>` (`pack`): nothing inside a field needs escaping, and a value
/// read back is refused unless every length fits and every field is within what the relay itself writes.
public enum RedisTextLayout {
    /// What every key starts with.
    public static let prefix = "parley:texts:"
    /// The most texts kept per room (older ones are dropped as new ones come).
    public static let roomCap = 10_000
    /// How long a delivered or failed direct text stays (milliseconds: 7 days). Nothing reads it back yet.
    public static let finishedLifetime: Int64 = 7 * 86_400_000
    /// A claimed text not delivered (nor handed back) within this long waits again (milliseconds).
    public static let claimLease: Int64 = 30_000
    /// Longest identity, room or display name read back (a token, where they come from, is at most 4,096 bytes).
    public static let maxNameBytes = 4_096
    /// Longest reason read back.
    public static let maxReasonBytes = 1_024

    public static let idKey = prefix + "id"
    public static let deliveringKey = prefix + "delivering"
    public static let expiryKey = prefix + "expiry"
    public static let chatsKey = prefix + "chats"
    public static let chatsVersionKey = prefix + "chats-version"
    public static func roomKey(_ room: String) -> String { prefix + "room:" + room }
    public static func textKey(_ id: Int64) -> String { prefix + "text:" + String(id) }
    public static func waitingKey(_ to: String) -> String { prefix + "waiting:" + to }
    public static func heldKey(from: String, to: String) -> String { prefix + "held:" + pair(from, to) }
    public static func pendingToKey(_ to: String) -> String { prefix + "pending-to:" + to }
    public static func pendingFromKey(_ from: String) -> String { prefix + "pending-from:" + from }

    /// Two identities as one string: the first one's length, a colon, both.
    static func pair(_ a: String, _ b: String) -> String { String(a.utf8.count) + ":" + a + b }
    /// The chats' field of the pair `a`, `b` (in either order).
    public static func chatField(_ a: String, _ b: String) -> String { a < b ? pair(a, b) : pair(b, a) }

    // MARK: Packed values

    /// `fields`, each as `<UTF-8 length>:<bytes>`.
    public static func pack(_ fields: [String]) -> String {
        var out = ""
        for f in fields { out += String(f.utf8.count) + ":" + f }
        return out
    }

    /// The fields of a packed value: exactly `limits.count` of them, field k at most `limits[k]` bytes; nil otherwise.
    public static func unpack(_ value: String, limits: [Int]) -> [String]? {
        let bytes = Array(value.utf8)
        var fields: [String] = []
        var i = 0
        for limit in limits {
            var length = 0, digits = 0
            while i < bytes.count, bytes[i] != UInt8(ascii: ":") {
                let d = Int(bytes[i]) - Int(UInt8(ascii: "0"))
                guard (0...9).contains(d), digits < 7 else { return nil }
                length = length * 10 + d
                digits += 1
                i += 1
            }
            guard digits > 0, i < bytes.count, length <= limit, bytes.count - (i + 1) >= length else { return nil }
            i += 1
            guard let field = String(validating: bytes[i..<(i + length)], as: UTF8.self) else { return nil }
            fields.append(field)
            i += length
        }
        return i == bytes.count ? fields : nil
    }

    /// A decimal that fits an `Int64` and is not negative.
    static func number(_ s: String) -> Int64? {
        guard s.utf8.count <= 19, let n = Int64(s), n >= 0 else { return nil }
        return n
    }

    /// Image ids as kept (space-separated); nil unless they may ride on a text.
    static func attachments(_ s: String) -> [String]? {
        let ids = s.split(separator: " ").map(String.init)
        return TextAttachments.areValid(ids) ? ids : nil
    }

    // MARK: Room texts

    /// A room text as its sorted set's member (the room is the key's).
    public static func roomMember(_ m: MessageHistory.RoomMessage) -> String {
        pack([String(m.id), m.identity, m.name, m.text, String(m.at), m.attachments.joined(separator: " ")])
    }

    /// The room text a member of `room`'s set holds; nil when it is not one the relay could have written.
    public static func roomText(member: String, room: String) -> MessageHistory.RoomMessage? {
        guard let f = unpack(member, limits: [19, maxNameBytes, maxNameBytes, Signalling.maxTextBytes, 19,
                                              TextAttachments.maxCount * (TextAttachments.idLength + 1)]),
              let id = number(f[0]), id > 0, let at = number(f[4]), let images = attachments(f[5]) else { return nil }
        return MessageHistory.RoomMessage(id: id, room: room, identity: f[1], name: f[2], text: f[3], at: at, attachments: images)
    }

    /// A room text kept (its id drawn already), in one transaction: the set's oldest beyond `roomCap` dropped.
    public static func addRoomText(_ m: MessageHistory.RoomMessage) -> [[String]] {
        [["MULTI"], ["ZADD", roomKey(m.room), String(m.id), roomMember(m)], ["ZREMRANGEBYRANK", roomKey(m.room), "0", String(-(roomCap + 1))], ["EXEC"]]
    }

    // MARK: Direct texts

    /// A direct text as it is kept: the text, its expiry, and the node its sender was on (a notice to the sender goes
    /// out only from there: the sending session's connection id means nothing on another node).
    public struct DirectText: Equatable, Sendable {
        public var message: MessageHistory.DirectMessage
        public var expiresAt: Int64
        public var node: String
        public init(message: MessageHistory.DirectMessage, expiresAt: Int64, node: String) {
            self.message = message; self.expiresAt = expiresAt; self.node = node
        }
    }

    /// The hash's fields and values, as HSET takes them.
    public static func fields(_ t: DirectText) -> [String] {
        let m = t.message
        return ["from", m.from, "to", m.to, "body", m.text, "at", String(m.at), "state", String(m.state.rawValue), "expires_at", String(t.expiresAt),
                "conn", String(m.senderConnection), "mid", String(m.senderMessageID), "node", t.node, "reason", m.reason,
                "attachments", m.attachments.joined(separator: " ")]
    }

    /// The direct text `id` from HGETALL's flat field/value list; nil when it is missing (gone), incomplete, or holds
    /// a value the relay could not have written.
    public static func directText(id: Int64, hash: [String]) -> DirectText? {
        guard !hash.isEmpty, hash.count % 2 == 0, hash.count <= 64 else { return nil }
        var f: [String: String] = [:]
        for i in stride(from: 0, to: hash.count, by: 2) { f[hash[i]] = hash[i + 1] }
        func text(_ key: String, _ limit: Int) -> String? { f[key].flatMap { $0.utf8.count <= limit ? $0 : nil } }
        guard let from = text("from", maxNameBytes), let to = text("to", maxNameBytes), let body = text("body", Signalling.maxTextBytes),
              let node = text("node", maxNameBytes), let reason = text("reason", maxReasonBytes),
              let at = f["at"].flatMap(number), let expires = f["expires_at"].flatMap(number),
              let state = f["state"].flatMap(number).flatMap({ MessageHistory.DirectState(rawValue: $0) }),
              let connection = f["conn"].flatMap(number).flatMap({ UInt32(exactly: $0) }),
              let messageID = f["mid"].flatMap(number).flatMap({ UInt32(exactly: $0) }),
              let images = f["attachments"].flatMap(attachments) else { return nil }
        return DirectText(message: MessageHistory.DirectMessage(id: id, from: from, to: to, text: body, at: at, state: state, senderConnection: connection,
                                                                senderMessageID: messageID, reason: reason, attachments: images),
                          expiresAt: expires, node: node)
    }

    /// A direct text kept (its id drawn already), in one transaction: delivered (or failed) ones with their lifetime;
    /// stored ones waiting for their recipient, held ones for the recipient's answer, both counted and due to expire.
    public static func addDirectText(_ t: DirectText) -> [[String]] {
        let m = t.message, id = String(m.id)
        var c: [[String]] = [["MULTI"], ["HSET", textKey(m.id)] + fields(t)]
        switch m.state {
        case .delivered, .failed:
            c.append(["PEXPIRE", textKey(m.id), String(finishedLifetime)])
        case .stored, .held:
            c.append(m.state == .stored ? ["ZADD", waitingKey(m.to), id, id] : ["ZADD", heldKey(from: m.from, to: m.to), id, id])
            c.append(["ZADD", pendingToKey(m.to), String(t.expiresAt), id])
            c.append(["ZADD", pendingFromKey(m.from), String(t.expiresAt), id])
            c.append(["ZADD", expiryKey, String(t.expiresAt), id])
        }
        return c + [["EXEC"]]
    }

    /// A claimed text leaves the waiting sets for good (delivered or failed, with `reason` when failed), in one
    /// transaction; it lives `finishedLifetime` more.
    public static func finish(_ m: MessageHistory.DirectMessage, state: MessageHistory.DirectState, reason: String = "", at: Int64) -> [[String]] {
        let id = String(m.id)
        var set = ["HSET", textKey(m.id), "state", String(state.rawValue)]
        set += state == .delivered ? ["delivered_at", String(at)] : ["reason", reason]
        return [["MULTI"], set,
                ["ZREM", deliveringKey, id], ["ZREM", waitingKey(m.to), id], ["ZREM", heldKey(from: m.from, to: m.to), id],
                ["ZREM", pendingToKey(m.to), id], ["ZREM", pendingFromKey(m.from), id], ["ZREM", expiryKey, id],
                ["PEXPIRE", textKey(m.id), String(finishedLifetime)], ["EXEC"]]
    }

    /// The ids a pipeline of `ZREM key id` (one per id, in order) claimed: those whose ZREM removed something. Every
    /// other caller's ZREM of the same id answers 0, so each id is claimed once.
    public static func claimed(_ ids: [Int64], replies: [RedisReply]) -> [Int64] {
        zip(ids, replies).compactMap { id, reply in reply == .integer(1) ? id : nil }
    }

    /// Ids as a sorted set's members list them; a member that is not an id is left out.
    public static func ids(_ reply: RedisReply) -> [Int64] {
        guard case .array(let items) = reply else { return [] }
        return items.compactMap { $0.text.flatMap(number) }.filter { $0 > 0 }
    }

    // MARK: Chats

    /// A chat as the chats hash holds it.
    public static func chatValue(_ c: MessageHistory.Chat, at: Int64) -> String {
        pack([c.requester, c.recipient, String(c.state.rawValue), String(at)])
    }

    /// The chat a field of the chats hash holds; nil when the value is not one the relay could have written for it.
    public static func chat(field: String, value: String) -> MessageHistory.Chat? {
        guard let f = unpack(value, limits: [maxNameBytes, maxNameBytes, 1, 19]), f[0] != f[1], chatField(f[0], f[1]) == field,
              let state = number(f[2]).flatMap({ MessageHistory.ChatState(rawValue: $0) }), number(f[3]) != nil else { return nil }
        return MessageHistory.Chat(requester: f[0], recipient: f[1], state: state)
    }

    /// A chat's new state, and the version every node follows, in one transaction. A version that is missing (a new
    /// Redis, or one that lost its data) starts at `seed`, a random number: counting again from 1 could meet the number a
    /// node last saw, which would then miss the changes.
    public static func setChat(_ c: MessageHistory.Chat, at: Int64, seed: UInt64) -> [[String]] {
        [["MULTI"], ["HSET", chatsKey, chatField(c.requester, c.recipient), chatValue(c, at: at)], ["SET", chatsVersionKey, String(seed), "NX"],
         ["INCR", chatsVersionKey], ["EXEC"]]
    }
}
