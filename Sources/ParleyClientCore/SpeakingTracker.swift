import ParleyWire

// Who is speaking, told from the streams a member receives — what the relay's `speakers` message would say in a
// forward room, without the message.

/// The speakers a listener hears, from the RFC 6464 levels of the streams it receives: a stream is speaking while a
/// packet at or above speech level (level ≤ `rules.levelThreshold`, in −dBov) arrived within `rules.hold` (the relay's
/// own `SpeechRules`). In a forward room the relay sends each listener exactly the forwarded speakers, so this is the
/// relay's speaker list, seen per packet instead of pushed at most every 200 ms. Pure: time is a parameter.
public struct SpeakingTracker: Sendable {
    /// One speaker: its SSRC and its loudest recent level (−dBov, 0 = loudest).
    public struct Speaker: Equatable, Sendable {
        public var ssrc: UInt32
        public var level: UInt8
        /// A speaker.
        public init(ssrc: UInt32, level: UInt8) {
            self.ssrc = ssrc
            self.level = level
        }
    }

    /// When a packet is speech and how long a stream stays speaking after its last speech packet.
    public let rules: SpeechRules
    /// Levels at or below this (louder) count as speech.
    public var speechLevel: UInt8 { rules.levelThreshold }
    /// How long a stream stays speaking after its last speech packet.
    public var hold: Interval { rules.hold }
    private var streams: [UInt32: (lastSpeech: Instant, level: UInt8)] = [:]
    /// The speakers as last returned by `update`, loudest first.
    public private(set) var current: [Speaker] = []

    /// A tracker with the given rules (the relay's defaults unless told otherwise).
    public init(rules: SpeechRules = .standard) {
        self.rules = rules
    }

    /// Notes one received packet's level (nil when it carried none: then a payload over 10 bytes counts as speech
    /// at level 40, a DTX frame as silence, as the relay does).
    public mutating func observe(ssrc: UInt32, level: UInt8?, payloadBytes: Int, now: Instant) {
        let l = SpeechRules.level(level, payloadBytes: payloadBytes)
        guard rules.isSpeech(level: l) else { return }
        if let s = streams[ssrc], now - s.lastSpeech <= hold / 3 {
            streams[ssrc] = (now, min(s.level, l))  // keep the loudest of the last third of the hold
        } else {
            streams[ssrc] = (now, l)
        }
    }

    /// Forgets a stream (its member left).
    public mutating func forget(ssrc: UInt32) { streams[ssrc] = nil }

    /// Recomputes the speakers at `now`; returns them when the set of speaking streams changed since the last call,
    /// nil otherwise (level changes alone are not reported).
    public mutating func update(now: Instant) -> [Speaker]? {
        streams = streams.filter { rules.isSpeaking(lastSpeech: $0.value.lastSpeech, now: now) }
        let speakers = streams.map { Speaker(ssrc: $0.key, level: $0.value.level) }
            .sorted { ($0.level, $0.ssrc) < ($1.level, $1.ssrc) }
        let changed = Set(speakers.map(\.ssrc)) != Set(current.map(\.ssrc))
        current = speakers
        return changed ? speakers : nil
    }
}
