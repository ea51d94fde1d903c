// The adaptive jitter buffer: state, insert path and restart detection. The playout side is in
// JitterBuffer+Playout.swift. Pure: never reads a clock; `arrival` and `now` are `Instant`s, taken
// to nanoseconds at the public boundary (the timing model is integer nanoseconds and floating milliseconds).
import ParleyWire

/// The adaptive jitter buffer. Pure: never reads a clock; `now` and `arrival` are `Instant`s on the monotonic clock.
///
/// Timing model. Every packet's *transit* is `arrival − timestamp/clockRate` on the receiver's clock; the
/// fastest transit of the last few seconds is the floor (`JitterTransitFloor`), and a packet's *relative delay*
/// is its transit above the floor. A frame with timestamp `ts` pulled at `now` has playout delay
/// `p = now − ts/clockRate − floor`, and it is on time exactly when its relative delay is at most `p`.
/// The target delay `T` is a high quantile of relative delay with forgetting (`JitterDelayEstimator`); with
/// in-band FEC it is the larger of the `onTimeQuantile` of `r[n]` and the `delayQuantile` of
/// `min(r[n], r[n+1] + frame)`, the delay at which n plays or is rebuilt from n+1's FEC. Talkspurts start at the
/// first pull with `p ≥ T` (silence-time adjustment); during speech `.accelerate` runs when `p − frame − T` is
/// large, has stayed above a small hysteresis for five seconds, or the audio is in a pause between words (stretches
/// during speech cost quality, so small excesses wait for a quiet moment), and `.expand` when `p < T` (lateness begins
/// there) and either the audio is in a pause or the next frame has not arrived yet (it is at risk); with later frames
/// already held, the shortfall waits for a pause. Before its own packets have shown the path, the target starts from
/// the caller's `startupPrior`.
///
/// Sequence numbers and timestamps are unwrapped to 64 bits, so 65535→0 and 2³²−1→0 are ordinary steps.
/// A new SSRC restarts at once; a jump of more than `restartJump` in sequence or timeline restarts when
/// two consecutive packets agree on the new timeline (a single stray packet is ignored).
public final class JitterBuffer {
    /// Silence/concealment states of the playout side.
    enum Mode { case silent, speech }
    /// What happened to a sequence number at playout, for late/duplicate/jitter-induced accounting.
    enum Fate: UInt8 { case none, played, concealed, recovered, skipped }

    let config: JitterBufferConfig
    let store: JitterPacketStore
    /// Quantile of relative delay `r[n]` (`onTimeQuantile` with FEC, `delayQuantile` without).
    var estimator: JitterDelayEstimator
    /// With FEC: quantile `delayQuantile` of `min(r[n], r[n+1] + frame)`.
    var recoverableEstimator: JitterDelayEstimator
    var floor = JitterTransitFloor()
    private var sequenceUnwrapper = SequenceUnwrapper()
    private var timestampUnwrapper = TimestampUnwrapper()
    var ssrc: UInt32?
    private var timestampOrigin: Int64 = 0
    var highestSequence: Int64?
    /// The first sequence number of the current stream (it has no predecessor to be rebuilt from).
    private var firstSequence: Int64?
    var restartProbe: (sequence: UInt16, timestamp: UInt32)?
    private var recentTransit: [(sequence: Int64, transit: Int64)]
    private var fates: [(sequence: Int64, fate: Fate)]

    var mode = Mode.silent
    /// Next extended sequence number to play (nil before the first talkspurt).
    var nextSequence: Int64?
    /// Timestamp (relative to the stream's first) of the next output frame; meaningful in `.speech`.
    var playTimestamp: Int64 = 0
    var concealRun = 0
    /// Frames produced (concealed or rebuilt) in place of the due frame `nextSequence` while the playout holds for it.
    var heldFrames = 0
    var inOutage = false
    /// After a held frame arrived (`pullMissing`): the lowest transit of the next `stepProbePackets` packets. If even
    /// that is well above the floor, the path's delay stepped up (a sender's capture stall, a new route) and the
    /// floor moves to it at once rather than over its window; a burst that catches up leaves the floor alone.
    struct StepProbe { var remaining: Int; var minimum: Int64 }
    var stepProbe: StepProbe?
    let stepProbePackets = 25
    /// The probe's packets (sequence, transit), last first; their delay samples wait for the probe's verdict.
    var probeSamples: [(sequence: Int64, transit: Int64)]
    /// Arrival time (ns) of the last packet inserted; nil before the first.
    var lastArrival: Int64?
    /// The sender said it has stopped (RTCP BYE) and nothing has arrived since.
    var senderEnded = false
    var lastWasStretch = false
    var targetMilliseconds: Double = 0
    var targetIsStale = true

