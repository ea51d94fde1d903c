// The room modes a token, the API, the config and the welcome name.

/// How a room carries its speakers to its members.
public enum RoomMode {
    /// Every member hears the loudest few speakers' own streams, forwarded.
    public static let forward = "forward"
    /// Every member hears one mixed stream: the shared mix, or a minus-one mix while it speaks itself.
    public static let mix = "mix"
    /// Members who may publish hear each other forwarded; members who may not hear one shared mix.
    public static let hybrid = "hybrid"
    /// Every mode, in the order the documentation lists them.
    public static let all = [forward, mix, hybrid]
    /// "forward, mix or hybrid", for error messages.
    public static let choices = "forward, mix or hybrid"

    /// Whether `name` is a room mode.
    public static func isValid(_ name: String) -> Bool { all.contains(name) }
}
