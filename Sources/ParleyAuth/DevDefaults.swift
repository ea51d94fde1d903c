/// The development credentials `parley-relay` and `parley` fall back to when none are configured.
/// They are public: a relay running with them prints a warning, and production configs must set their own.
public enum DevDefaults {
    /// The dev API key.
    public static let apiKey = "devkey"
    /// The dev API secret.
    public static let apiSecret = "parley-dev-secret-do-not-use-in-production"
}
