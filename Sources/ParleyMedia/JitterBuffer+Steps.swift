// The jitter buffer's step probe: after the playout held for a late frame, whether the path stayed slower (a
// sender's capture stall, a new route) and the transit floor should move up at once. See `JitterBuffer.stepProbe`.

extension JitterBuffer {
    /// While a `stepProbe` runs: its packets' lowest transit, their delay samples held back; at its end, a floor that
    /// minimum is half a frame or more above moves up to it (see `stepProbe`), and the held samples go into the
    /// estimate measured from the floor as it now stands, so a step does not read as jitter.
    func noteStepCandidate(sequence: Int64, transit: Int64, arrival: Int64) {
        guard var probe = stepProbe else { return }
        probe.minimum = min(probe.minimum, transit)
        probe.remaining -= 1
        probeSamples[probe.remaining] = (sequence, transit)
        stepProbe = probe.remaining > 0 ? probe : nil
        guard probe.remaining == 0 else { return }
        if !floor.isEmpty, probe.minimum - floor.value >= nanoseconds(Int64(config.frameSamples)) / 2 {
            floor.clear()
            stats.floorSteps += 1
        }
        floor.add(transit: probe.minimum, arrival: arrival)
        for held in probeSamples.reversed() { addDelaySample(sequence: held.sequence, transit: held.transit) }
    }
}
