import ParleyWire

// Settings of the adaptive jitter buffer. Plain values; no behaviour lives here.

/// Settings of a `JitterBuffer`: clock, frame size, fixed storage and the bounds of the adaptive target delay.
public struct JitterBufferConfig: Sendable {
    /// RTP clock rate of the stream in Hz (Opus: always 48 000).
    public var clockRate: Int = 48_000
    /// Samples per output pull (20 ms at 48 kHz). Packets of other durations are accepted: their duration is the
    /// timestamp delta to the next packet.
    public var frameSamples: Int = 960
    /// Packets held at most; a packet that does not fit evicts the oldest held one (counted as `overflowDropped`).
    public var capacity: Int = 64
    /// Largest payload stored; longer payloads are truncated to this many bytes.
    public var maxPayloadBytes: Int = 1500
    /// Floor for the target delay (a relay may want 20 ms), in whole milliseconds.
    public var minimumDelay: Interval = .zero
    /// Ceiling for the target delay, in whole milliseconds.
    public var maximumDelay: Interval = .seconds(1)
    /// Whether the sender's payloads carry in-band FEC (Opus LBRR) for the previous frame. When true, a missing
    /// frame whose successor is present is answered with `.fec(next)`, and the delay target only has to cover the
    /// later of each frame and its successor one frame earlier (see `JitterDelayEstimator`). When false, `.fec` is
    /// never returned and the target covers every frame on its own.
    public var inbandFEC: Bool = true
    /// Fraction of frames the target delay aims to have playable: on time, or (with `inbandFEC`) rebuildable from
    /// the next frame's FEC. The quantile of the relative delay distribution used as the target; 0.98 tolerates
    /// about 2 % of frames lost to lateness.
    public var delayQuantile: Double = 0.98
    /// With `inbandFEC`: fraction of frames the target keeps on time on their own, so FEC (lower quality than the
    /// primary encoding) covers lateness only in the tail. The target is the larger of both quantiles.
    public var onTimeQuantile: Double = 0.97
    /// While the delay estimate is young (a stream's first 50 packets), wait for a late frame (`.expand`) instead of
    /// concealing and skipping it (`JitterBuffer.startupPackets`). False: conceal from the start, never moving the
    /// timeline in the first talkspurt.
    public var startupWaits: Bool = true
    /// Per-packet forgetting factor of the delay histograms (NetEQ's 0.9993 ≈ a memory of 1 400 packets, 28 s at
    /// 20 ms): long enough that a rare delay spike holds too little weight to move the quantile.
    public var forgetFactor: Double = 0.9993

    /// The defaults: 48 kHz, 20 ms frames, 64 slots of 1500 bytes, target between 0 and 1000 ms, FEC on.
    public init() {}
}
