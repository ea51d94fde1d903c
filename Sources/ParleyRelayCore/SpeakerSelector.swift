import ParleyWire

/// Chooses which members of a room are forwarded: at most `capacity` speakers, ranked by their smoothed
/// RFC 6464 audio level, with hysteresis so the choice does not flap.
///
/// Rules, in order, when a member not forwarded sends a speech packet:
/// 1. a free slot is taken at once (a speaker who starts talking is forwarded from its first loud packet);
/// 2. else the slot of the holder silent longest, if silent for `releaseAfter`;
/// 3. else the slot of the quietest holder, if the newcomer is `hysteresis` dB louder (smoothed) and the holder
///    has held its slot for `minimumDwell`.
/// Pure logic: the caller passes `now` and the level from each packet.
public struct SpeakerSelector: Sendable {
    /// One member's speech state.
    public struct State: Sendable, Equatable {
        /// Exponentially smoothed loudness in dB above −127 dBov (0 = silence, 127 = full scale).
        public var loudness: Float = 0
        /// When the member last sent a speech packet (nil: never).
        public var lastSpeech: Instant?
        /// Whether the member holds a forwarding slot.
        public var forwarded = false
        /// When it took the slot.
        public var forwardedSince = Instant.origin
    }

    /// Slots.
    public let capacity: Int
    /// When a packet is speech (its level threshold) and how long a speaker stays speaking.
    public let rules: SpeechRules
    /// See the type's rules.
    public let releaseAfter: Interval
    /// See the type's rules.
    public let minimumDwell: Interval
    /// See the type's rules.
    public let hysteresis: Float
    /// Members holding slots, in the order they took them.
    public private(set) var forwarded: [UInt32] = []
    private var states: [UInt32: State] = [:]

    /// A selector with `capacity` slots.
    public init(capacity: Int, rules: SpeechRules = .standard, releaseAfter: Interval = .milliseconds(1500),
                minimumDwell: Interval = .milliseconds(500), hysteresis: Float = 6) {
        self.capacity = max(1, capacity)
        self.rules = rules
        self.releaseAfter = releaseAfter
        self.minimumDwell = minimumDwell
        self.hysteresis = hysteresis
        forwarded.reserveCapacity(self.capacity)
    }

    /// Members whose state is kept (every member that sent a packet and has not been removed).
    public var trackedMembers: Int { states.count }

    /// The state of one member (a default state when unknown).
    public func state(of member: UInt32) -> State { states[member] ?? State() }

    /// Whether the member holds a slot.
    @inline(__always)
    public func isForwarded(_ member: UInt32) -> Bool {
        for m in forwarded where m == member { return true }
        return false
    }

    /// Takes one packet's level (0 loudest … 127 silence); returns true when the forwarded set changed.
    public mutating func observe(_ member: UInt32, level: UInt8, now: Instant) -> Bool {
        let loud = AudioLevel.loudness(level: level)
        let speech = rules.isSpeech(level: level)
        // One hash lookup per packet: the state is updated in place.
        let s = Self.update(&states[member, default: State()], loud: loud, speech: speech, now: now)
        guard speech, !s.forwarded else { return false }

        if forwarded.count < capacity {
            take(member, now: now)
            return true
        }
        // A holder silent long enough gives way to anyone speaking.
        var longestSilent: (id: UInt32, since: Instant)?
        var quietest: (id: UInt32, loudness: Float)?
        for id in forwarded {
            let h = states[id] ?? State()
            let last = h.lastSpeech ?? h.forwardedSince
            if now - last >= releaseAfter, longestSilent == nil || last < longestSilent!.since { longestSilent = (id, last) }
            if now - h.forwardedSince >= minimumDwell, quietest == nil || h.loudness < quietest!.loudness { quietest = (id, h.loudness) }
        }
        if let victim = longestSilent?.id {
            release(victim)
            take(member, now: now)
            return true
        }
        if let q = quietest, s.loudness > q.loudness + hysteresis {
            release(q.id)
            take(member, now: now)
            return true
        }
        return false
    }

    /// Instant attack, slow release (~10 packets to fall): a talker ranks at its level from its first word,
    /// and a word's pause does not drop it; the dwell and margin in `observe` keep the choice from flapping.
    @inline(__always)
    private static func update(_ s: inout State, loud: Float, speech: Bool, now: Instant) -> State {
        s.loudness = loud > s.loudness ? loud : s.loudness + 0.1 * (loud - s.loudness)
        if speech { s.lastSpeech = now }
        return s
    }

    /// Forgets a member (left or muted); returns true when it held a slot.
    @discardableResult
    public mutating func remove(_ member: UInt32) -> Bool {
        let held = isForwarded(member)
        if held { release(member) }
        states[member] = nil
        return held
    }

    /// Forwarded members heard speaking within `hold` (the rules' hold unless given), loudest first, with their
    /// smoothed level (RFC 6464 scale).
    public func speaking(now: Instant, hold: Interval? = nil) -> [(member: UInt32, level: UInt8)] {
        let hold = hold ?? rules.hold
        var out: [(member: UInt32, level: UInt8, loudness: Float)] = []
        for id in forwarded {
            let s = states[id] ?? State()
            if let last = s.lastSpeech, now - last <= hold {
                out.append((id, AudioLevel.level(loudness: s.loudness), s.loudness))
            }
        }
        out.sort { $0.loudness > $1.loudness || ($0.loudness == $1.loudness && $0.member < $1.member) }
        return out.map { ($0.member, $0.level) }
    }

    private mutating func take(_ member: UInt32, now: Instant) {
        forwarded.append(member)
        states[member, default: State()].forwarded = true
        states[member, default: State()].forwardedSince = now
    }

    private mutating func release(_ member: UInt32) {
        forwarded.removeAll { $0 == member }
        states[member]?.forwarded = false
    }
}
