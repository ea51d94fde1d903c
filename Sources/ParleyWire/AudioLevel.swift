// RFC 6464 client-to-mixer audio level, as carried in one header extension byte:
//
//  0                   1
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |  ID   | len=0 |V| level       |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

/// The audio level of one packet (RFC 6464): a voice-activity flag and the level in -dBov (0 loudest, 127 silence).
public struct AudioLevel: Equatable, Sendable {
    /// Bit 7 of the byte: the sender's voice activity detector thinks this packet holds speech.
    @usableFromInline static let voiceMask: UInt8 = 0x80
    /// The low 7 bits: level in -dBov.
    @usableFromInline static let levelMask: UInt8 = 0x7F

    /// Whether the sender flagged this packet as voice.
    public var voice: Bool
    /// Level in -dBov, `0...127` (0 is loudest, 127 is silence or quieter).
    public var level: UInt8

    /// A level; values above 127 are clamped to 127.
    public init(voice: Bool, level: UInt8) {
        self.voice = voice
        self.level = min(level, Self.levelMask)
    }

    /// Decodes the RFC 6464 byte.
    init(byte: UInt8) {
        self.voice = byte & Self.voiceMask != 0
        self.level = byte & Self.levelMask
    }

    /// The RFC 6464 byte.
    @inlinable
    public var byte: UInt8 { (voice ? Self.voiceMask : 0) | (level & Self.levelMask) }

    /// The quietest level, `127` (−127 dBov or quieter: silence).
    public static let silence: UInt8 = 127

    /// Loudness on the scale speaker ranking uses, in dB above −127 dBov (0 = silence, 127 = full scale), of a level
    /// in −dBov (levels above 127 count as 127).
    @inlinable
    public static func loudness(level: UInt8) -> Float { Float(silence - min(level, silence)) }

    /// The level in −dBov (`0...127`) of a loudness in dB above −127 dBov, rounded to the nearest dB and clamped.
    @inlinable
    public static func level(loudness: Float) -> UInt8 {
        UInt8(max(0, min(Float(silence), (Float(silence) - loudness).rounded())))
    }
}
