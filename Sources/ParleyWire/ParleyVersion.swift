/// The release both programs report (`parley --version`, `parley-relay --version` and the relay's ready line): one
/// definition, so the client and the relay built from one tree cannot disagree about it.
public enum ParleyVersion {
    /// The version string, `MAJOR.MINOR.PATCH`; the signalling protocol version is separate (`SignallingMessage`).
    public static let string = "0.14.0"
}
