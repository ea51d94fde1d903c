/// Monotonic and wall-clock time of one moment, as the core takes it.
public struct Moment: Sendable, Equatable {
    /// Monotonic nanoseconds.
    public var monotonic: Int64
    /// Milliseconds since the Unix epoch.
    public var unixMilliseconds: Int64

    /// A moment.
    public init(monotonic: Int64, unixMilliseconds: Int64) {
        self.monotonic = monotonic
        self.unixMilliseconds = unixMilliseconds
    }

    /// Seconds since the Unix epoch.
    public var unixSeconds: Int64 { unixMilliseconds / 1000 }
}
