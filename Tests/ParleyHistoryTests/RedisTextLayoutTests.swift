import ParleyCluster
import ParleyHistory
import Testing

/// The Redis layout's pure parts: packed values both ways (and every malformed one refused), a direct text's hash,
/// chats, the claim rule, and the commands that write.
@Suite("Texts in Redis: keys, packed values, hashes, claims")
struct RedisTextLayoutTests {
    static let image = "fUNQLHuQBWMBiIYr16lWVg"
    /// The texts' MAC of a test cluster, and of another cluster (another secret).
    static let mac = ClusterMAC(root: Array(repeating: 7, count: 32), purpose: .texts)
    static let otherMAC = ClusterMAC(root: Array(repeating: 8, count: 32), purpose: .texts)

    @Test("a packed value is each field's UTF-8 length, a colon and the field; it unpacks to the same fields")
    func packRoundTrip() {
        #expect(RedisTextLayout.pack(["ab", "", "ünï", "a:b"]) == "2:ab0:5:ünï3:a:b")
        let fields = ["7", "alice", "Alice Ö", "hello: 3:xyz", "1700000000000", ""]
        #expect(RedisTextLayout.unpack(RedisTextLayout.pack(fields), limits: Array(repeating: 100, count: 6)) == fields)
    }

    @Test("malformed packed values are refused", arguments: [
        ("", 1),                  // no field at all
        ("2:ab", 2),              // a field missing
        ("2:ab1:c", 1),           // a field too many
        ("3:ab", 1),              // the length runs past the end
        ("2ab", 1),               // no colon
        (":ab", 1),               // no digits
        ("-1:a", 1),              // not a digit
        ("99999999:a", 1),        // more digits than any field the relay writes
        ("11:hello world", 1),    // longer than the field's limit (10 below)
        ("2:\u{FFFD}", 1),        // the length in bytes does not match (a replaced invalid byte is 3 bytes)
    ])
    func unpackRefuses(value: String, fields: Int) {
        #expect(RedisTextLayout.unpack(value, limits: Array(repeating: 10, count: fields)) == nil)
    }

    @Test("a room text survives its set's member; one with a bad id, time, image id or an oversized text is refused")
    func roomText() {
        let m = SQLiteTextArchive.RoomMessage(id: 42, room: "a:b room", identity: "ann", name: "Ann", text: "hi ünï", at: 1_800_000_000_000,
                                           attachments: [Self.image])
        #expect(RedisTextLayout.roomText(member: RedisTextLayout.roomMember(m, mac: Self.mac), room: "a:b room", mac: Self.mac) == m)
        let plain = SQLiteTextArchive.RoomMessage(id: 1, room: "r", identity: "backend", name: "", text: "x", at: 0)
        #expect(RedisTextLayout.roomText(member: RedisTextLayout.roomMember(plain, mac: Self.mac), room: "r", mac: Self.mac) == plain)
        for bad in [["0", "ann", "", "x", "1", ""], ["-4", "ann", "", "x", "1", ""], ["x", "ann", "", "x", "1", ""],
                    ["5", "ann", "", "x", "soon", ""], ["5", "ann", "", "x", "1", "not-an-image-id"],
                    ["5", "ann", "", String(repeating: "y", count: 4097), "1", ""],
                    ["5", "ann", "", "x", "1", Array(repeating: Self.image, count: 5).joined(separator: " ")]] {
            let signed = RedisTextLayout.pack(bad + [Self.mac.mac(["room text", "r"] + bad)])
            #expect(RedisTextLayout.roomText(member: signed, room: "r", mac: Self.mac) == nil, "\(bad)")
        }
    }

    static let direct = RedisTextLayout.DirectText(
        message: .init(id: 9, from: "alice", to: "bob", text: "are you there?", at: 1_000, state: .stored, senderConnection: 0xDEAD_BEEF,
                       senderMessageID: 7, reason: "", attachments: [image]),
        expiresAt: 2_000, node: "node-a")

