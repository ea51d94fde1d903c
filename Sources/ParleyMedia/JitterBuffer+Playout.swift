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
        let decision = mode == .speech ? pullSpeech(now: now) : pullSilent(now: now)
        switch decision {
        case .accelerate, .expand: lastWasStretch = true
        default: lastWasStretch = false
        }
        return decision
    }

    /// Between talkspurts: start the next one at the first pull where its first packet's playout delay reaches the
    /// target (silence-time adjustment: this both shrinks and grows the delay without time-stretching). Packets
    /// already a frame past the target are dropped as late. A nearly full store starts at once.
    private func pullSilent(now: Int64) -> JitterDecision {
        let frame = frameMilliseconds
        while let candidate = store.lowest(atOrAbove: nextSequence) {
            let p = playoutDelay(candidate.timestamp, now: now)
            if p >= targetMilliseconds + frame {
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
        let frameSamples = Int64(config.frameSamples)
        let p = playoutDelay(playTimestamp, now: now)
        stats.currentDelayMilliseconds = p

        if p > targetMilliseconds + maximumExcessMilliseconds {
            // Far above the target (a stall, or a timeline that moved under us): accelerating a frame at a time
            // would take seconds; drop what is a frame past the target and restart the talkspurt at it.
            mode = .silent
            return pullSilent(now: now)
        }
        if let due = store.slot(next) {
            if due.timestamp - playTimestamp >= frameSamples / 2 {
                // The sender paused (timestamps jumped, sequence did not): a new talkspurt, start it at the target.
                mode = .silent
                return pullSilent(now: now)
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
               excess >= largeExcessMilliseconds || excessPulls >= persistentExcessPulls || (quietHint && excess >= accelerateHysteresis),
               let successor, !successor.isDTX, successor.timestamp - due.timestamp == duration {
                let second = successor.sequence + 1
                let afterSecond = store.slot(second).map { $0.timestamp - successor.timestamp }
                consume(due)
                consume(successor)
                playTimestamp = successor.timestamp + (afterSecond.map { $0 > 0 && $0 <= 6 * frameSamples ? $0 : frameSamples } ?? frameSamples)
                stats.accelerated += 1
                return .accelerate(store.frame(due), store.frame(successor))
            }
            if !lastWasStretch, p < targetMilliseconds, quietHint || successor == nil {
                stats.expanded += 1
                return .expand
            }
            consume(due)
            playTimestamp = due.timestamp + duration
            return .play(store.frame(due))
        }

        // The due frame is missing: lost, or late.
        if store.count >= store.capacity * 3 / 4 {
            // Far behind (the playout side stalled, or the buffer overflowed past the due frame): drop what is
            // already a frame past the target and restart the talkspurt at the target.
            mode = .silent
            return pullSilent(now: now)
        }
        if store.count == 0, senderEnded || lastArrival.map({ now - $0 >= Self.senderSilence.nanoseconds }) ?? false {
            // Nothing after the due frame, and the sender said goodbye or has sent nothing for a while: it stopped.
            // End the talkspurt; the frames concealed while waiting were no loss.
            stats.concealedFrames -= concealRun
            if concealRun > 0 { stats.concealmentEvents -= 1 }
            nextSequence = next - Int64(concealRun)  // a sender resuming without DTX continues from here
            concealRun = 0
            stats.senderStops += 1
            stats.silenceFrames += 1
            mode = .silent
            inOutage = false
            return .silence
        }
        if config.startupWaits, estimator.samples < startupPackets, startupWaitPulls < startupWaitFrames, store.count == 0 {
            // Start-up, and nothing after the due frame has arrived: the path is slower than the young estimate
            // says, not lossy. Wait for the frame (the delay grows by what this stretch adds) rather than skip it.
            startupWaitPulls += 1
            stats.expanded += 1
            return .expand
        }
        startupWaitPulls = 0
        concealRun += 1
        if concealRun > maximumConcealRun {
            mode = .silent
            inOutage = true
            stats.concealedFrames += 1
            return .silence
        }
        nextSequence = next + 1
        let missingTimestamp = playTimestamp
        playTimestamp += frameSamples
        if config.inbandFEC, let successor = store.slot(next + 1), successor.timestamp - missingTimestamp == frameSamples,
           !successor.isDTX {
            setFate(next, .recovered)
            stats.fecRecovered += 1
            concealRun = 0
            return .fec(store.frame(successor))
        }
        setFate(next, .concealed)
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
        startupWaitPulls = 0
    }
}
