// Redundant copies (RFC 2198 RED) of frames the jitter buffer may be missing: they fill gaps, never anything else.

import ParleyWire

extension JitterBuffer {
    /// Accepts a redundant copy of frame `sequenceNumber` (RTP timestamp `timestamp`), carried by a packet of the
    /// same stream whose primary comes next (`insert`, after its copies: a gap the copies fill is then no gap, and
    /// adds no repair sample). The copy is stored only where it fills a hole: not when the stream is another (or
    /// none yet), the frame is held or was played, or its turn has passed (concealed or rebuilt: audio is never
    /// played twice). A copy that fills a hole counts in the delay estimate as its frame arriving when the copy did
    /// (as a NACK repair's gap does, `repairRoundTrip`): where losses are frequent the target grows to let copies
    /// 20–40 ms behind their frame play; where they are rare it does not move. Otherwise a copy is not an arrival:
    /// it moves no transit floor or restart detection. Counted in `stats.redundantRecovered` when stored,
    /// `stats.redundantUnused` otherwise.
    public func insertRedundant(
        sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32, payload: UnsafeRawBufferPointer,
        arrival: Instant
    ) {
        guard self.ssrc == ssrc, highestSequence != nil, !payload.isEmpty else {
            stats.redundantUnused += 1
            return
        }
        // A copy far off the timeline is refused without arming (or confirming) a restart.
        let probe = restartProbe
        restartProbe = nil
        let located = locate(sequenceNumber, timestamp, arrival: arrival.nanoseconds)
        restartProbe = probe
        guard let (sequence, time) = located, !store.contains(sequence), fate(sequence) != .played,
            nextSequence.map({ sequence >= $0 }) ?? true
        else {
            stats.redundantUnused += 1
            return
        }
        let slot = JitterSlot(
            sequence: sequence, timestamp: time, rtpSequence: sequenceNumber, rtpTimestamp: timestamp,
            length: 0, arrival: arrival.nanoseconds)
        switch store.store(slot, payload: payload) {
        case .stored, .evicted:
            stats.redundantRecovered += 1
            highestSequence = max(highestSequence ?? sequence, sequence)
            if !floor.isEmpty { addRepairSample(transit: arrival.nanoseconds - nanoseconds(time), fecCovers: false) }
        case .duplicate, .tooOld:
            stats.redundantUnused += 1
        }
    }
}
