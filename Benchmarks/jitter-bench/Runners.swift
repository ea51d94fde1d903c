// Replaying a trace through each implementation under the receiver convention: pull 20 ms every 20 ms from the
// first arrival; before each pull insert every packet with arrival_ms <= t, in arrival order.
import CSpeexDSP
import ParleyMedia
import ParleyWire

/// Packets that arrived, in arrival order (ties in send order), as indices into the trace.
func arrivalOrder(_ trace: Trace) -> [Int] {
    trace.packets.indices.filter { trace.packets[$0].arrivalMs != nil }
        .sorted { (trace.packets[$0].arrivalMs!, $0) < (trace.packets[$1].arrivalMs!, $1) }
}

/// The pull times t_k = t_first + 20 k, until two seconds after the last arrival.
func pullTimes(_ trace: Trace, _ order: [Int]) -> StrideThrough<Double> {
    let first = trace.packets[order.first!].arrivalMs!, last = trace.packets[order.last!].arrivalMs!
    return stride(from: first, through: last + 2000, by: 20)
}

/// The instant `ms` milliseconds (a trace's time) after the origin, to the nearest nanosecond.
@inline(__always) func instant(milliseconds ms: Double) -> Instant { Instant(nanoseconds: Int64((ms * 1e6).rounded())) }
@inline(__always) func rtpTimestamp(_ sendMs: Double) -> UInt32 { UInt32(truncatingIfNeeded: Int((sendMs * 48).rounded())) }

/// The trace index of a 16-bit sequence number, taken nearest to `near`.
@inline(__always) func index(of sequence: UInt16, near: Int) -> Int {
    near + Int(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: near)))
}

/// Parley's `JitterBuffer` on `trace`.
///
/// `wrap` offsets sequence numbers by 65 000 and timestamps by 2³² − 10 s, so both wrap early in the run: the
/// figures must not change.
func runParley(_ trace: Trace, config: JitterBufferConfig, wrap: Bool = false) -> (Scorer, JitterStats) {
    var score = Scorer(trace: trace, impl: config.inbandFEC ? "parley" : "parley-nofec")
    let order = arrivalOrder(trace)
    let jb = ParleyMedia.JitterBuffer(config: config)
    let payload = [UInt8](repeating: 0xA5, count: 60)
    var next = 0, due = 0
    let seqOffset16: UInt16 = wrap ? 65_000 : 0
    payload.withUnsafeBytes { bytes in
        for t in pullTimes(trace, order) {
            while next < order.count, let a = trace.packets[order[next]].arrivalMs, a <= t {
                let p = trace.packets[order[next]]
                let seqOffset = wrap ? 65_000 : 0
                let tsOffset: UInt32 = wrap ? UInt32.max - 480_000 : 0
                jb.insert(sequenceNumber: UInt16(truncatingIfNeeded: p.seq + seqOffset),
                          timestamp: rtpTimestamp(p.sendMs) &+ tsOffset,
                          ssrc: 0x5EED, marker: false, payload: bytes, arrival: instant(milliseconds: a))
                next += 1
            }
            switch jb.pull(now: instant(milliseconds: t)) {
            case .play(let f):
                let i = index(of: f.sequenceNumber &- seqOffset16, near: due)
                score.played(i, at: t); score.slot(.played, dueSeq: i); due = i + 1
            case .accelerate(let a, let b):
                let i = index(of: a.sequenceNumber &- seqOffset16, near: due)
                let j = index(of: b.sequenceNumber &- seqOffset16, near: due)
                score.played(i, at: t); score.played(j, at: t); score.slot(.played, dueSeq: i)
                score.accelerated(); due = j + 1
            case .fec(let n):
                let i = index(of: n.sequenceNumber &- seqOffset16, near: due) - 1
                score.slot(.fec, dueSeq: i); due = i + 1
            case .conceal, .silence:
                // No DTX in the traces: silence after the first played frame is a gap in the audio.
                score.slot(.concealed, dueSeq: due); due += 1
            case .expand:
                score.slot(.expanded, dueSeq: due)
            }
        }
    }
    return (score, jb.stats)
}

/// libspeexdsp's JitterBuffer at its defaults (step 960) on `trace`: get + tick per pull, as speex's docs and
/// its `speex_jitter_get` helper do; optionally `jitter_buffer_update_delay` before each tick (it makes no
/// difference on the shared traces).
func runSpeex(_ trace: Trace, speexUpdateDelay: Bool = false) -> Scorer {
    var score = Scorer(trace: trace, impl: "speex")
    let order = arrivalOrder(trace)
    guard let jb = jitter_buffer_init(960) else { fatalError("jitter_buffer_init failed") }
    defer { jitter_buffer_destroy(jb) }
    var payload = [CChar](repeating: 0x25, count: 60)
    var out = [CChar](repeating: 0, count: 2048)
    var next = 0, due = 0
    for t in pullTimes(trace, order) {
        while next < order.count, let a = trace.packets[order[next]].arrivalMs, a <= t {
            let p = trace.packets[order[next]]
            payload.withUnsafeMutableBufferPointer { d in
                var packet = JitterBufferPacket(data: d.baseAddress, len: 60, timestamp: rtpTimestamp(p.sendMs),
                                                span: 960, sequence: UInt16(truncatingIfNeeded: p.seq),
                                                user_data: UInt32(p.seq))
                jitter_buffer_put(jb, &packet)
            }
            next += 1
        }
        var offset: Int32 = 0
        let result = out.withUnsafeMutableBufferPointer { o -> Int32 in
            var packet = JitterBufferPacket(data: o.baseAddress, len: UInt32(o.count), timestamp: 0, span: 0,
                                            sequence: 0, user_data: 0)
            let r = jitter_buffer_get(jb, &packet, 960, &offset)
            if r == JITTER_BUFFER_OK {
                let i = Int(packet.user_data)
                score.played(i, at: t); score.slot(.played, dueSeq: i); due = i + 1
            }
            return r
        }
        if result == JITTER_BUFFER_MISSING {
            score.slot(.concealed, dueSeq: due); due += 1
        } else if result == JITTER_BUFFER_INSERTION {
            score.slot(.expanded, dueSeq: due)
        }
        if speexUpdateDelay {
            out.withUnsafeMutableBufferPointer { o in
                var packet = JitterBufferPacket(data: o.baseAddress, len: UInt32(o.count), timestamp: 0, span: 0,
                                                sequence: 0, user_data: 0)
                _ = jitter_buffer_update_delay(jb, &packet, nil)
            }
        }
        jitter_buffer_tick(jb)
    }
    return score
}
