import ParleyWire

/// What one node tells another about a room they share (the body of a `CascadeCipher` datagram). Every body starts
/// with its kind and the room's name; the rest is the kind's:
///
/// - `media` (1): a speaker's RTP packet, in the clear inside the sealed link: origin member id (u32, the sending
///   node's), level (u8, RFC 6464 scale, 127 = silence), the packet.
/// - `roster` (2): the sending node's part of the room, in parts: epoch (u32), part, parts (u8 each), audience count
///   (u32), peer nodes it shares the room with (u8 count, u64 each), member entries (u8 count; id, SSRC (u32 each),
///   flags (u8), identity and name (u8 length each)). A complete epoch replaces what the receiver knew; the rosters
///   come at least once a second (they are the link's keepalive) and at once after a change.
/// - `mix` (3): the mixing node's frame for the receiver's members: target (u32: 0 for every member not heard in it,
///   else one member's id, its minus-one mix), frame index (u32), the RTP packet (sequence 0: the receiver numbers it
///   per member).
/// - `text` (4): one fragment of a room text (`TextFragment`, at most 900 bytes, so every datagram of the link stays
///   under 1,200 bytes): sender's id on its node (u32), recipient identity (u8 length; empty: the room), message id
///   (u32), index and count (u8 each), the bytes (u16 length). A first fragment that carries images sets the count's
///   top bit (`fragmentHasAttachments`) and ends with their ids: how many (u8, 1–4), then 22 ASCII bytes each
///   (`TextAttachments`); a text without images is as before, and a node that predates them drops one with them (its
///   count is out of range, its body longer than it reads). The members' clients reassemble the fragments.
/// - Presence (room ""), between worker 0s: `invite` (5), `hangup` (6), `callStatus` (7), and `directText` (8: sender,
///   recipient, a fragment as in `text`).
///
/// Parsing checks every length against the datagram; a short or inconsistent body is nil. A node passes texts, incoming
/// calls and call statuses on to its members as signalling, which their codec refuses outside its bounds (and a refused
/// reliable message is never acknowledged: the relay ends the member's session), so a body carrying such a value is nil
/// too: a text of more than `Signalling.maxTextFragments` fragments, a key share neither absent nor
/// `CallKeyShare.length` bytes, a call status that names a room and token other than exactly when answered.
public enum CascadeMessage: Equatable, Sendable {
    case media(room: String, origin: UInt32, level: UInt8, rtp: [UInt8])
    case roster(room: String, CascadeRoster)
    case mix(room: String, target: UInt32, frame: UInt32, rtp: [UInt8])
    case text(room: String, from: UInt32, to: String, fragment: TextFragment)
    // Between two nodes' worker 0s (presence; no room): a call to an identity online on the receiver, the caller's
    // hang-up, the receiver's statuses for the caller, and a direct text.
    case invite(callID: UInt32, caller: String, name: String, callee: String, keyShare: [UInt8])
    case hangup(callID: UInt32, identity: String)
    case callStatus(to: String, CallStatus)
    case directText(from: String, to: String, fragment: TextFragment)

    static let mediaKind: UInt8 = 1, rosterKind: UInt8 = 2, mixKind: UInt8 = 3, textKind: UInt8 = 4
    static let inviteKind: UInt8 = 5, hangupKind: UInt8 = 6, callStatusKind: UInt8 = 7, directTextKind: UInt8 = 8
    /// Set in a text fragment's count when attachment ids follow its bytes.
    static let fragmentHasAttachments: UInt8 = 0x80
    /// Whether a kind is between nodes' presence (worker 0) rather than about a room.
    static func isPresence(_ kind: UInt8) -> Bool { kind >= inviteKind && kind <= directTextKind }

    /// Writes a media body's prefix (kind, room, origin, level: 7 bytes and the room's) into `buffer`; the packet
    /// follows it.
    static func writeMediaPrefix(room: String, origin: UInt32, level: UInt8, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var w = ByteWriter(buffer)
        w.u8(mediaKind)
        w.string8(room)
        w.u32(origin)
        w.u8(level)
        return w.offset
    }

