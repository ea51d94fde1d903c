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

extension SignalDatagram {
    /// Parses a signalling datagram, checking magic, version, type and every field it needs.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        guard bytes.count >= Signalling.headerSize else { throw .truncated }
        guard bytes.count <= Signalling.maxDatagramSize else { throw .badLength }
        guard bytes[0] == Signalling.magic, bytes[1] == Signalling.version else { throw .badVersion }
        func u32(_ i: Int) -> UInt32 { UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3]) }
        let type = bytes[2]
        let f = try SignalFields(bytes, from: Signalling.headerSize)
        let message: SignalMessage
        switch type {
        case 0x01:
            message = .join(JoinRequest(token: try f.string(.token), room: try f.string(.room, maxCount: Signalling.maxDatagramSize),
                                        cookie: try f.optionalData(.cookie, maxCount: 64), nonce: try f.data(.nonce, maxCount: 32),
                                        muted: try f.bool(.muted), keyShare: try f.optionalData(.keyShare, maxCount: 64),
                                        speakersFromMedia: try f.bool(.speakersFromMedia)))
        case 0x02: message = .leave
        case 0x03: message = .ping(timestamp: try f.u64(.timestamp))
        case 0x04: message = .setMuted(try f.u8(.muted) != 0)
        case 0x05: message = .sendText(to: try f.optionalString(.to, maxCount: Signalling.maxDatagramSize), fragment: try Self.fragment(f, bytes))
        case 0x06: message = .resume(timestamp: try f.u64(.timestamp), proof: try f.data(.proof, maxCount: 32))
        case 0x07: message = .ack
        case 0x0C: message = .pathResponse(challenge: try f.data(.challenge, maxCount: 32), proof: try f.data(.proof, maxCount: 32))
        case 0x8E: message = .pathChallenge(challenge: try f.data(.challenge, maxCount: 32))
        case 0x81: message = .retry(cookie: try f.data(.cookie, maxCount: 64))
        case 0x82:
            message = .welcome(Welcome(
                nonce: try f.data(.nonce, maxCount: 32), memberID: try f.u32(.memberID), ssrc: try f.u32(.ssrc),
                port: try f.u16(.port), sessionSecret: try f.data(.sessionSecret, maxCount: 64), room: try f.string(.room, maxCount: 128),
                mode: try f.string(.mode, maxCount: 16), identity: try f.string(.identity, maxCount: 128),
                memberCount: try f.u32(.memberCount), keepaliveMilliseconds: try f.u32(.keepalive),
                timeoutMilliseconds: try f.u32(.timeout), flags: MemberFlags(rawValue: try f.u8(.flags)),
                keyShare: try f.optionalData(.keyShare, maxCount: 64), roomMediaKey: try f.optionalData(.roomMediaKey, maxCount: 64),
                streamIndices: try Self.streamIndices(f, bytes), alternates: try Self.alternates(f, bytes)))
        case 0x83:
            guard let code = RefusalCode(rawValue: try f.u16(.code)) else { throw .badField }
            message = .refused(code: code, reason: try f.optionalString(.reason, maxCount: 512))
        case 0x84:
            var members: [MemberEntry] = []
            for r in f.all(.member) { members.append(try MemberEntry(decoding: bytes, r)) }
            message = .memberPage(index: try f.u16(.pageIndex), count: try f.u16(.pageCount), members: members)
        case 0x85:
            guard let kind = MemberEventKind(rawValue: try f.u8(.eventKind)), let r = f.range(.member) else { throw .badField }
            message = .memberEvent(kind: kind, member: try MemberEntry(decoding: bytes, r), reason: try f.optionalString(.reason, maxCount: 512))
        case 0x86:
            var speakers: [SpeakerEntry] = []
            for r in f.all(.speaker) {
                guard r.count == 9 else { throw .badLength }
                let i = r.lowerBound
                speakers.append(SpeakerEntry(memberID: u32(i), ssrc: u32(i + 4), level: bytes[i + 8] & 0x7F))
            }
            message = .speakers(speakers)
        case 0x87:
            message = .text(fromMemberID: try f.u32(.memberID), fromIdentity: try f.string(.identity, maxCount: 128),
                            direct: try f.bool(.direct), fragment: try Self.fragment(f, bytes),
                            sentAt: f.range(.sentAt) == nil ? 0 : try f.u64(.sentAt), request: try f.bool(.chatRequest))
        case 0x91: message = .textStored(messageID: try f.u32(.messageID))
        case 0x0D:
            let to = try f.string(.to, maxCount: Signalling.maxDatagramSize)
            guard !to.isEmpty else { throw .badField }
            message = .chatAnswer(to: to, accept: try f.u8(.accept) != 0)
        case 0x93:
            let material = try f.data(.roomMediaKey, maxCount: 64)
            guard !material.isEmpty else { throw .badField }
            message = .roomKey(keyID: try f.u32(.keyID), material: material, streamIndices: try Self.streamIndices(f, bytes))
        case 0x92:
            guard let state = ChatStatus.State(rawValue: try f.u8(.chatState)) else { throw .badField }
            message = .chatStatus(ChatStatus(identity: try f.string(.identity, maxCount: 128), state: state))
        case 0x88:
            message = .textStatus(messageID: try f.u32(.messageID), delivered: try f.bool(.delivered),
                                  reason: try f.optionalString(.reason, maxCount: 512))
        case 0x89:
            guard let code = GoodbyeCode(rawValue: try f.u16(.code)) else { throw .badField }
            message = .goodbye(code: code, reason: try f.optionalString(.reason, maxCount: 512))
        case 0x8F:
            var delta = MemberDelta(audience: try f.u32(.audienceCount))
            for r in f.all(.member) { delta.joined.append(try MemberEntry(decoding: bytes, r)) }
            for r in f.all(.departure) {
                guard r.count >= 4, r.count <= 4 + 512 else { throw .badLength }
                let i = r.lowerBound
                delta.left.append(MemberDelta.Departure(memberID: u32(i), reason: try SignalFields.decodeUTF8(Array(bytes[(i + 4)..<r.upperBound]))))
            }
            message = .memberDelta(delta)
        case 0x8A: message = .pong(timestamp: try f.u64(.timestamp))
        case 0x8B: message = .resumed
        case 0x90: message = .recording(active: try f.u8(.recording) != 0, id: try f.optionalString(.recordingID, maxCount: 64))
        case 0x08, 0x09, 0x0A, 0x0B, 0x8C, 0x8D: message = try Self.callMessage(type: type, f)
        default: throw .unknownType
        }
        self.init(connectionID: u32(4), sequence: u32(8), ack: u32(12), message: message)
        if message.isReliable != (sequence != 0) { throw .badField }
    }

    private static func alternates(_ f: SignalFields, _ b: UnsafeRawBufferPointer) throws(WireError) -> [String] {
        let ranges = f.all(.alternateNode)
        guard ranges.count <= Welcome.maxAlternates else { throw .badField }
        var out: [String] = []
        for r in ranges {
            guard r.count <= NodePointer.maxLength else { throw .badLength }
            out.append(try SignalFields.decodeUTF8(Array(b[r])))
        }
        return out
    }

    /// Each stream's position (`streamIndex`: SSRC, 48-bit index), at most `Welcome.maxStreamIndices`.
    private static func write(_ indices: [Welcome.StreamIndex], _ w: inout SignalWriter) {
        for s in indices.prefix(Welcome.maxStreamIndices) {
            w.u8(SignalTag.streamIndex.rawValue); w.u16(10); w.u32(s.ssrc)
            w.u16(UInt16(truncatingIfNeeded: s.index >> 32)); w.u32(UInt32(truncatingIfNeeded: s.index))
        }
    }

    private static func streamIndices(_ f: SignalFields, _ b: UnsafeRawBufferPointer) throws(WireError) -> [Welcome.StreamIndex] {
        let ranges = f.all(.streamIndex)
        guard ranges.count <= Welcome.maxStreamIndices else { throw .badField }
        var out: [Welcome.StreamIndex] = []
        for r in ranges {
            guard r.count == 10 else { throw .badLength }
            var index: UInt64 = 0
            for i in (r.lowerBound + 4)..<r.upperBound { index = index << 8 | UInt64(b[i]) }
            let i = r.lowerBound
            out.append(Welcome.StreamIndex(ssrc: UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3]),
                                           index: index))
        }
        return out
    }

    private static func fragment(_ f: SignalFields, _ b: UnsafeRawBufferPointer) throws(WireError) -> TextFragment {
        var fragment = TextFragment(messageID: try f.u32(.messageID), index: try f.u8(.fragmentIndex),
                                    count: try f.u8(.fragmentCount), chunk: try f.data(.chunk, maxCount: Signalling.maxTextFragmentBytes))
        guard fragment.count >= 1, Int(fragment.count) <= Signalling.maxTextFragments, fragment.index < fragment.count
        else { throw .badField }
        // Attachment ids: on the first fragment only, at most 4, each 22 base64url characters spelling 16 bytes.
        let ids = f.all(.attachment)
        guard ids.isEmpty || fragment.index == 0, ids.count <= TextAttachments.maxCount else { throw .badField }
        for r in ids {
            guard r.count == TextAttachments.idLength else { throw .badLength }
            guard TextAttachments.isID(utf8: b[r]) else { throw .badField }
            fragment.attachments.append(String(decoding: b[r], as: UTF8.self))
        }
        return fragment
    }

    /// Serializes into `buffer`, returning the bytes written; `bufferTooSmall` if it does not fit
    /// (callers pass a buffer of `Signalling.maxDatagramSize`).
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        var w = SignalWriter(buffer)
        w.u8(Signalling.magic); w.u8(Signalling.version); w.u8(message.typeCode); w.u8(0)
        w.u32(connectionID); w.u32(sequence); w.u32(ack)
        switch message {
        case .join(let j):
            w.field(.token, string: j.token); w.field(.room, string: j.room)
            if !j.cookie.isEmpty { w.field(.cookie, j.cookie) }
            w.field(.nonce, j.nonce)
            if j.muted { w.field(.muted, u8: 1) }
            if !j.keyShare.isEmpty { w.field(.keyShare, j.keyShare) }
            if j.speakersFromMedia { w.field(.speakersFromMedia, u8: 1) }
        case .leave, .ack, .resumed: break
        case .ping(let t), .pong(let t): w.field(.timestamp, u64: t)
        case .setMuted(let m): w.field(.muted, u8: m ? 1 : 0)
        case .sendText(let to, let fragment):
            if !to.isEmpty { w.field(.to, string: to) }
            Self.write(fragment, &w)
        case .resume(let t, let proof): w.field(.timestamp, u64: t); w.field(.proof, proof)
        case .retry(let cookie): w.field(.cookie, cookie)
        case .pathChallenge(let c): w.field(.challenge, c)
        case .pathResponse(let c, let proof): w.field(.challenge, c); w.field(.proof, proof)
        case .welcome(let x):
            w.field(.nonce, x.nonce); w.field(.memberID, u32: x.memberID); w.field(.ssrc, u32: x.ssrc)
            w.field(.port, u16: x.port); w.field(.sessionSecret, x.sessionSecret); w.field(.room, string: x.room)
            w.field(.mode, string: x.mode); w.field(.identity, string: x.identity); w.field(.memberCount, u32: x.memberCount)
            w.field(.keepalive, u32: x.keepaliveMilliseconds); w.field(.timeout, u32: x.timeoutMilliseconds)
            w.field(.flags, u8: x.flags.rawValue)
            if !x.keyShare.isEmpty { w.field(.keyShare, x.keyShare) }
            if !x.roomMediaKey.isEmpty { w.field(.roomMediaKey, x.roomMediaKey) }
            for a in x.alternates.prefix(Welcome.maxAlternates) where a.utf8.count <= NodePointer.maxLength { w.field(.alternateNode, string: a) }
            Self.write(x.streamIndices, &w)
        case .refused(let code, let reason):
            w.field(.code, u16: code.rawValue)
            if !reason.isEmpty { w.field(.reason, string: reason) }
        case .memberPage(let index, let count, let members):
            w.field(.pageIndex, u16: index); w.field(.pageCount, u16: count)
            for m in members { w.field(.member, m.encoded) }
        case .memberEvent(let kind, let member, let reason):
            w.field(.eventKind, u8: kind.rawValue); w.field(.member, member.encoded)
            if !reason.isEmpty { w.field(.reason, string: reason) }
        case .memberDelta(let delta):
            w.field(.audienceCount, u32: delta.audience)
            for m in delta.joined { w.field(.member, m.encoded) }
            for d in delta.left { w.field(.departure, Self.encoded(d)) }
        case .speakers(let list):
            for s in list {
                w.u8(SignalTag.speaker.rawValue); w.u16(9); w.u32(s.memberID); w.u32(s.ssrc); w.u8(s.level & 0x7F)
            }
        case .text(let from, let identity, let direct, let fragment, let sentAt, let request):
            w.field(.memberID, u32: from); w.field(.identity, string: identity)
            if direct { w.field(.direct, u8: 1) }
            Self.write(fragment, &w)
            if sentAt != 0 { w.field(.sentAt, u64: sentAt) }
            if request { w.field(.chatRequest, u8: 1) }
        case .textStored(let id):
            w.field(.messageID, u32: id)
        case .chatAnswer(let to, let accept):
            w.field(.to, string: to); w.field(.accept, u8: accept ? 1 : 0)
        case .chatStatus(let status):
            w.field(.identity, string: status.identity); w.field(.chatState, u8: status.state.rawValue)
        case .roomKey(let id, let material, let indices):
            w.field(.keyID, u32: id); w.field(.roomMediaKey, material)
            Self.write(indices, &w)
        case .textStatus(let id, let delivered, let reason):
            w.field(.messageID, u32: id); w.field(.delivered, u8: delivered ? 1 : 0)
            if !reason.isEmpty { w.field(.reason, string: reason) }
        case .goodbye(let code, let reason):
            w.field(.code, u16: code.rawValue)
            if !reason.isEmpty { w.field(.reason, string: reason) }
        case .recording(let active, let id):
            w.field(.recording, u8: active ? 1 : 0)
            if !id.isEmpty { w.field(.recordingID, string: id) }
        case .register, .callInvite, .callAnswer, .callHangup, .incomingCall, .callStatus:
            Self.writeCall(message, &w)
        }
        guard !w.overflow, w.offset <= Signalling.maxDatagramSize else { throw .bufferTooSmall }
        return w.offset
    }

    /// A departure's field: member id (4), then the reason (UTF-8, at most 512 bytes).
    static func encoded(_ d: MemberDelta.Departure) -> [UInt8] {
        var out: [UInt8] = []
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: d.memberID >> UInt32(shift))) }
        var reason = d.reason
        while reason.utf8.count > 512 { reason.removeLast() }  // whole characters: the field stays valid UTF-8
        return out + Array(reason.utf8)
    }

    /// A fragment's fields. Its attachment ids are written as given: `TextFragment.split` is where a sender's are
    /// checked (a datagram the parser refuses would never be acknowledged).
    private static func write(_ fragment: TextFragment, _ w: inout SignalWriter) {
        w.field(.messageID, u32: fragment.messageID); w.field(.fragmentIndex, u8: fragment.index)
        w.field(.fragmentCount, u8: fragment.count); w.field(.chunk, fragment.chunk)
        for id in fragment.attachments { w.field(.attachment, string: id) }
    }

    /// Serializes into a new array (tests and tools; the relay serializes into its own buffers).
    public func serialized() throws(WireError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Signalling.maxDatagramSize)
        let result: Result<Int, WireError> = out.withUnsafeMutableBytes { b in Result { () throws(WireError) in try serialize(into: b) } }
        out.removeSubrange(try result.get()...)
        return out
    }

    /// Parses from an array (tests and tools).
    public init(parsing bytes: [UInt8]) throws(WireError) {
        let result: Result<SignalDatagram, WireError> = bytes.withUnsafeBytes { b in Result { () throws(WireError) in try SignalDatagram(parsing: b) } }
        self = try result.get()
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