    /// Counters since init or `reset()`.
    public internal(set) var stats = JitterStats()

    /// Frames of continuous concealment after which the buffer stops concealing and waits as in silence.
    let maximumConcealRun = 50
    /// No packet for this long after a speech frame, with nothing after the due frame held: the sender stopped (or
    /// paused without DTX), not a loss. The talkspurt ends in silence instead of concealing on, and what was
    /// concealed while waiting is not counted (`JitterStats.senderStops`). 500 ms, not less: a loss burst on a bad
    /// network outlasts 200 ms, and ending its talkspurt early cost the harsh trace 0.12 PESQ-WB (2.41 → 2.29 at 200 ms,
    /// `python3 Benchmarks/scripts/quality/playout.py --expected-loss 2`; 2.41 again at 500 ms).
    public static let senderSilence: Interval = .milliseconds(500)
    /// Jump in sequence numbers or timeline (whole seconds) taken as a sender restart.
    let restartJump: Interval = .seconds(5)
    /// Excess over the target (ms) beyond which the buffer drops late audio and restarts at the target rather
    /// than accelerating a frame at a time.
    let maximumExcessMilliseconds = 400.0
    /// Every stretch during speech moves the timeline under the listener, so the delay may sit in a band around
    /// the target and is brought back at the next silence (talkspurts start at the target). Acceleration runs
    /// when a frame less would still leave `accelerateHysteresis` above the target and that excess is large
    /// (`largeExcessMilliseconds`), or has lasted `persistentExcessPulls` pulls (5 s) without a silence, or the
    /// caller says the listener is in a pause (where shortening is inaudible).
    let accelerateHysteresis = 5.0
    /// In speech, a shortfall below the target is met by one `expand` at once, but another within
    /// `expandSpacingPulls` (half a second) waits until the delay is `expandShortfall` ms below the target. In the
    /// audio an expansion lengthens by one pitch period, not a frame, so the frames' delay catches up only after
    /// several: a sender whose clock runs slow (ffmpeg at 0.995×) had one every other pull through its speech
    /// (18 in 30 s, PESQ-WB 3.75, `playout.py` on an ffmpeg-paced trace).
    let expandShortfall = 10.0
    let expandSpacingPulls = 25
    var pullsSinceExpand = Int.max / 2
    let largeExcessMilliseconds = 45.0
    /// A sender whose clock runs slow drains the buffer all through its speech (0.5 %: 5 ms a second), and each
    /// expansion in speech is heard. So in a pause the buffer builds the delay up past the target by what the drift
    /// will take until the next pause (`skewLookaheadMilliseconds` of it, at most `maximumPauseSurplusMilliseconds`:
    /// below the frame plus hysteresis at which a pause accelerates), and the speech that follows plays unstretched.
    var pauseSurplusMilliseconds: Double {
        min(maximumPauseSurplusMilliseconds, max(0, floor.skew.value) * skewLookaheadMilliseconds)
    }
    let skewLookaheadMilliseconds = 4_000.0
    let maximumPauseSurplusMilliseconds = 20.0
    let persistentExcessPulls = 250
    /// Frames of delay a held frame's late arrival added (`heldFrames` at the merge), not yet taken back: that excess
    /// is the path's lateness already played through, so it goes after `heldSurplusPulls` pulls above the target
    /// rather than waiting for a pause or for `persistentExcessPulls`.
    var heldSurplusFrames = 0
    let heldSurplusPulls = 25
    /// Pulls in a row with the delay `accelerateHysteresis` above the target plus a frame.
    var excessPulls = 0
    /// Start-up: while the delay estimate holds fewer than this many samples (the stream's first second), a due
    /// frame that has not arrived, with nothing after it held, is waited for (`.expand`, up to `startupWaitFrames`
    /// pulls each) instead of being concealed and skipped. The first talkspurt starts at the delay the network has
    /// shown so far and grows only as far as late packets need; the excess is taken back in pauses.
    let startupPackets = 50
    let startupWaitFrames = 3
    /// Pulls spent waiting for the current due frame at start-up.
    var startupWaitPulls = 0
    /// The caller's hint at this pull: the listener is in a pause (see `pull(now:quiet:)`).
    var quietHint = false
    /// Set by a receiver that asks for lost packets again (RFC 4585 NACK) and has had them resent: the round trip a
    /// repair takes. Each gap then counts in the delay estimate as arriving that long after it was seen, so where
    /// losses are frequent the target leaves room for their repair (a repair that comes after its frame's turn is
    /// wasted); where they are rare the quantile is unmoved. Nil: losses are not repaired, the target ignores them.
    public var repairRoundTrip: Interval?
    /// Where the target starts before the estimate knows the path (from what the caller measured, e.g. the spread of
    /// its pings' round trips: `JitterPrior` in the client): the target is at least this while the estimate holds fewer
    /// than `priorHoldPackets` samples, then the floor fades to nothing over as many more. Nil: no prior.
    public var startupPrior: Interval? { didSet { targetIsStale = true } }
    let priorHoldPackets = 250
    /// The prior's floor for the current estimate (ms).
    var priorFloor: Double {
        guard let prior = startupPrior else { return 0 }
        let n = estimator.samples
        let fade = n <= priorHoldPackets ? 1 : max(0, 1 - Double(n - priorHoldPackets) / Double(priorHoldPackets))
        return Double(prior.milliseconds) * fade
    }
    /// Gaps longer than this (an outage, a restart) add no repair samples.
    static let repairGapLimit: Int64 = 8
    /// A buffer with fixed storage for `config.capacity` packets of `config.maxPayloadBytes`.
    public init(config: JitterBufferConfig = JitterBufferConfig()) {
        self.config = config
        store = JitterPacketStore(capacity: config.capacity, maxPayloadBytes: config.maxPayloadBytes)
        estimator = JitterBuffer.makeEstimator(config, quantile: config.inbandFEC ? config.onTimeQuantile : config.delayQuantile)
        recoverableEstimator = JitterBuffer.makeEstimator(config, quantile: config.delayQuantile)
        recentTransit = Array(repeating: (.min, 0), count: 32)
        probeSamples = Array(repeating: (.min, 0), count: stepProbePackets)
        fates = Array(repeating: (.min, .none), count: 512)
    }

