/// RFC 4733 telephone-events from a phone, read into the digits a caller keys (a room's PIN). Each key press is one
/// event: packets sharing an RTP timestamp, the last ones (repeated) with the end bit. Pure.
public struct DTMFCollector: Sendable {
    /// Digits keyed so far (`0`-`9`, `*`, `#`, `A`-`D`), at most `capacity`.
    public private(set) var digits: [Character] = []
    /// Digits kept at most (older ones dropped).
    public let capacity: Int
    private var lastEvent: UInt32?

    /// A collector keeping at most `capacity` digits.
    public init(capacity: Int = 32) { self.capacity = max(1, capacity) }

    /// The events' names by code (RFC 4733 §3.2: 0-9, `*` 10, `#` 11, A-D 12-15).
    static let names: [Character] = Array("0123456789*#ABCD")

    /// Takes one telephone-event packet's payload and its RTP timestamp; the digit when it starts a new key press.
    public mutating func take(_ payload: UnsafeRawBufferPointer, timestamp: UInt32) -> Character? {
        guard payload.count >= 4, payload[0] < 16 else { return nil }
        guard lastEvent != timestamp else { return nil }  // the same press (its updates and repeated ends)
        lastEvent = timestamp
        let digit = Self.names[Int(payload[0])]
        if digits.count == capacity { digits.removeFirst() }
        digits.append(digit)
        return digit
    }

    /// Forgets the digits keyed (a try ended).
    public mutating func clear() { digits.removeAll() }
}

/// The PINs of rooms a phone must key before it joins (`POST /v1/rooms {sip_pin}`), and how a caller's tries end.
/// A try ends with `#` or once as many digits as the PIN has were keyed; three wrong tries or 30 s end the call.
public struct SIPRoomPINs: Sendable {
    private var pins: [String: String] = [:]
    /// Wrong tries a call gets.
    public static let tries = 3
    /// How long a caller has to key the PIN (nanoseconds).
    public static let deadlineNanoseconds: Int64 = 30_000_000_000

    /// No PINs.
    public init() {}

    /// Whether `pin` can be a PIN: 4-12 digits.
    public static func valid(_ pin: String) -> Bool {
        (4...12).contains(pin.count) && pin.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// Sets (or with nil removes) `room`'s PIN.
    public mutating func set(_ pin: String?, for room: String) { pins[room] = pin }

    /// `room`'s PIN, if it has one.
    public func pin(for room: String) -> String? { pins[room] }

    /// What the digits keyed so far mean for a room whose PIN is `pin`.
    public enum Verdict: Equatable, Sendable {
        /// Not done keying.
        case more
        /// The PIN.
        case right
        /// A finished try that is not the PIN.
        case wrong
    }

    /// Judges `digits` (the keys of this try) against `pin`, comparing without an early exit.
    public static func judge(_ digits: [Character], pin: String) -> Verdict {
        let ended = digits.last == "#"
        let keyed = ended ? Array(digits.dropLast()) : digits
        guard ended || keyed.count >= pin.count else { return .more }
        let expected = Array(pin)
        var difference = keyed.count ^ expected.count
        for i in 0..<max(keyed.count, expected.count) {
            let a = i < keyed.count ? keyed[i].asciiValue ?? 0 : 0
            let b = i < expected.count ? expected[i].asciiValue ?? 0 : 0
            difference |= Int(a ^ b)
        }
        return difference == 0 ? .right : .wrong
    }
}

/// RFC 4733 telephone-events to a phone, paced by the caller's 20 ms ticks: each digit 100 ms of event packets (the
/// first with the marker, the duration growing by a tick each), its end sent three times (§2.5.1.4), then 60 ms of
/// nothing before the next digit. Pure.
public struct DTMFSender: Sendable {
    /// One packet's event fields; the caller adds the RTP header (the event's timestamp, fixed while it lasts).
    public struct Packet: Equatable, Sendable {
        /// The event code (0-15).
        public var event: UInt8
        /// The end bit.
        public var end: Bool
        /// The event's duration so far, in RTP clock units.
        public var duration: UInt16
        /// The event's first packet (marker bit; its timestamp is the stream's time now).
        public var starts: Bool

        /// The 4-byte payload: event, E bit and volume 10 (−10 dBm0), duration.
        public var payload: [UInt8] {
            [event, (end ? 0x80 : 0) | 10, UInt8(duration >> 8), UInt8(duration & 0xFF)]
        }
    }

    /// RTP clock units per 20 ms tick.
    public let tickUnits: UInt16
    /// Digits queued at most.
    public static let capacity = 64
    static let toneTicks = 5, endRepeats = 3, gapTicks = 3
    private var queue: [UInt8] = []
    private var current: (event: UInt8, step: Int)?
    private var gap = 0

    /// A sender for a stream whose RTP clock is `clockRate` Hz (8000 for G.711).
    public init(clockRate: Int) { tickUnits = UInt16(clamping: clockRate / 50) }

    /// The codes of `digits` (`0`-`9`, `*`, `#`, `A`-`D` in either case), or nil when one is none of them.
    public static func codes(_ digits: String) -> [UInt8]? {
        var codes: [UInt8] = []
        for c in digits.uppercased() {
            guard let i = DTMFCollector.names.firstIndex(of: c) else { return nil }
            codes.append(UInt8(i))
        }
        return codes
    }

    /// Queues `digits`; false (nothing queued) when one is not a key or the queue would pass `capacity`.
    public mutating func enqueue(_ digits: String) -> Bool {
        guard let codes = Self.codes(digits), queue.count + codes.count <= Self.capacity else { return false }
        queue += codes
        return true
    }

    /// Nothing queued or being sent (the gap after the last digit included).
    public var idle: Bool { queue.isEmpty && current == nil && gap == 0 }

    /// What to send at this tick: a packet, or nil (between digits, or idle).
    public mutating func tick() -> Packet? {
        if gap > 0 {
            gap -= 1
            return nil
        }
        if current == nil {
            guard !queue.isEmpty else { return nil }
            current = (queue.removeFirst(), 0)
        }
        guard let (event, step) = current else { return nil }
        let full = UInt16(Self.toneTicks) * tickUnits
        if step < Self.toneTicks {
            current = (event, step + 1)
            return Packet(event: event, end: false, duration: UInt16(step + 1) * tickUnits, starts: step == 0)
        }
        if step + 1 == Self.toneTicks + Self.endRepeats {
            current = nil
            gap = Self.gapTicks
        } else {
            current = (event, step + 1)
        }
        return Packet(event: event, end: true, duration: full, starts: false)
    }
}
