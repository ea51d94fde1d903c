// The TLV layer of signalling version 1: field tags, the writer into a caller's buffer, the reader of one
// datagram's fields, and a member entry's packed form (a field's value).

/// Field tags of signalling version 1 (the `tag` byte of each TLV).
enum SignalTag: UInt8 {
    case token = 1, room = 2, cookie = 3, nonce = 4, flags = 5, keyShare = 6, memberID = 7, ssrc = 8, port = 9
    case sessionSecret = 10, mode = 11, identity = 12, memberCount = 13, keepalive = 14, timeout = 15
    case timestamp = 16, proof = 17, code = 18, reason = 19, pageIndex = 20, pageCount = 21, member = 22
    case eventKind = 23, speaker = 24, to = 25, messageID = 26, fragmentIndex = 27, fragmentCount = 28
    case chunk = 29, direct = 30, delivered = 31, muted = 32
    /// Presence and calls (`SignallingCallCodec.swift`).
    case callID = 33, accept = 34, name = 35, callState = 36
    /// Join: the member tells who speaks from the forwarded media itself (no `speakers` messages in forward rooms).
    case speakersFromMedia = 37
    /// Path validation: the relay's challenge to a new address.
    case challenge = 38
    /// Welcome: the room's downstream SRTP key and salt (encrypted sessions in forward rooms).
    case roomMediaKey = 39
    /// Calls: an end-to-end key share (32 bytes, opaque to the relay). Numbered apart from 39… (taken by the
    /// encrypted-signalling work) so the two can merge.
    case callKeyShare = 48
    /// Member deltas: one departure (member id, then the reason's UTF-8), and the audience count.
    case departure = 49, audienceCount = 50
    /// Welcome: one forwarded stream's SRTP position: SSRC (4), 48-bit packet index (6).
    case streamIndex = 51
    /// Welcome, before issue 33: another node of the cluster as an address alone (HOST:PORT). No longer written nor
    /// read: a member goes nowhere without the node's key (`alternateNode`).
    case alternate = 52
    /// Recording: whether the room is being recorded (u8), and the recording's id (UTF-8).
    case recording = 53, recordingID = 54
    /// Texts: one image the text carries (`TextAttachments`: 22 ASCII characters), on its first fragment, ≤ 4 times.
    case attachment = 55
    /// Texts: when a stored text was sent (u64, Unix ms), and that it opens a chat the recipient has not accepted (u8).
    case sentAt = 56, chatRequest = 57
    /// Chats: where one stands (u8, `ChatStatus.State`).
    case chatState = 58
    /// Welcome: another node of the cluster as a `NodePointer` ("HOST:PORT KEY"), where the member rejoins if this one
    /// is lost. A tag of its own: clients that predate it skip it (and fail over nowhere) rather than refuse the welcome.
    case alternateNode = 59
    /// Room keys: which of the room's keys (u32).
    case keyID = 60
    /// Join: the member takes RFC 2198 RED (`RedundantAudio`, payload type 63) and may send it (u8).
    case redundancy = 61
}

/// Writes big-endian integers and TLVs into a caller-owned buffer.
struct SignalWriter {
    let buffer: UnsafeMutableRawBufferPointer
    var offset = 0
    var overflow = false

    init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    mutating func u8(_ v: UInt8) {
        guard offset + 1 <= buffer.count else { overflow = true; return }
        buffer[offset] = v
        offset += 1
    }
    mutating func u16(_ v: UInt16) { u8(UInt8(v >> 8)); u8(UInt8(truncatingIfNeeded: v)) }
    mutating func u32(_ v: UInt32) { u16(UInt16(v >> 16)); u16(UInt16(truncatingIfNeeded: v)) }
    mutating func u64(_ v: UInt64) { u32(UInt32(v >> 32)); u32(UInt32(truncatingIfNeeded: v)) }
    mutating func bytes<C: Collection>(_ c: C) where C.Element == UInt8 {
        guard offset + c.count <= buffer.count else { overflow = true; return }
        for b in c { buffer[offset] = b; offset += 1 }
    }

    mutating func field(_ tag: SignalTag, _ value: [UInt8]) { u8(tag.rawValue); u16(UInt16(truncatingIfNeeded: value.count)); bytes(value) }
    mutating func field(_ tag: SignalTag, string: String) { field(tag, Array(string.utf8)) }
    mutating func field(_ tag: SignalTag, u8 v: UInt8) { u8(tag.rawValue); u16(1); u8(v) }
    mutating func field(_ tag: SignalTag, u16 v: UInt16) { u8(tag.rawValue); u16(2); u16(v) }
    mutating func field(_ tag: SignalTag, u32 v: UInt32) { u8(tag.rawValue); u16(4); u32(v) }
    mutating func field(_ tag: SignalTag, u64 v: UInt64) { u8(tag.rawValue); u16(8); u64(v) }
}

