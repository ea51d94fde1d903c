/// Why a WebRTC input was refused: an SDP offer the relay cannot answer, a STUN message it will not take, a DTLS
/// handshake that failed. `reason` is one line a client can show.
public struct WebRTCError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A short machine-readable code (`no_audio`, `no_opus`, `bad_integrity`, …).
    public var code: String
    /// One line for people.
    public var reason: String

    /// An error with `code` and `reason`.
    public init(_ code: String, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code): \(reason)" }
}