    @Test("a direct text survives HSET's fields and HGETALL's answer")
    func directText() {
        #expect(RedisTextLayout.directText(id: 9, hash: RedisTextLayout.fields(Self.direct, mac: Self.mac), mac: Self.mac) == Self.direct)
        #expect(RedisTextLayout.directText(id: 9, hash: [], mac: Self.mac) == nil)  // gone
    }

    @Test("a direct text with a field missing or a value the relay never writes is refused", arguments: [
        ("state", "4"), ("state", "-1"), ("conn", "4294967296"), ("mid", "x"), ("at", "99999999999999999999"),
        ("attachments", "nope"), ("body", "4097 bytes"), ("reason", "1025 bytes"),
    ])
    func directTextRefused(field: String, value: String) {
        var hash = RedisTextLayout.fields(Self.direct, mac: Self.mac)
        let k = hash.firstIndex(of: field)!
        hash[k + 1] = value.hasSuffix(" bytes") ? String(repeating: "b", count: Int(value.split(separator: " ")[0])!) : value
        #expect(RedisTextLayout.directText(id: 9, hash: Self.signed(hash, id: 9), mac: Self.mac) == nil)  // MACs valid: the value refuses it
        hash.removeSubrange(k...(k + 1))
        #expect(RedisTextLayout.directText(id: 9, hash: Self.signed(hash, id: 9), mac: Self.mac) == nil)
    }

