import ParleyCluster
import ParleyWire

/// Texts kept in the cluster's Redis, as `RedisTextArchive` lays them out (pure: keys, values both ways, and the
/// commands that write them; the archive runs them). Every key starts with `parley:texts:`.
///
///     id                       string  INCR: the next id (room and direct texts share it)
///     room:<room>              zset    score id, member a packed room text and its MAC; the newest `roomCap` of each room
///     text:<id>                hash    a direct text: from to body at state expires_at conn mid node reason attachments
///                                      mac state_mac (state 0 stored, 1 delivered, 2 failed, 3 held); delivered or failed
///                                      ones live `finishedLifetime`
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
///
/// Anyone who can write to Redis could write a text there, so every text and chat carries a MAC (`ClusterMAC`, the
/// texts' key, which only the cluster's nodes can derive) over what it says and where it is kept: a room text's over
/// its room (the key it lives under) and every field, a direct text's over its id (its key) and its sender,
/// recipient, body, times, sender's session and node and images (`mac`) and, apart, over its id, state and reason
/// (`state_mac`, rewritten with each change of state), a chat's over its field and every value. A value moved to
/// another room, id or pair does not verify; one that does not verify is skipped and logged, never shown.
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

    /// What a room text's MAC covers: its room and every field.
    static func roomTextMACParts(room: String, _ fields: [String]) -> [String] { ["room text", room] + fields }

    /// A room text as its sorted set's member (the room is the key's), its MAC last.
    public static func roomMember(_ m: SQLiteTextArchive.RoomMessage, mac: ClusterMAC) -> String {
        let fields = [String(m.id), m.identity, m.name, m.text, String(m.at), m.attachments.joined(separator: " ")]
        return pack(fields + [mac.mac(roomTextMACParts(room: m.room, fields))])
    }

    /// The room text a member of `room`'s set holds; nil when it is not one a node of this cluster wrote for `room`.
    public static func roomText(member: String, room: String, mac: ClusterMAC) -> SQLiteTextArchive.RoomMessage? {
        guard let f = unpack(member, limits: [19, maxNameBytes, maxNameBytes, Signalling.maxTextBytes, 19,
                                              TextAttachments.maxCount * (TextAttachments.idLength + 1), ClusterMAC.textLength]),
              mac.verifies(f[6], roomTextMACParts(room: room, Array(f[0..<6]))),
              let id = number(f[0]), id > 0, let at = number(f[4]), let images = attachments(f[5]) else { return nil }
        return SQLiteTextArchive.RoomMessage(id: id, room: room, identity: f[1], name: f[2], text: f[3], at: at, attachments: images)
    }

    /// A room text kept (its id drawn already), in one transaction: the set's oldest beyond `roomCap` dropped.
    public static func addRoomText(_ m: SQLiteTextArchive.RoomMessage, mac: ClusterMAC) -> [[String]] {
        [["MULTI"], ["ZADD", roomKey(m.room), String(m.id), roomMember(m, mac: mac)], ["ZREMRANGEBYRANK", roomKey(m.room), "0", String(-(roomCap + 1))],
         ["EXEC"]]
    }

    // MARK: Direct texts

    /// A direct text as it is kept: the text, its expiry, and the node its sender was on (a notice to the sender goes
    /// out only from there: the sending session's connection id means nothing on another node).
    public struct DirectText: Equatable, Sendable {
        public var message: SQLiteTextArchive.DirectMessage
        public var expiresAt: Int64
        public var node: String
        public init(message: SQLiteTextArchive.DirectMessage, expiresAt: Int64, node: String) {
            self.message = message; self.expiresAt = expiresAt; self.node = node
        }
    }

    /// The fields a direct text's `mac` covers, in order: everything but its state and reason.
    static let contentFields = ["from", "to", "body", "at", "expires_at", "conn", "mid", "node", "attachments"]

    /// What a direct text's `mac` covers: its id and its content fields' values (from `f`, "" when missing).
    static func contentMACParts(id: Int64, _ f: [String: String]) -> [String] {
        ["direct text", String(id)] + contentFields.map { f[$0] ?? "" }
    }

    /// What a direct text's `state_mac` covers: its id, state and reason.
    static func stateMACParts(id: Int64, state: SQLiteTextArchive.DirectState, reason: String) -> [String] {
        ["direct text state", String(id), String(state.rawValue), reason]
    }

    /// The hash's fields and values, as HSET takes them, with both MACs.
    public static func fields(_ t: DirectText, mac: ClusterMAC) -> [String] {
        let m = t.message
        let content = ["from": m.from, "to": m.to, "body": m.text, "at": String(m.at), "expires_at": String(t.expiresAt),
                       "conn": String(m.senderConnection), "mid": String(m.senderMessageID), "node": t.node,
                       "attachments": m.attachments.joined(separator: " ")]
        return contentFields.flatMap { [$0, content[$0]!] } + ["mac", mac.mac(contentMACParts(id: m.id, content))]
            + stateFields(id: m.id, state: m.state, reason: m.reason, mac: mac)
    }

    /// A direct text's state, reason and their MAC, as HSET takes them.
    static func stateFields(id: Int64, state: SQLiteTextArchive.DirectState, reason: String, mac: ClusterMAC) -> [String] {
        ["state", String(state.rawValue), "reason", reason, "state_mac", mac.mac(stateMACParts(id: id, state: state, reason: reason))]
    }

    /// The direct text `id` from HGETALL's flat field/value list; nil when it is missing (gone), incomplete, holds a
    /// value the relay could not have written, or either MAC does not verify (not written by a node of this cluster,
    /// or moved from another id).
    public static func directText(id: Int64, hash: [String], mac: ClusterMAC) -> DirectText? {
        guard !hash.isEmpty, hash.count % 2 == 0, hash.count <= 64 else { return nil }
        var f: [String: String] = [:]
        for i in stride(from: 0, to: hash.count, by: 2) { f[hash[i]] = hash[i + 1] }
        guard contentFields.allSatisfy({ f[$0] != nil }), let contentMAC = f["mac"], mac.verifies(contentMAC, contentMACParts(id: id, f)) else {
            return nil
        }
        func text(_ key: String, _ limit: Int) -> String? { f[key].flatMap { $0.utf8.count <= limit ? $0 : nil } }
        guard let from = text("from", maxNameBytes), let to = text("to", maxNameBytes), let body = text("body", Signalling.maxTextBytes),
              let node = text("node", maxNameBytes), let reason = text("reason", maxReasonBytes),
              let at = f["at"].flatMap(number), let expires = f["expires_at"].flatMap(number),
              let state = f["state"].flatMap(number).flatMap({ SQLiteTextArchive.DirectState(rawValue: $0) }),
              let connection = f["conn"].flatMap(number).flatMap({ UInt32(exactly: $0) }),
              let messageID = f["mid"].flatMap(number).flatMap({ UInt32(exactly: $0) }),
              let images = f["attachments"].flatMap(attachments),
              let stateMAC = f["state_mac"], mac.verifies(stateMAC, stateMACParts(id: id, state: state, reason: reason)) else { return nil }
        return DirectText(message: SQLiteTextArchive.DirectMessage(id: id, from: from, to: to, text: body, at: at, state: state, senderConnection: connection,
                                                                senderMessageID: messageID, reason: reason, attachments: images),
                          expiresAt: expires, node: node)
    }

    /// A direct text kept (its id drawn already), in one transaction: delivered (or failed) ones with their lifetime;
    /// stored ones waiting for their recipient, held ones for the recipient's answer, both counted and due to expire.
    public static func addDirectText(_ t: DirectText, mac: ClusterMAC) -> [[String]] {
        let m = t.message, id = String(m.id)
        var c: [[String]] = [["MULTI"], ["HSET", textKey(m.id)] + fields(t, mac: mac)]
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
    public static func finish(_ m: SQLiteTextArchive.DirectMessage, state: SQLiteTextArchive.DirectState, reason: String = "", at: Int64,
                              mac: ClusterMAC) -> [[String]] {
        let id = String(m.id)
        var set = ["HSET", textKey(m.id)] + stateFields(id: m.id, state: state, reason: state == .delivered ? m.reason : reason, mac: mac)
        if state == .delivered { set += ["delivered_at", String(at)] }
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

    /// A chat as the chats hash holds it, its MAC (over its field and values) last.
    public static func chatValue(_ c: SQLiteTextArchive.Chat, at: Int64, mac: ClusterMAC) -> String {
        let fields = [c.requester, c.recipient, String(c.state.rawValue), String(at)]
        return pack(fields + [mac.mac(["chat", chatField(c.requester, c.recipient)] + fields)])
    }

    /// The chat a field of the chats hash holds; nil when the value is not one a node of this cluster wrote for it.
    public static func chat(field: String, value: String, mac: ClusterMAC) -> SQLiteTextArchive.Chat? {
        guard let f = unpack(value, limits: [maxNameBytes, maxNameBytes, 1, 19, ClusterMAC.textLength]),
              mac.verifies(f[4], ["chat", field] + f[0..<4]), f[0] != f[1], chatField(f[0], f[1]) == field,
              let state = number(f[2]).flatMap({ SQLiteTextArchive.ChatState(rawValue: $0) }), number(f[3]) != nil else { return nil }
        return SQLiteTextArchive.Chat(requester: f[0], recipient: f[1], state: state)
    }

    /// A chat's new state, and the version every node follows, in one transaction. A version that is missing (a new
    /// Redis, or one that lost its data) starts at `seed`, a random number: counting again from 1 could meet the number a
    /// node last saw, which would then miss the changes.
    public static func setChat(_ c: SQLiteTextArchive.Chat, at: Int64, seed: UInt64, mac: ClusterMAC) -> [[String]] {
        [["MULTI"], ["HSET", chatsKey, chatField(c.requester, c.recipient), chatValue(c, at: at, mac: mac)], ["SET", chatsVersionKey, String(seed), "NX"],
         ["INCR", chatsVersionKey], ["EXEC"]]
    }
}
