// The playout side of the jitter buffer: one decision per 20 ms pull.

import ParleyWire

extension JitterBuffer {
    /// The decision for the next 20 ms of output at `now`. See `JitterDecision` for how each case
    /// is counted. `quiet` says the listener is in a pause (`AudioReceiveStream` passes true after 60 ms of
    /// near-silence): a small excess delay is then taken back at once, where shortening is inaudible, instead of
    /// waiting for the next talkspurt.
    public func pull(now: Instant, quiet: Bool = false) -> JitterDecision {
        let now = now.nanoseconds  // the playout arithmetic below is in nanoseconds and milliseconds
        quietHint = quiet
        if targetIsStale {
            let lo = Double(config.minimumDelay.milliseconds), hi = Double(config.maximumDelay.milliseconds)
            targetMilliseconds = min(max(unclampedTarget, lo), max(lo, hi))
            targetIsStale = false
        }
        stats.targetDelayMilliseconds = targetMilliseconds
        stats.senderClockSkew = floor.skew.value
        let decision = mode == .speech ? pullSpeech(now: now) : pullSilent(now: now)
        switch decision {
        case .accelerate, .expand: lastWasStretch = true
        default: lastWasStretch = false
        }
        return decision
    }

    /// Between talkspurts: start the next one at the first pull where its first packet's playout delay reaches the
    /// target (silence-time adjustment: this both shrinks and grows the delay without time-stretching). A packet
    /// already a frame past the target is dropped as late while a later one is held to start from instead; the
    /// newest is never dropped (when the path's delay stepped up, every packet looks late until the floor follows,
    /// and dropping them all would leave a hole). A nearly full store starts at once.
    private func pullSilent(now: Int64) -> JitterDecision {
        let frame = frameMilliseconds
        while let candidate = store.lowest(atOrAbove: nextSequence) {
            let p = playoutDelay(candidate.timestamp, now: now)
            if p >= targetMilliseconds + frame, store.count > 1 {
                store.remove(candidate.sequence)
                setFate(candidate.sequence, .skipped)
                stats.lateDropped += 1
                continue
            }
            guard p >= targetMilliseconds || store.count >= store.capacity * 3 / 4 else { break }
            nextSequence = candidate.sequence
            playTimestamp = candidate.timestamp
            mode = .speech
            inOutage = false
            concealRun = 0
            heldFrames = 0
            heldSurplusFrames = 0  // a talkspurt starts at the target: nothing held is left over
            return pullSpeech(now: now)
        }
        if inOutage {
            stats.concealedFrames += 1
        } else {
            stats.silenceFrames += 1
        }
        return .silence
    }

    /// In a talkspurt: play the due frame, stretch towards the target, or conceal a missing frame.
    private func pullSpeech(now: Int64) -> JitterDecision {
        guard let next = nextSequence else { mode = .silent; return pullSilent(now: now) }
        guard let due = store.slot(next) else { return pullMissing(next, now: now) }
        let frameSamples = Int64(config.frameSamples)
        let p = playoutDelay(playTimestamp, now: now)
        stats.currentDelayMilliseconds = p

        if p > targetMilliseconds + maximumExcessMilliseconds, store.count > 1 {
            // Far above the target (a stall, or a timeline that moved under us): accelerating a frame at a time
            // would take seconds; drop what is a frame past the target and restart the talkspurt at it.
            mode = .silent
            return pullSilent(now: now)
        }
        if due.timestamp - playTimestamp >= frameSamples / 2 {
            // The sender paused (timestamps jumped, sequence did not): a new talkspurt, start it at the target.
            mode = .silent
            return pullSilent(now: now)
        }
        if heldFrames > 0 {
            // The due frame came after the playout waited for it (a delay step, or a stall at the sender): it plays,
            // the delay is now that much longer. Watch whether the path stays slower (see `noteStepCandidate`).
            heldSurplusFrames += heldFrames
            heldFrames = 0
            if stepProbe == nil { stepProbe = StepProbe(remaining: stepProbePackets, minimum: .max) }
            stats.delaySteps += 1
        }
        let successor = store.slot(next + 1)
        let duration = successor.map { s -> Int64 in
            let d = s.timestamp - due.timestamp
            return d > 0 && d <= 6 * frameSamples ? d : frameSamples
        } ?? frameSamples
        if due.isDTX {
            consume(due)
            playTimestamp = due.timestamp + duration
            mode = .silent
            stats.silenceFrames += 1
            return .silence
        }
        let excess = p - frameMilliseconds - targetMilliseconds
        excessPulls = excess >= accelerateHysteresis ? excessPulls + 1 : 0
        if !lastWasStretch,
           excess >= largeExcessMilliseconds || excessPulls >= persistentExcessPulls
            || (quietHint && excess >= accelerateHysteresis + pauseSurplusMilliseconds)
            || (heldSurplusFrames > 0 && excessPulls >= heldSurplusPulls && pauseSurplusMilliseconds == 0),
           let successor, !successor.isDTX, successor.timestamp - due.timestamp == duration {
            let second = successor.sequence + 1
            let afterSecond = store.slot(second).map { $0.timestamp - successor.timestamp }
            consume(due)
            consume(successor)
            playTimestamp = successor.timestamp + (afterSecond.map { $0 > 0 && $0 <= 6 * frameSamples ? $0 : frameSamples } ?? frameSamples)
            stats.accelerated += 1
            heldSurplusFrames = max(0, heldSurplusFrames - 1)
            return .accelerate(store.frame(due), store.frame(successor))
        }
        pullsSinceExpand += 1
        let shortfall = pullsSinceExpand < expandSpacingPulls ? expandShortfall : 0
        // In a pause the delay goes up into the surplus's band (from target + surplus, a frame wide, below where a
        // pause accelerates); in speech it is left to drain, and stretched only when a frame is at risk (below the
        // target with nothing after the due frame held). Waiting in speech for the next pause instead, as far as a
        // quarter of the target below it, cost more than it gained: 0.05–0.1 PESQ-WB on ffmpeg at 0.995, but twice
        // the concealment on a slow sender whose audio has no pauses (`jitter-bench --synth calm:1:0:drift=0.005`:
        // 37 frames against 17).
        let short = quietHint ? p < targetMilliseconds + pauseSurplusMilliseconds
            : p < targetMilliseconds - shortfall && successor == nil
        if !lastWasStretch, short {
            stats.expanded += 1
            pullsSinceExpand = 0
            return .expand
        }
        consume(due)
        playTimestamp = due.timestamp + duration
        return .play(store.frame(due))
    }