    /// Writes a mix body's prefix (the packet follows).
    static func writeMixPrefix(room: String, target: UInt32, frame: UInt32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var w = ByteWriter(buffer)
        w.u8(mixKind)
        w.string8(room)
        w.u32(target)
        w.u32(frame)
        return w.offset
    }

    /// The body as bytes (rosters and texts; media and mix are written in place on the packet path).
    public var bytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: 65_536)
        let n = out.withUnsafeMutableBytes { b -> Int in
            var w = ByteWriter(b)
            switch self {
            case .media(let room, let origin, let level, let rtp):
                w.u8(Self.mediaKind); w.string8(room); w.u32(origin); w.u8(level); w.raw(rtp)
            case .roster(let room, let r):
                w.u8(Self.rosterKind); w.string8(room); w.u32(r.epoch); w.u8(r.part); w.u8(r.parts); w.u32(r.audience)
                w.u8(UInt8(r.peers.count))
                for p in r.peers { w.u64(p) }
                w.u8(UInt8(r.members.count))
                for m in r.members {
                    w.u32(m.memberID); w.u32(m.ssrc); w.u8(m.flags.rawValue); w.string8(m.identity); w.string8(m.name)
                }
            case .mix(let room, let target, let frame, let rtp):
                w.u8(Self.mixKind); w.string8(room); w.u32(target); w.u32(frame); w.raw(rtp)
            case .text(let room, let from, let to, let f):
                w.u8(Self.textKind); w.string8(room); w.u32(from); w.string8(to); w.fragment(f)
            case .invite(let callID, let caller, let name, let callee, let keyShare):
                w.u8(Self.inviteKind); w.string8(""); w.u32(callID); w.string8(caller); w.string8(name); w.string8(callee)
                w.u8(UInt8(min(keyShare.count, 255))); w.raw(Array(keyShare.prefix(255)))
            case .hangup(let callID, let identity):
                w.u8(Self.hangupKind); w.string8(""); w.u32(callID); w.string8(identity)
            case .callStatus(let to, let s):
                w.u8(Self.callStatusKind); w.string8(""); w.string8(to); w.u32(s.callID); w.u8(s.state.rawValue); w.string8(s.reason)
                w.string8(s.room); w.string16(s.token); w.u8(UInt8(min(s.keyShare.count, 255))); w.raw(Array(s.keyShare.prefix(255)))
            case .directText(let from, let to, let f):
                w.u8(Self.directTextKind); w.string8(""); w.string8(from); w.string8(to); w.fragment(f)
            }
            return w.offset
        }
        return Array(out[0..<n])
    }

    /// Parses a whole body.
    public init?(parsing body: UnsafeRawBufferPointer) {
        var r = ByteReader(body)
        guard let kind = r.u8(), let room = r.string8() else { return nil }
        switch kind {
        case Self.mediaKind:
            guard let origin = r.u32(), let level = r.u8() else { return nil }
            self = .media(room: room, origin: origin, level: level, rtp: r.rest())
        case Self.rosterKind:
            guard let epoch = r.u32(), let part = r.u8(), let parts = r.u8(), parts > 0, part < parts, let audience = r.u32(),
                  let peerCount = r.u8() else { return nil }
            var peers: [UInt64] = []
            for _ in 0..<peerCount {
                guard let p = r.u64() else { return nil }
                peers.append(p)
            }
            guard let count = r.u8() else { return nil }
            var members: [MemberEntry] = []
            for _ in 0..<count {
                guard let id = r.u32(), let ssrc = r.u32(), let flags = r.u8(), let identity = r.string8(), let name = r.string8() else { return nil }
                members.append(MemberEntry(memberID: id, ssrc: ssrc, flags: MemberFlags(rawValue: flags), identity: identity, name: name))
            }
            guard r.atEnd else { return nil }
            self = .roster(room: room, CascadeRoster(epoch: epoch, part: part, parts: parts, audience: audience, peers: peers, members: members))
        case Self.mixKind:
            guard let target = r.u32(), let frame = r.u32() else { return nil }
            self = .mix(room: room, target: target, frame: frame, rtp: r.rest())
        case Self.textKind:
            guard let from = r.u32(), let to = r.string8(), let f = r.fragment(), r.atEnd else { return nil }
            self = .text(room: room, from: from, to: to, fragment: f)
        case Self.inviteKind:
            guard let callID = r.u32(), let caller = r.string8(), let name = r.string8(), let callee = r.string8(),
                  let share = r.keyShare(), r.atEnd else { return nil }
            self = .invite(callID: callID, caller: caller, name: name, callee: callee, keyShare: share)
        case Self.hangupKind:
            guard let callID = r.u32(), let identity = r.string8(), r.atEnd else { return nil }
            self = .hangup(callID: callID, identity: identity)
        case Self.callStatusKind:
            guard let to = r.string8(), let callID = r.u32(), let raw = r.u8(), let state = CallState(rawValue: raw), let reason = r.string8(),
                  let callRoom = r.string8(), let token = r.string16(), let share = r.keyShare(), r.atEnd,
                  (state == .answered) == !callRoom.isEmpty, callRoom.isEmpty == token.isEmpty else { return nil }
            self = .callStatus(to: to, CallStatus(callID: callID, state: state, reason: reason, room: callRoom, token: token,
                                                  keyShare: share))
        case Self.directTextKind:
            guard let from = r.string8(), let to = r.string8(), let f = r.fragment(), r.atEnd else { return nil }
            self = .directText(from: from, to: to, fragment: f)
        default:
            return nil
        }
    }
}

