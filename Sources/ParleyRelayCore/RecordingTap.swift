import ParleyWire

/// What a worker's core hands its recorder: the recordings of its rooms as a stream of records in one byte buffer
/// (no allocation per packet once the buffer has grown), which the worker moves to the recorder thread after each
/// batch (`take`). The core never touches a file: the recorder (`ParleyRelay`'s `RoomRecorder`) writes them.
///
/// Record layout: kind (u8), body length (u32, big-endian), body. Bodies (integers big-endian, strings as u16
/// length + UTF-8):
///
///     started  id u64 | unix ms u64 | monotonic ns u64 | room | mode | mixdown u8
///     track    id u64 | ssrc u32 | identity | name
///     packet   id u64 | ssrc u32 | RTP timestamp u32 | arrival ns u64 | Opus payload (the rest)
///     mix      id u64 | RTP timestamp u32 | deadline ns u64 | Opus payload (the rest)
///     stopped  id u64 | unix ms u64 | reason
public final class RecordingTap {
    /// One record, decoded.
    public enum Record: Equatable, Sendable {
        /// A recording of `room` began (`id`, the API's). `mixdown`: a forward room's tracks are also mixed at the end.
        case started(id: UInt64, room: String, mode: String, unixMilliseconds: Int64, at: Instant, mixdown: Bool)
        /// A member's stream joins the recording (before its first packet).
        case track(id: UInt64, ssrc: UInt32, identity: String, name: String)
        /// One of a member's packets as it arrived (after SRTP; the Opus payload only).
        case packet(id: UInt64, ssrc: UInt32, timestamp: UInt32, arrival: Instant, payload: [UInt8])
        /// One frame of the room's shared mix.
        case mix(id: UInt64, timestamp: UInt32, at: Instant, payload: [UInt8])
        /// The recording ended (`reason`: stopped through the API, the room closed, the relay stopped).
        case stopped(id: UInt64, unixMilliseconds: Int64, reason: String)
    }

    static let started: UInt8 = 1, track: UInt8 = 2, packet: UInt8 = 3, mix: UInt8 = 4, stopped: UInt8 = 5

    /// Records not yet taken.
    public private(set) var bytes: [UInt8] = []
    /// Most bytes kept untaken; packets beyond are dropped (counted): a recorder that fell behind costs no more memory.
    public let capacity: Int
    /// Packet and mix records dropped because the buffer was full.
    public private(set) var dropped: UInt64 = 0

    /// A tap holding at most `capacity` bytes between takes.
    public init(capacity: Int = 4 << 20) {
        self.capacity = capacity
        bytes.reserveCapacity(64 * 1024)
    }

    /// Whether records wait.
    public var isEmpty: Bool { bytes.isEmpty }

    /// Moves the records out (appending them to `into`), leaving the tap empty with its capacity.
    public func take(into other: inout [UInt8]) {
        other.append(contentsOf: bytes)
        bytes.removeAll(keepingCapacity: true)
    }