    private static func makeEstimator(_ config: JitterBufferConfig, quantile: Double) -> JitterDelayEstimator {
        JitterDelayEstimator(ceilingMilliseconds: Int(max(config.maximumDelay.milliseconds, 1)),
                             quantile: quantile, forgetFactor: config.forgetFactor)
    }

    /// The target before clamping: the larger of the on-time and the FEC-recoverable quantiles.
    var unclampedTarget: Double {
        max(priorFloor, config.inbandFEC ? max(estimator.target(), recoverableEstimator.target()) : estimator.target())
    }

    /// Forgets all packets, playout state, the delay estimate and the counters, as if newly created.
    public func reset() {
        restart()
        estimator = JitterBuffer.makeEstimator(config, quantile: config.inbandFEC ? config.onTimeQuantile : config.delayQuantile)
        recoverableEstimator = JitterBuffer.makeEstimator(config, quantile: config.delayQuantile)
        stats = JitterStats()
        targetIsStale = true
    }

    /// Sender restart: forgets packets, the timeline and the floor; keeps the delay histogram and the counters.
    private func restart() {
        store.removeAll()
        floor.reset()
        sequenceUnwrapper = SequenceUnwrapper()
        timestampUnwrapper = TimestampUnwrapper()
        ssrc = nil
        highestSequence = nil
        firstSequence = nil
        restartProbe = nil
        for i in recentTransit.indices { recentTransit[i] = (.min, 0) }
        for i in fates.indices { fates[i] = (.min, .none) }
        mode = .silent
        nextSequence = nil
        concealRun = 0
        heldFrames = 0
        heldSurplusFrames = 0
        stepProbe = nil
        inOutage = false
        lastWasStretch = false
        lastArrival = nil
        senderEnded = false
    }

    /// The sender said it stopped (RTCP BYE): once what it sent has played, the talkspurt ends in silence at once
    /// instead of concealing. A packet arriving later starts a talkspurt as usual.
    public func senderStopped() {
        senderEnded = true
    }