/// One part of a node's roster for a room (see `CascadeMessage.roster`).
public struct CascadeRoster: Equatable, Sendable {
    public var epoch: UInt32
    public var part: UInt8
    public var parts: UInt8
    /// Members on the sending node counted, not listed (an audience room's listeners).
    public var audience: UInt32
    /// The other nodes the sender shares the room with (their keys), so a newcomer finds them at once.
    public var peers: [UInt64]
    public var members: [MemberEntry]

    public init(epoch: UInt32, part: UInt8, parts: UInt8, audience: UInt32, peers: [UInt64], members: [MemberEntry]) {
        self.epoch = epoch
        self.part = part
        self.parts = parts
        self.audience = audience
        self.peers = peers
        self.members = members
    }

    /// The most bytes of entries in one part (a part stays well inside one datagram).
    static let partBytes = 900

    /// A node's roster in as many parts as its entries need (at least one, at most 255).
    static func parts(epoch: UInt32, audience: Int, peers: [UInt64], members: [MemberEntry]) -> [CascadeRoster] {
        var groups: [[MemberEntry]] = [[]]
        var size = 0
        for m in members {
            let n = 11 + min(255, m.identity.utf8.count) + min(255, m.name.utf8.count)
            if size + n > partBytes || groups[groups.count - 1].count == 255 {
                if groups.count == 255 { break }
                groups.append([])
                size = 0
            }
            groups[groups.count - 1].append(m)
            size += n
        }
        return groups.enumerated().map { i, g in
            CascadeRoster(epoch: epoch, part: UInt8(i), parts: UInt8(groups.count), audience: UInt32(clamping: audience),
                          peers: Array(peers.prefix(16)), members: g)
        }
    }
}