    /// The due frame `next` is missing: lost, or late. The playout point holds (NetEq's expand): each pull conceals
    /// (or rebuilds from FEC) one frame in its place, and
    /// - when `next` arrives, it plays (`pullSpeech`): a packet that was only late is never thrown away, and the
    ///   concealment lasted no longer than it was missing;
    /// - when a later packet is held and the frames produced in the meantime cover the gap up to it (or more), the
    ///   missing ones were lost: playout goes on from that packet.
    private func pullMissing(_ next: Int64, now: Int64) -> JitterDecision {
        let frameSamples = Int64(config.frameSamples)
        if store.count >= store.capacity * 3 / 4 {
            // Far behind (the playout side stalled, or the buffer overflowed past the due frame): drop what is
            // already a frame past the target and restart the talkspurt at the target.
            mode = .silent
            return pullSilent(now: now)
        }
        let later = store.lowest(atOrAbove: next)
        if let later, Int64(heldFrames) >= later.sequence - next {
            for missing in next..<later.sequence where fate(missing) == .none { setFate(missing, .concealed) }
            heldFrames = 0
            nextSequence = later.sequence
            // On the timeline of the missing frames: when `later` starts a new talkspurt (its timestamp jumped),
            // `pullSpeech` sees the pause and starts it at the target.
            playTimestamp += (later.sequence - next) * frameSamples
            return pullSpeech(now: now)
        }
        if later == nil, senderEnded || lastArrival.map({ now - $0 >= Self.senderSilence.nanoseconds }) ?? false {
            // Nothing after the due frame, and the sender said goodbye or has sent nothing for a while: it stopped.
            // End the talkspurt; the frames concealed while waiting were no loss. A sender resuming without DTX
            // continues from `next`.
            stats.concealedFrames -= concealRun
            if concealRun > 0 { stats.concealmentEvents -= 1 }
            concealRun = 0
            heldFrames = 0
            stats.senderStops += 1
            stats.silenceFrames += 1
            mode = .silent
            inOutage = false
            return .silence
        }
        if config.startupWaits, estimator.samples < startupPackets, startupWaitPulls < startupWaitFrames, later == nil {
            // Start-up, and nothing after the due frame has arrived: the path is slower than the young estimate
            // says, not lossy. Wait for the frame (the delay grows by what this stretch adds) rather than conceal.
            startupWaitPulls += 1
            stats.expanded += 1
            return .expand
        }
        startupWaitPulls = 0
        concealRun += 1
        if concealRun > maximumConcealRun {
            mode = .silent
            inOutage = true
            heldFrames = 0
            stats.concealedFrames += 1
            return .silence
        }
        // The frame in the place being produced now: `next` itself, or, after frames were already produced in the
        // holding, the one that many after it. FEC rebuilds it when the packet right after it is held.
        let position = next + Int64(heldFrames)
        heldFrames += 1
        if config.inbandFEC, let successor = store.slot(position + 1), !successor.isDTX,
           successor.timestamp - playTimestamp == Int64(heldFrames) * frameSamples {
            // Rebuilt: the places up to it are done (a copy arriving now would repeat audio), playout goes on
            // from the successor.
            for missing in next..<position where fate(missing) == .none { setFate(missing, .concealed) }
            setFate(position, .recovered)
            stats.fecRecovered += 1
            concealRun = 0
            heldFrames = 0
            nextSequence = position + 1
            playTimestamp = successor.timestamp
            return .fec(store.frame(successor))
        }
        stats.concealedFrames += 1
        if concealRun == 1 { stats.concealmentEvents += 1 }
        return .conceal
    }

    /// Marks a held packet played and advances past it. Its bytes stay valid until the next insert or pull.
    private func consume(_ slot: JitterSlot) {
        store.remove(slot.sequence)
        setFate(slot.sequence, .played)
        stats.played += 1
        nextSequence = slot.sequence + 1
        concealRun = 0
        heldFrames = 0
        startupWaitPulls = 0
    }
}
