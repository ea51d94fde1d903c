/// Why a packet could not be parsed or serialized. Small, `Equatable`, and free of payload so throwing it never allocates.
public enum WireError: Error, Equatable, Sendable {
    /// The buffer ends before a fixed-size header or field does.
    case truncated
    /// The version field is not 2.
    case badVersion
    /// The padding bit is set but the padding count is 0 or larger than the space left for it.
    case badPadding
    /// The CSRC list (or an RTCP item count) runs past the end of the buffer.
    case badCSRCCount
    /// A header extension block or one of its elements runs past its bounds, or cannot be encoded.
    case badExtension
    /// A length field disagrees with the buffer or with the packet's own counts.
    case badLength
    /// The packet type (or feedback format) is not the one this parser reads.
    case unknownType
    /// The caller's output buffer is smaller than `serializedSize`.
    case bufferTooSmall
    /// A field value cannot be represented on the wire (out of range, too many items, empty list).
    case badField

    /// A short human-readable description, suitable for a log line.
    public var reason: String {
        switch self {
        case .truncated: "packet truncated"
        case .badVersion: "version is not 2"
        case .badPadding: "padding count is 0 or exceeds the packet"
        case .badCSRCCount: "CSRC/item list runs past the end of the packet"
        case .badExtension: "malformed header extension"
        case .badLength: "length field disagrees with the packet"
        case .unknownType: "unexpected packet type or format"
        case .bufferTooSmall: "output buffer too small"
        case .badField: "field value out of range"
        }
    }
}
