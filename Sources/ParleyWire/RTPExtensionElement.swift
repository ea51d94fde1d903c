// One RFC 8285 header extension element, as a value for building packets (not used on the forwarding path).

/// An extension element to serialize: a local ID and its data bytes.
public struct RTPExtensionElement: Equatable, Sendable {
    /// Local identifier: 1...14 fits the one-byte form, 1...255 the two-byte form.
    public var id: UInt8
    /// Element data; 1...16 bytes fits the one-byte form, 0...255 the two-byte form.
    public var data: [UInt8]

    /// An element with `id` and `data`.
    public init(id: UInt8, data: [UInt8]) {
        self.id = id
        self.data = data
    }

    /// An RFC 6464 client-to-mixer audio level element (one byte: V flag, then 7-bit level).
    public static func audioLevel(id: UInt8, _ level: AudioLevel) -> RTPExtensionElement {
        RTPExtensionElement(id: id, data: [level.byte])
    }

    /// An RFC 6465 mixer-to-client audio level element: one byte per CSRC, in CSRC-list order,
    /// each a 0 bit then the 7-bit -dBov level (values above 127 are clamped to 127).
    public static func csrcAudioLevels(id: UInt8, _ levels: [UInt8]) -> RTPExtensionElement {
        RTPExtensionElement(id: id, data: levels.map { min($0, AudioLevel.levelMask) })
    }
}