    /// `hash` with both MACs made again over what it now holds (so that only the value checks can refuse it).
    static func signed(_ hash: [String], id: Int64) -> [String] {
        var f: [String: String] = [:]
        for i in stride(from: 0, to: hash.count - 1, by: 2) { f[hash[i]] = hash[i + 1] }
        let content = ["from", "to", "body", "at", "expires_at", "conn", "mid", "node", "attachments"].map { f[$0] ?? "" }
        f["mac"] = mac.mac(["direct text", String(id)] + content)
        f["state_mac"] = mac.mac(["direct text state", String(id), f["state"] ?? "", f["reason"] ?? ""])
        return f.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }
    }

    // MARK: Issue 33: a Redis writer forges or moves texts

    @Test("a room text not written by a node of this cluster (no MAC, another cluster's, a changed field) or moved to another room is refused")
    func roomTextForged() {
        let m = SQLiteTextArchive.RoomMessage(id: 42, room: "board", identity: "alice", name: "Alice", text: "lunch?", at: 1_800_000_000_000)
        let genuine = RedisTextLayout.roomMember(m, mac: Self.mac)
        #expect(RedisTextLayout.roomText(member: genuine, room: "board", mac: Self.mac) == m)
        // What a Redis writer could write: the relay's own packing, without a MAC, or with a made-up one.
        let fields = ["999999", "ceo", "CEO", "wire the money", "1800000000000", ""]
        #expect(RedisTextLayout.roomText(member: RedisTextLayout.pack(fields), room: "board", mac: Self.mac) == nil)
        #expect(RedisTextLayout.roomText(member: RedisTextLayout.pack(fields + [String(repeating: "A", count: 43)]), room: "board",
                                         mac: Self.mac) == nil)
        var ceo = m
        ceo.identity = "ceo"
        #expect(RedisTextLayout.roomText(member: RedisTextLayout.roomMember(ceo, mac: Self.otherMAC), room: "board", mac: Self.mac) == nil)
        // A genuine text with one field changed, or copied into another room's set.
        #expect(RedisTextLayout.roomText(member: genuine.replacingOccurrences(of: "lunch?", with: "fired!"), room: "board", mac: Self.mac) == nil)
        #expect(RedisTextLayout.roomText(member: genuine, room: "other", mac: Self.mac) == nil)
    }

    @Test("a direct text not written by a node of this cluster, changed, moved to another id, or put in another state is refused")
    func directTextForged() {
        let genuine = RedisTextLayout.fields(Self.direct, mac: Self.mac)
        #expect(RedisTextLayout.directText(id: 9, hash: genuine, mac: Self.mac) == Self.direct)
        // The probe's forgery: every field the relay writes, no MAC.
        let forged = ["from", "ceo", "to", "bob", "body", "forged direct text", "at", "1", "state", "0", "expires_at", "5", "conn", "0",
                      "mid", "0", "node", "evil", "reason", "", "attachments", ""]
        #expect(RedisTextLayout.directText(id: 888_888, hash: forged, mac: Self.mac) == nil)
        #expect(RedisTextLayout.directText(id: 9, hash: RedisTextLayout.fields(Self.direct, mac: Self.otherMAC), mac: Self.mac) == nil)
        func with(_ field: String, _ value: String) -> [String] {
            var h = genuine
            h[h.firstIndex(of: field)! + 1] = value
            return h
        }
        #expect(RedisTextLayout.directText(id: 9, hash: with("from", "ceo"), mac: Self.mac) == nil)
        #expect(RedisTextLayout.directText(id: 9, hash: with("to", "mallory"), mac: Self.mac) == nil)
        #expect(RedisTextLayout.directText(id: 9, hash: with("body", "send the keys"), mac: Self.mac) == nil)
        #expect(RedisTextLayout.directText(id: 9, hash: with("state", "3"), mac: Self.mac) == nil)       // held → stored and back
        #expect(RedisTextLayout.directText(id: 9, hash: with("reason", "blocked"), mac: Self.mac) == nil)
        #expect(RedisTextLayout.directText(id: 10, hash: genuine, mac: Self.mac) == nil)                  // copied to another id
        // A node's own change of state carries its own MAC.
        let finished = RedisTextLayout.finish(Self.direct.message, state: .failed, reason: "expired", at: 5, mac: Self.mac)[1]
        var after = genuine
        for k in stride(from: 2, to: finished.count - 1, by: 2) { after[after.firstIndex(of: finished[k])! + 1] = finished[k + 1] }
        #expect(RedisTextLayout.directText(id: 9, hash: after, mac: Self.mac)?.message.state == .failed)
    }

    @Test("a chat not written by a node of this cluster is refused (an accept that would open the spam brake, a decline that would close it)")
    func chatForged() {
        let field = RedisTextLayout.chatField("alice", "bob")
        for state in [SQLiteTextArchive.ChatState.accepted, .declined] {
            let c = SQLiteTextArchive.Chat(requester: "bob", recipient: "alice", state: state)
            #expect(RedisTextLayout.chat(field: field, value: RedisTextLayout.pack(["bob", "alice", String(state.rawValue), "1"]), mac: Self.mac) == nil)
            #expect(RedisTextLayout.chat(field: field, value: RedisTextLayout.chatValue(c, at: 1, mac: Self.otherMAC), mac: Self.mac) == nil)
            #expect(RedisTextLayout.chat(field: field, value: RedisTextLayout.chatValue(c, at: 1, mac: Self.mac), mac: Self.mac) == c)
        }
    }

    @Test("a pair of identities is one key whatever they hold; a chat is read back only under its own pair")
    func chats() {
        #expect(RedisTextLayout.heldKey(from: "a:b", to: "c") != RedisTextLayout.heldKey(from: "a", to: ":bc"))
        #expect(RedisTextLayout.heldKey(from: "al", to: "ice") == "parley:texts:held:2:alice")
        #expect(RedisTextLayout.chatField("bob", "alice") == RedisTextLayout.chatField("alice", "bob"))
        let c = SQLiteTextArchive.Chat(requester: "bob", recipient: "alice", state: .declined)
        let value = RedisTextLayout.chatValue(c, at: 5, mac: Self.mac)
        #expect(RedisTextLayout.chat(field: RedisTextLayout.chatField("alice", "bob"), value: value, mac: Self.mac) == c)
        #expect(RedisTextLayout.chat(field: RedisTextLayout.chatField("alice", "carol"), value: value, mac: Self.mac) == nil)  // another pair's field
        #expect(RedisTextLayout.chat(field: RedisTextLayout.chatField("bob", "bob"),
                                     value: Self.signedChat(["bob", "bob", "0", "1"]), mac: Self.mac) == nil)  // with oneself
        #expect(RedisTextLayout.chat(field: RedisTextLayout.chatField("alice", "bob"),
                                     value: Self.signedChat(["bob", "alice", "3", "1"]), mac: Self.mac) == nil)  // no such state
        #expect(RedisTextLayout.setChat(c, at: 5, seed: 77, mac: Self.mac) == [["MULTI"], ["HSET", RedisTextLayout.chatsKey, "5:alicebob", value],
                                                                ["SET", RedisTextLayout.chatsVersionKey, "77", "NX"],
                                                                ["INCR", RedisTextLayout.chatsVersionKey], ["EXEC"]])
    }

    @Test("a claim is the ZREM that removed the id: 1 claims it, 0 (another node was first) or anything else does not")
    func claims() {
        #expect(RedisTextLayout.claimed([1, 2, 3, 4], replies: [.integer(1), .integer(0), .error("ERR"), .integer(1)]) == [1, 4])
        #expect(RedisTextLayout.claimed([1, 2], replies: [.integer(1)]) == [1])  // a reply missing: not claimed
        #expect(RedisTextLayout.ids(.array([.string("3"), .string("x"), .string("-2"), .string("0"), .string("12")])) == [3, 12])
        #expect(RedisTextLayout.ids(.null).isEmpty)
    }

    @Test("a stored text waits, is counted for both sides and expires; a held one waits in its pair's set; a delivered one only lives a while")
    func writes() {
        let stored = RedisTextLayout.addDirectText(Self.direct, mac: Self.mac)
        #expect(stored.first == ["MULTI"] && stored.last == ["EXEC"])
        #expect(stored.contains(["ZADD", "parley:texts:waiting:bob", "9", "9"]))
        #expect(stored.contains(["ZADD", "parley:texts:pending-to:bob", "2000", "9"]))
        #expect(stored.contains(["ZADD", "parley:texts:pending-from:alice", "2000", "9"]))
        #expect(stored.contains(["ZADD", "parley:texts:expiry", "2000", "9"]))
        var held = Self.direct
        held.message.state = .held
        #expect(RedisTextLayout.addDirectText(held, mac: Self.mac).contains(["ZADD", "parley:texts:held:5:alicebob", "9", "9"]))
        #expect(!RedisTextLayout.addDirectText(held, mac: Self.mac).contains { $0.first == "ZADD" && $0[1] == "parley:texts:waiting:bob" })
        var delivered = Self.direct
        delivered.message.state = .delivered
        #expect(RedisTextLayout.addDirectText(delivered, mac: Self.mac) == [["MULTI"], ["HSET", "parley:texts:text:9"] + RedisTextLayout.fields(delivered, mac: Self.mac),
                                                             ["PEXPIRE", "parley:texts:text:9", String(RedisTextLayout.finishedLifetime)], ["EXEC"]])
        let room = RedisTextLayout.addRoomText(.init(id: 3, room: "lobby", identity: "a", name: "", text: "t", at: 1), mac: Self.mac)
        #expect(room[2] == ["ZREMRANGEBYRANK", "parley:texts:room:lobby", "0", String(-(RedisTextLayout.roomCap + 1))])
        let finish = RedisTextLayout.finish(Self.direct.message, state: .failed, reason: "expired", at: 5, mac: Self.mac)
        #expect(Array(finish[1].prefix(6)) == ["HSET", "parley:texts:text:9", "state", "2", "reason", "expired"])
        #expect(finish[1][6] == "state_mac" && Self.mac.verifies(finish[1][7], ["direct text state", "9", "2", "expired"]))
        #expect(finish.contains(["ZREM", RedisTextLayout.deliveringKey, "9"]) && finish.contains(["ZREM", "parley:texts:pending-from:alice", "9"]))
    }

    /// A chat value with a valid MAC over `fields` (so that only the value check can refuse it).
    static func signedChat(_ fields: [String]) -> String {
        RedisTextLayout.pack(fields + [mac.mac(["chat", RedisTextLayout.chatField(fields[0], fields[1])] + fields)])
    }
}
