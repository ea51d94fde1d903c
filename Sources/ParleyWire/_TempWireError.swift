// TEMP until the wire branch merges.
public enum WireError: Error, Equatable, Sendable {
    case truncated, badVersion, badPadding, badCSRCCount, badExtension, badLength, unknownType, bufferTooSmall, badField
    public var reason: String { "\(self)" }
}
