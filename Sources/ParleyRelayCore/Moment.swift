import ParleyWire

/// Monotonic and wall-clock time of one moment, as the core takes it.
public struct Moment: Sendable, Equatable {
    /// The monotonic clock's instant.
    public var monotonic: Instant
    /// Milliseconds since the Unix epoch.
    public var unixMilliseconds: Int64

    /// A moment.
    public init(monotonic: Instant, unixMilliseconds: Int64) {
        self.monotonic = monotonic
        self.unixMilliseconds = unixMilliseconds
    }

    /// Seconds since the Unix epoch.
    public var unixSeconds: Int64 { unixMilliseconds / 1000 }
}