    /// The packets up to `sequenceNumber` were played elsewhere (a mixer forwarded a lone speaker's packets as they
    /// came): forgets those held, and waits in silence for what follows, which starts at the target delay like any
    /// talkspurt. The delay estimate is kept. A number not at or behind the highest received within 32,768 is ignored.
    public func skip(through sequenceNumber: UInt16) {
        guard let highest = highestSequence else { return }
        let back = Int64(UInt16(truncatingIfNeeded: highest) &- sequenceNumber)
        guard back < 32_768 else { return }
        let last = highest - back
        while let held = store.lowest(atOrAbove: nil), held.sequence <= last {
            store.remove(held.sequence)
            setFate(held.sequence, .skipped)
        }
        nextSequence = max(nextSequence ?? last + 1, last + 1)
        mode = .silent
        inOutage = false
        concealRun = 0
        heldFrames = 0
        startupWaitPulls = 0
    }

    // MARK: Time conversions

    /// Nanoseconds of `samples` at the clock rate.
    @inline(__always) func nanoseconds(_ samples: Int64) -> Int64 {
        Interval.seconds(samples).nanoseconds / Int64(config.clockRate)
    }

    /// Frame duration in ms.
    var frameMilliseconds: Double { Double(config.frameSamples) * 1000 / Double(config.clockRate) }

    /// Playout delay (ms) of a frame with relative timestamp `timestamp` pulled at `now`.
    @inline(__always) func playoutDelay(_ timestamp: Int64, now: Int64) -> Double {
        Double(now - nanoseconds(timestamp) - floor.value) / 1e6
    }

    // MARK: Fates

    func setFate(_ sequence: Int64, _ fate: Fate) {
        fates[Int(UInt64(bitPattern: sequence) % UInt64(fates.count))] = (sequence, fate)
    }

    func fate(_ sequence: Int64) -> Fate {
        let f = fates[Int(UInt64(bitPattern: sequence) % UInt64(fates.count))]
        return f.sequence == sequence ? f.fate : .none
    }

    // MARK: Insert

    /// Accepts one received packet. Copies `payload` into a slot; drops duplicates and late packets (counting
    /// them); detects sender restarts; feeds the delay estimator (late packets included; a `retransmission` only
    /// fills its slot; with `repairRoundTrip`, each gap as its repair would arrive). `marker` is accepted but not
    /// needed: a talkspurt start is recognised by its timestamp gap, which also covers senders that do not set the
    /// marker. A 1–2 byte payload is DTX.
    public func insert(sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32, marker: Bool,
                       payload: UnsafeRawBufferPointer, arrival: Instant, retransmission: Bool = false) {
        let arrival = arrival.nanoseconds  // the timing model below is in nanoseconds
        if let current = self.ssrc, current != ssrc {
            restart()
            stats.resets += 1
        }
        guard let (sequence, time) = locate(sequenceNumber, timestamp, arrival: arrival) else { return }
        self.ssrc = ssrc
        let quietFor = lastArrival.map { arrival - $0 } ?? 0
        lastArrival = arrival
        senderEnded = false

        // Duplicates: held, or already played.
        if store.contains(sequence) || fate(sequence) == .played {
            stats.duplicates += 1
            return
        }
        // A retransmission (a packet the receiver asked for again) is played if still in time, but its delay is the
        // repair's round trip, not the path's jitter: it stays out of the delay estimate and the transit floor.
        let transit = arrival - nanoseconds(time)
        if firstSequence == nil { firstSequence = sequence }
        if !retransmission {
            if let rtt = repairRoundTrip, let high = highestSequence, sequence - high > 1, sequence - high <= Self.repairGapLimit {
                // Frames high+1 … sequence−1 are missing; asked for again now, they arrive a round trip from now.
                let frame = nanoseconds(Int64(config.frameSamples))
                for missing in (high + 1)..<sequence {
                    addRepairSample(transit: transit + rtt.nanoseconds + (sequence - missing) * frame,
                                    fecCovers: missing == sequence - 1)
                }
            }
            if false, quietFor >= Self.senderSilence.nanoseconds {
                // Nothing for longer than a pause between words: the floor starts again from what comes now (a sender
                // whose capture stalled that long resumes on a later timeline; its old floor would make every packet
                // look late).
                floor.clear()
            }
            if stepProbe != nil {
                noteStepCandidate(sequence: sequence, transit: transit, arrival: arrival)
            } else {
                floor.add(transit: transit, arrival: arrival)
                addDelaySample(sequence: sequence, transit: transit)
            }
        }
        highestSequence = max(highestSequence ?? sequence, sequence)

        if let next = nextSequence, sequence < next {
            let halfFrame = Int64(config.frameSamples / 2)
            if mode == .speech && time >= playTimestamp - halfFrame {
                // Not late in time: the sender resumed after a pause without DTX, reusing the next sequence
                // numbers. Re-anchor on it as a new talkspurt.
                mode = .silent
                inOutage = false
                concealRun = 0
                heldFrames = 0
                nextSequence = sequence
            } else {
                stats.lateDropped += 1
                if fate(sequence) == .concealed { stats.jitterInducedConcealedFrames += 1 }
                return
            }
        }
        let slot = JitterSlot(sequence: sequence, timestamp: time, rtpSequence: sequenceNumber,
                              rtpTimestamp: timestamp, length: 0, arrival: arrival)
        switch store.store(slot, payload: payload) {
        case .stored: stats.inserted += 1
        case .duplicate: stats.duplicates += 1
        case .tooOld: stats.overflowDropped += 1
        case .evicted: stats.inserted += 1; stats.overflowDropped += 1
        }
    }