    private func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(truncatingIfNeeded: v)) }
    private func u32(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt32(s))) } }
    private func u64(_ v: UInt64) { u32(UInt32(v >> 32)); u32(UInt32(truncatingIfNeeded: v)) }
    private func string(_ s: String) {
        let utf8 = s.utf8.prefix(1024)
        u16(UInt16(utf8.count))
        bytes.append(contentsOf: utf8)
    }
    /// Writes the kind and a length placeholder, runs `body`, then patches the length.
    private func record(_ kind: UInt8, _ body: () -> Void) {
        bytes.append(kind)
        let at = bytes.count
        u32(0)
        body()
        let n = UInt32(bytes.count - at - 4)
        for k in 0..<4 { bytes[at + k] = UInt8(truncatingIfNeeded: n >> UInt32(24 - 8 * k)) }
    }

    func recordStarted(id: UInt64, room: String, mode: RoomMode, now: Moment, mixdown: Bool) {
        record(Self.started) {
            u64(id); u64(UInt64(bitPattern: now.unixMilliseconds)); u64(UInt64(bitPattern: now.monotonic.nanoseconds))
            string(room); string(mode.rawValue); bytes.append(mixdown ? 1 : 0)
        }
    }

    func recordTrack(id: UInt64, ssrc: UInt32, identity: String, name: String) {
        record(Self.track) { u64(id); u32(ssrc); string(identity); string(name) }
    }

    /// A member's packet: the per-packet path (no allocation once `bytes` has grown).
    func recordPacket(id: UInt64, ssrc: UInt32, timestamp: UInt32, arrival: Instant, payload: UnsafeRawBufferPointer) {
        guard bytes.count + payload.count + 29 <= capacity else { dropped &+= 1; return }
        record(Self.packet) {
            u64(id); u32(ssrc); u32(timestamp); u64(UInt64(bitPattern: arrival.nanoseconds))
            bytes.append(contentsOf: payload)
        }
    }

    func recordMix(id: UInt64, timestamp: UInt32, at: Instant, payload: UnsafeRawBufferPointer) {
        guard bytes.count + payload.count + 25 <= capacity else { dropped &+= 1; return }
        record(Self.mix) {
            u64(id); u32(timestamp); u64(UInt64(bitPattern: at.nanoseconds))
            bytes.append(contentsOf: payload)
        }
    }

    func recordStopped(id: UInt64, now: Moment, reason: String) {
        record(Self.stopped) { u64(id); u64(UInt64(bitPattern: now.unixMilliseconds)); string(reason) }
    }

    /// Decodes taken records, in order; stops at the first one that is cut short or unknown (nil for it).
    public static func decode(_ data: [UInt8]) -> [Record?] {
        var out: [Record?] = []
        var i = 0
        while i < data.count {
            guard i + 5 <= data.count else { out.append(nil); break }
            let kind = data[i]
            let n = Int(UInt32(data[i + 1]) << 24 | UInt32(data[i + 2]) << 16 | UInt32(data[i + 3]) << 8 | UInt32(data[i + 4]))
            let start = i + 5, end = start + n
            guard end <= data.count else { out.append(nil); break }
            var r = Reader(data: data, at: start, end: end)
            let record: Record? = switch kind {
            case started:
                r.u64().flatMap { id in r.u64().flatMap { ms in r.u64().flatMap { ns in r.string().flatMap { room in r.string().flatMap { mode in
                    r.u8().map { Record.started(id: id, room: room, mode: mode, unixMilliseconds: Int64(bitPattern: ms),
                                                at: Instant(nanoseconds: Int64(bitPattern: ns)), mixdown: $0 != 0) } } } } } }
            case track:
                r.u64().flatMap { id in r.u32().flatMap { ssrc in r.string().flatMap { identity in r.string().map { name in
                    Record.track(id: id, ssrc: ssrc, identity: identity, name: name) } } } }
            case packet:
                r.u64().flatMap { id in r.u32().flatMap { ssrc in r.u32().flatMap { ts in r.u64().map { ns in
                    Record.packet(id: id, ssrc: ssrc, timestamp: ts, arrival: Instant(nanoseconds: Int64(bitPattern: ns)), payload: r.rest()) } } } }
            case mix:
                r.u64().flatMap { id in r.u32().flatMap { ts in r.u64().map { ns in
                    Record.mix(id: id, timestamp: ts, at: Instant(nanoseconds: Int64(bitPattern: ns)), payload: r.rest()) } } }
            case stopped:
                r.u64().flatMap { id in r.u64().flatMap { ms in r.string().map { reason in
                    Record.stopped(id: id, unixMilliseconds: Int64(bitPattern: ms), reason: reason) } } }
            default: nil
            }
            out.append(record)
            if record == nil { break }
            i = end
        }
        return out
    }

    private struct Reader {
        let data: [UInt8]
        var at: Int
        let end: Int
        init(data: [UInt8], at: Int, end: Int) { self.data = data; self.at = at; self.end = end }
        mutating func u8() -> UInt8? { guard at < end else { return nil }; at += 1; return data[at - 1] }
        mutating func u16() -> UInt16? { guard at + 2 <= end else { return nil }; at += 2; return UInt16(data[at - 2]) << 8 | UInt16(data[at - 1]) }
        mutating func u32() -> UInt32? {
            guard at + 4 <= end else { return nil }
            at += 4
            return UInt32(data[at - 4]) << 24 | UInt32(data[at - 3]) << 16 | UInt32(data[at - 2]) << 8 | UInt32(data[at - 1])
        }
        mutating func u64() -> UInt64? { u32().flatMap { hi in u32().map { UInt64(hi) << 32 | UInt64($0) } } }
        mutating func string() -> String? {
            guard let n = u16(), at + Int(n) <= end else { return nil }
            at += Int(n)
            return String(decoding: data[(at - Int(n))..<at], as: UTF8.self)
        }
        mutating func rest() -> [UInt8] { defer { at = end }; return Array(data[at..<end]) }
    }
}

/// A room's recording while it runs (`RelayCore+Recording.swift`).
struct RoomRecording {
    /// The API's id for it.
    let id: UInt64
    /// The id as people see it: 16 hex digits.
    var name: String { RecordingTap.name(id) }
    /// Members whose track record was written.
    var tracks: Set<UInt32> = []
}

extension RecordingTap {
    /// A recording's id as people see it — the members' notice, the events, the API and its folder name: 16 lowercase
    /// hex digits.
    public static func name(_ id: UInt64) -> String {
        let hex = String(id, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