/// Reads the TLV fields of one signalling datagram.
struct SignalFields {
    let bytes: UnsafeRawBufferPointer
    /// (tag, value range) in datagram order.
    var entries: [(UInt8, Range<Int>)] = []

    init(_ bytes: UnsafeRawBufferPointer, from start: Int) throws(WireError) {
        self.bytes = bytes
        var i = start
        while i < bytes.count {
            guard i + 3 <= bytes.count else { throw .truncated }
            let tag = bytes[i]
            let length = Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            guard i + 3 + length <= bytes.count else { throw .truncated }
            entries.append((tag, (i + 3)..<(i + 3 + length)))
            i += 3 + length
        }
    }

    func range(_ tag: SignalTag) -> Range<Int>? {
        for (t, r) in entries where t == tag.rawValue { return r }
        return nil
    }
    func all(_ tag: SignalTag) -> [Range<Int>] { entries.filter { $0.0 == tag.rawValue }.map(\.1) }

    func data(_ tag: SignalTag, maxCount: Int = 4096) throws(WireError) -> [UInt8] {
        guard let r = range(tag) else { throw .badField }
        guard r.count <= maxCount else { throw .badLength }
        return Array(bytes[r])
    }
    func optionalData(_ tag: SignalTag, maxCount: Int = 4096) throws(WireError) -> [UInt8] {
        guard range(tag) != nil else { return [] }
        return try data(tag, maxCount: maxCount)
    }
    func string(_ tag: SignalTag, maxCount: Int = 4096) throws(WireError) -> String {
        let raw = try data(tag, maxCount: maxCount)
        return try Self.decodeUTF8(raw)
    }
    func optionalString(_ tag: SignalTag, maxCount: Int = 4096) throws(WireError) -> String {
        guard range(tag) != nil else { return "" }
        return try string(tag, maxCount: maxCount)
    }
    static func decodeUTF8(_ raw: [UInt8]) throws(WireError) -> String {
        guard let s = String(validating: raw, as: UTF8.self) else { throw .badField }
        return s
    }
    func integer(_ tag: SignalTag, size: Int) throws(WireError) -> UInt64 {
        guard let r = range(tag) else { throw .badField }
        guard r.count == size else { throw .badLength }
        var v: UInt64 = 0
        for i in r { v = v << 8 | UInt64(bytes[i]) }
        return v
    }
    func u8(_ tag: SignalTag) throws(WireError) -> UInt8 { UInt8(try integer(tag, size: 1)) }
    func u16(_ tag: SignalTag) throws(WireError) -> UInt16 { UInt16(try integer(tag, size: 2)) }
    func u32(_ tag: SignalTag) throws(WireError) -> UInt32 { UInt32(try integer(tag, size: 4)) }
    func u64(_ tag: SignalTag) throws(WireError) -> UInt64 { try integer(tag, size: 8) }
    func bool(_ tag: SignalTag) throws(WireError) -> Bool {
        guard range(tag) != nil else { return false }
        return try u8(tag) != 0
    }
}

extension MemberEntry {
    /// Bytes of its encoded form (see `encoded`).
    public var encodedSize: Int { 11 + min(255, identity.utf8.count) + min(255, name.utf8.count) }

    /// memberID (4) ssrc (4) flags (1) identity length (1) identity, name length (1) name.
    var encoded: [UInt8] {
        let id = Array(identity.utf8.prefix(255)), nm = Array(name.utf8.prefix(255))
        var out: [UInt8] = []
        out.reserveCapacity(11 + id.count + nm.count)
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: memberID >> UInt32(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: ssrc >> UInt32(shift))) }
        out.append(flags.rawValue)
        out.append(UInt8(id.count)); out += id
        out.append(UInt8(nm.count)); out += nm
        return out
    }

    init(decoding b: UnsafeRawBufferPointer, _ r: Range<Int>) throws(WireError) {
        guard r.count >= 11 else { throw .truncated }
        var i = r.lowerBound
        func u32() -> UInt32 { defer { i += 4 }; return UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3]) }
        let memberID = u32(), ssrc = u32()
        let flags = MemberFlags(rawValue: b[i]); i += 1
        let idLen = Int(b[i]); i += 1
        guard i + idLen + 1 <= r.upperBound else { throw .truncated }
        let identity = try SignalFields.decodeUTF8(Array(b[i..<(i + idLen)])); i += idLen
        let nameLen = Int(b[i]); i += 1
        guard i + nameLen == r.upperBound else { throw .badLength }
        let name = try SignalFields.decodeUTF8(Array(b[i..<(i + nameLen)]))
        self.init(memberID: memberID, ssrc: ssrc, flags: flags, identity: identity, name: name)
    }
}
