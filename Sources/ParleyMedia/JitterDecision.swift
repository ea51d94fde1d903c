// What `JitterBuffer.pull(now:)` hands the playout side, and the buffer's counters.

import ParleyWire

/// A frame handed out by `pull`; `payload` points into the buffer's own storage and is valid until the next
/// `insert` or `pull`.
public struct JitterFrame {
    /// RTP sequence number of the packet.
    public var sequenceNumber: UInt16
    /// RTP timestamp of the packet.
    public var timestamp: UInt32
    /// The packet's payload, borrowed from the buffer's slot storage.
    public var payload: UnsafeRawBufferPointer

    /// A frame view over `payload`.
    public init(sequenceNumber: UInt16, timestamp: UInt32, payload: UnsafeRawBufferPointer) {
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.payload = payload
    }
}

/// What the playout side should do for the next 20 ms of output.
///
/// Accounting (what jitter-bench and `JitterStats` count for each case):
/// - `.play(f)`: `f` is played at this pull's time (one played packet, one output frame). A DTX packet is never
///   returned by `.play`; it yields `.silence` but still counts as a played packet (`stats.played`).
/// - `.accelerate(a, b)`: both packets are played at this pull's time (two played packets, one output frame);
///   time-stretching, counted in `stats.accelerated`.
/// - `.fec(next)`: the due frame is rebuilt from `next`'s in-band FEC. The missing packet is *not* played (if it
///   arrives later it is late-dropped); the output frame is **not concealment** (as NetEQ): it counts in
///   `stats.fecRecovered`, not in `concealedFrames` or JICO. `next` stays queued and is played by a later pull.
/// - `.conceal`: the due frame is missing; one concealed output frame (Opus PLC). Counts in `concealedFrames`,
///   a run of them is one concealment event, and if the packet arrives afterwards it is jitter-induced.
/// - `.expand`: preemptive expansion during speech; no packet consumed, one output frame, grows the delay by a
///   frame. Time-stretching (`stats.expanded`), not concealment.
/// - `.silence`: nothing is due in a talkspurt (before the first packet, a DTX gap, a played DTX packet, or a
///   silence-time delay adjustment). Not concealment. (After a second of continuous concealment the buffer also
///   falls back to `.silence`, counting those frames as concealed.)
public enum JitterDecision {
    /// Decode this frame.
    case play(JitterFrame)
    /// Decode both and time-compress 40 ms into 20 ms (shrinks the delay by one frame).
    case accelerate(JitterFrame, JitterFrame)
    /// The due frame is missing: decode FEC from this *next* frame's payload (the next frame stays queued).
    case fec(JitterFrame)
    /// The due frame is missing (lost or late): Opus PLC.
    case conceal
    /// Preemptive expansion: PLC-like/stretched 20 ms without consuming a frame (grows the delay by one frame).
    case expand
    /// Not in a talkspurt: output silence or comfort noise; not concealment.
    case silence
}

/// Counters of a `JitterBuffer`, in the spirit of NetEQ's network statistics. Cumulative since init or `reset()`.
public struct JitterStats: Sendable, Equatable {
    /// Packets accepted into the buffer (not counting duplicates, late or restart-probe packets).
    public var inserted: Int = 0
    /// Packets dropped because the same sequence number was already held or played.
    public var duplicates: Int = 0
    /// Packets that arrived after their play time had passed, or were skipped while held.
    public var lateDropped: Int = 0
    /// Packets evicted because the buffer was full.
    public var overflowDropped: Int = 0
    /// Packets played (`.play`, both of `.accelerate`, and DTX packets played as silence).
    public var played: Int = 0
    /// `.accelerate` decisions.
    public var accelerated: Int = 0
    /// `.expand` decisions.
    public var expanded: Int = 0
    /// Output frames concealed (`.conceal`, and `.silence` after a second of concealment).
    public var concealedFrames: Int = 0
    /// Runs of consecutive concealed frames.
    public var concealmentEvents: Int = 0
    /// `.fec` decisions (missing frames rebuilt from the next packet's FEC).
    public var fecRecovered: Int = 0
    /// `.silence` decisions that were not concealment.
    public var silenceFrames: Int = 0
    /// Missing frames filled from a redundant copy (RFC 2198 RED) in a later packet (`JitterBuffer.insertRedundant`).
    public var redundantRecovered: Int = 0
    /// Redundant copies not needed: their frame was held, played, or past its turn (or the copy was off the stream).
    public var redundantUnused: Int = 0
    /// Concealed frames whose packet later arrived (late) — best effort, as NetEQ.
    public var jitterInducedConcealedFrames: Int = 0
    /// Playout delay at the last pull above the fastest transit recently seen, in ms.
    public var currentDelayMilliseconds: Double = 0
    /// The adaptive target for `currentDelayMilliseconds`, in ms.
    public var targetDelayMilliseconds: Double = 0
    /// The adaptive target as a span (to the nearest nanosecond).
    public var targetDelay: Interval { Interval(seconds: targetDelayMilliseconds / 1000) }
    /// How far the sender's clock runs from ours, as measured (`ClockSkew`; 0 until known or when under 0.15 %):
    /// +0.005 when it sends 0.5 % slower than real time here (the buffer drains), −0.005 when 0.5 % faster.
    public var senderClockSkew: Double = 0
    /// Sender restarts detected (new SSRC, or a sequence/timestamp jump of more than a few seconds).
    public var resets: Int = 0
    /// Talkspurts that ended with the sender falling silent (an RTCP BYE, or `JitterBuffer.senderSilence` without a
    /// packet after a speech frame): the frames concealed while waiting are taken back from `concealedFrames`, as
    /// a sender that simply stops lost nothing.
    public var senderStops: Int = 0
    /// Talkspurts resumed by a frame the playout held for (concealing in its place) until it came, late: the delay
    /// grew by the wait instead of the frame being thrown away (`JitterBuffer.pullMissing`).
    public var delaySteps: Int = 0
    /// Times the transit floor moved up at once because the path stayed slower after such a wait.
    public var floorSteps: Int = 0

    /// All counters zero.
    public init() {}
}