    /// Unwraps the packet's numbers onto this stream's 64-bit lines, or returns nil for a packet far off the
    /// timeline that is not (yet) confirmed as a restart. Restarts when two consecutive packets confirm a jump.
    func locate(_ sequenceNumber: UInt16, _ timestamp: UInt32, arrival: Int64) -> (Int64, Int64)? {
        guard let highest = highestSequence else {
            let s = sequenceUnwrapper.unwrap(sequenceNumber)
            timestampOrigin = timestampUnwrapper.unwrap(timestamp)
            return (s, 0)
        }
        var su = sequenceUnwrapper, tu = timestampUnwrapper
        let s = su.unwrap(sequenceNumber)
        let t = tu.unwrap(timestamp) - timestampOrigin
        let framesPerJump = restartJump.wholeSeconds * Int64(config.clockRate / max(config.frameSamples, 1))
        let offTimeline = !floor.isEmpty && abs(arrival - nanoseconds(t) - floor.value) > restartJump.nanoseconds
        if abs(s - highest) <= framesPerJump && !offTimeline {
            restartProbe = nil
            sequenceUnwrapper = su
            timestampUnwrapper = tu
            return (s, t)
        }
        if let probe = restartProbe {
            let ds = sequenceNumber &- probe.sequence
            let dt = timestamp &- probe.timestamp
            if ds >= 1 && ds <= 8 && dt < UInt32(config.clockRate) {
                restart()
                stats.resets += 1
                let s0 = sequenceUnwrapper.unwrap(sequenceNumber)
                timestampOrigin = timestampUnwrapper.unwrap(timestamp)
                return (s0, 0)
            }
        }
        restartProbe = (sequenceNumber, timestamp)
        return nil
    }

    /// A missing frame's delay if it is asked for again (`repairRoundTrip`): in the on-time estimate, and in the
    /// FEC estimate unless the next frame (which has arrived) carries it.
    func addRepairSample(transit: Int64, fecCovers: Bool) {
        let r = Double(transit - floor.value) / 1e6
        estimator.add(r)
        if config.inbandFEC && !fecCovers { recoverableEstimator.add(r) }
        targetIsStale = true
    }

    /// Feeds the estimators: `r[n]`; with FEC also, for frame n−1, `min(r[n−1], r[n] + frame)` (taken when n
    /// arrives; if n−1 has not arrived it can only play by FEC, so `r[n] + frame`).
    func addDelaySample(sequence: Int64, transit: Int64) {
        let f = floor.value
        let r = Double(transit - f) / 1e6
        recentTransit[Int(UInt64(bitPattern: sequence) % UInt64(recentTransit.count))] = (sequence, transit)
        if config.inbandFEC {
            let previous = recentTransit[Int(UInt64(bitPattern: sequence - 1) % UInt64(recentTransit.count))]
            // The stream's first packet has no predecessor that could be missing: it plays or not on its own.
            var sample = sequence == firstSequence ? r : r + frameMilliseconds
            if previous.sequence == sequence - 1 { sample = min(sample, Double(previous.transit - f) / 1e6) }
            recoverableEstimator.add(sample)
        }
        estimator.add(r)
        targetIsStale = true
    }
}