/// Big-endian writes into a buffer the caller sized.
struct ByteWriter {
    let buffer: UnsafeMutableRawBufferPointer
    var offset = 0
    init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }
    mutating func u8(_ v: UInt8) { buffer[offset] = v; offset += 1 }
    mutating func u16(_ v: UInt16) { buffer.storeBytes(of: v.bigEndian, toByteOffset: offset, as: UInt16.self); offset += 2 }
    mutating func u32(_ v: UInt32) { buffer.storeBytes(of: v.bigEndian, toByteOffset: offset, as: UInt32.self); offset += 4 }
    mutating func u64(_ v: UInt64) { buffer.storeBytes(of: v.bigEndian, toByteOffset: offset, as: UInt64.self); offset += 8 }
    mutating func raw(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { b in
            if let base = b.baseAddress { (buffer.baseAddress! + offset).copyMemory(from: base, byteCount: b.count) }
        }
        offset += bytes.count
    }
    /// A string of at most 255 bytes (cut at a character boundary), after its length.
    mutating func string8(_ s: String) {
        var s = s
        if s.utf8.count > 255 {
            var bytes = Array(s.utf8.prefix(255))
            while String(validating: bytes, as: UTF8.self) == nil { bytes.removeLast() }
            s = String(decoding: bytes, as: UTF8.self)
        }
        // Room names and identities are short: copied straight from the string's storage (no allocation per packet).
        let n = s.utf8.count
        u8(UInt8(n))
        let base = buffer.baseAddress! + offset
        s.withUTF8 { u in if let p = u.baseAddress { base.copyMemory(from: p, byteCount: n) } }
        offset += n
    }
    mutating func fragment(_ f: TextFragment) {
        let ids = f.index == 0 && TextAttachments.areValid(f.attachments) ? f.attachments : []
        u32(f.messageID); u8(f.index); u8(f.count | (ids.isEmpty ? 0 : CascadeMessage.fragmentHasAttachments))
        u16(UInt16(min(f.chunk.count, Signalling.maxTextFragmentBytes)))
        raw(Array(f.chunk.prefix(Signalling.maxTextFragmentBytes)))
        guard !ids.isEmpty else { return }
        u8(UInt8(ids.count))
        for id in ids { raw(Array(id.utf8)) }
    }
    mutating func string16(_ s: String) {
        let bytes = Array(s.utf8.prefix(60_000))
        u16(UInt16(bytes.count))
        raw(bytes)
    }
}

/// Big-endian reads that stop (nil) at the end of the bytes.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0
    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    var atEnd: Bool { offset == bytes.count }
    mutating func u8() -> UInt8? {
        guard offset + 1 <= bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }
    mutating func u16() -> UInt16? {
        guard offset + 2 <= bytes.count else { return nil }
        defer { offset += 2 }
        return UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }
    mutating func u32() -> UInt32? {
        guard offset + 4 <= bytes.count else { return nil }
        defer { offset += 4 }
        return UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    mutating func u64() -> UInt64? {
        guard offset + 8 <= bytes.count else { return nil }
        defer { offset += 8 }
        return UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
    mutating func take(_ n: Int) -> UnsafeRawBufferPointer? {
        guard n >= 0, offset + n <= bytes.count else { return nil }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)])
    }
    mutating func string8() -> String? {
        guard let n = u8(), let b = take(Int(n)) else { return nil }
        return String(decoding: b, as: UTF8.self)
    }
    /// A fragment, with the attachment ids that follow it when its count's top bit says so.
    mutating func fragment() -> TextFragment? {
        guard let id = u32(), let index = u8(), let counted = u8(), case let count = counted & ~CascadeMessage.fragmentHasAttachments,
              count > 0, Int(count) <= Signalling.maxTextFragments, index < count,
              let n = u16(), Int(n) <= Signalling.maxTextFragmentBytes, let b = take(Int(n)) else { return nil }
        var fragment = TextFragment(messageID: id, index: index, count: count, chunk: Array(b))
        guard counted & CascadeMessage.fragmentHasAttachments != 0 else { return fragment }
        guard index == 0, let ids = u8(), (1...TextAttachments.maxCount).contains(Int(ids)) else { return nil }
        for _ in 0..<ids {
            guard let raw = take(TextAttachments.idLength), TextAttachments.isID(String(decoding: raw, as: UTF8.self)) else { return nil }
            fragment.attachments.append(String(decoding: raw, as: UTF8.self))
        }
        return fragment
    }
    /// A call's key share after its length byte: absent or `CallKeyShare.length` bytes, as the members' codec takes it.
    mutating func keyShare() -> [UInt8]? {
        guard let n = u8(), n == 0 || Int(n) == CallKeyShare.length, let share = take(Int(n)) else { return nil }
        return Array(share)
    }
    mutating func string16() -> String? {
        guard let n = u16(), let b = take(Int(n)) else { return nil }
        return String(decoding: b, as: UTF8.self)
    }
    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
    }
}
