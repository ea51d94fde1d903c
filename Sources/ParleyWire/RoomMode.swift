// The room modes a token, the API, the config and the welcome name.

/// How a room carries its speakers to its members: the one list of modes. Tokens, the API, the config and the welcome
/// carry it as its name (`rawValue`); everywhere else it is this type.
public enum RoomMode: String, CaseIterable, Sendable, CustomStringConvertible {
    /// Every member hears the loudest few speakers' own streams, forwarded.
    case forward
    /// Every member hears one mixed stream: the shared mix, or a minus-one mix while it speaks itself.
    case mix
    /// Members who may publish hear each other forwarded; members who may not hear one shared mix.
    case hybrid

    /// "forward, mix or hybrid", for error messages.
    public static let choices = "forward, mix or hybrid"

    /// Whether `name` is a room mode.
    public static func isValid(_ name: String) -> Bool { RoomMode(rawValue: name) != nil }

    /// Its name, as tokens, the API and the welcome carry it.
    public var description: String { rawValue }
}
