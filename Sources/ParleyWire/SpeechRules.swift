// When a packet counts as speech and how long a speaker stays speaking: one set of rules for the relay (forwarding
// slots, the `speakers` message, the mix's contributors) and the client (who it hears speaking), configured in one place.

/// The speech rules relay and client share: a packet is speech when its RFC 6464 level is at or below `levelThreshold`
/// (louder); a packet without a level is speech at `unlabelledSpeechLevel` when its payload is over
/// `unlabelledSpeechMinimumPayload` bytes (a real Opus frame, from plain RTP tools), silence otherwise (DTX); a member
/// stays speaking for `hold` after its last speech packet. Pure values.
public struct SpeechRules: Equatable, Sendable {
    /// RFC 6464 level (−dBov) at or below which a packet counts as speech.
    public var levelThreshold: UInt8
    /// How long a member stays speaking after its last speech packet.
    public var hold: Interval

    /// Level given to a packet that carries none but whose payload is a real frame.
    public static let unlabelledSpeechLevel: UInt8 = 40
    /// Payloads of at most this many bytes (Opus DTX and comfort noise) count as silence when unlabelled.
    public static let unlabelledSpeechMinimumPayload = 10

    /// The defaults: level 60, hold 600 ms.
    public static let standard = SpeechRules(levelThreshold: 60, hold: .milliseconds(600))

    /// Rules with the given threshold and hold.
    public init(levelThreshold: UInt8, hold: Interval) {
        self.levelThreshold = levelThreshold
        self.hold = hold
    }

    /// The level a packet counts at: its RFC 6464 level, or for a packet without one, speech level for a payload over
    /// `unlabelledSpeechMinimumPayload` bytes, silence (127) otherwise.
    @inlinable
    public static func level(_ level: UInt8?, payloadBytes: Int) -> UInt8 {
        if let level { return level }
        return payloadBytes > unlabelledSpeechMinimumPayload ? unlabelledSpeechLevel : AudioLevel.silence
    }

    /// Whether a packet at `level` is speech.
    @inlinable
    public func isSpeech(level: UInt8) -> Bool { level <= levelThreshold }

    /// Whether a member whose last speech packet arrived at `lastSpeech` is still speaking at `now`.
    @inlinable
    public func isSpeaking(lastSpeech: Instant, now: Instant) -> Bool { now - lastSpeech <= hold }
}
