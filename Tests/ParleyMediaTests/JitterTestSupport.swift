// A manual clock and a fake network for the jitter buffer tests: packets are scheduled with an arrival time,
// the receiver pulls every 20 ms, and decisions are recorded as plain values.
import ParleyMedia
import ParleyWire

/// A decision reduced to comparable values.
enum Played: Equatable {
    case play(UInt16), accelerate(UInt16, UInt16), fec(UInt16), conceal, expand, silence

    init(_ d: JitterDecision) {
        switch d {
        case .play(let f): self = .play(f.sequenceNumber)
        case .accelerate(let a, let b): self = .accelerate(a.sequenceNumber, b.sequenceNumber)
        case .fec(let f): self = .fec(f.sequenceNumber)
        case .conceal: self = .conceal
        case .expand: self = .expand
        case .silence: self = .silence
        }
    }

    /// Sequence numbers whose own payload this decision plays.
    var sequences: [UInt16] {
        switch self {
        case .play(let s): [s]
        case .accelerate(let a, let b): [a, b]
        default: []
        }
    }
}

/// One packet on the fake network.
struct ScheduledPacket {
    var sequence: UInt16
    var timestamp: UInt32
    var ssrc: UInt32 = 1
    var marker = false
    var payloadBytes = 40
    var arrival: Int64
    /// A packet the receiver asked for again (a NACK answer): played if in time, kept out of the delay estimate.
    var retransmission = false
    /// RFC 2198 copies the packet carries (sequence number, timestamp), oldest first: inserted before it
    /// (`JitterBuffer.insertRedundant`).
    var copies: [(sequence: UInt16, timestamp: UInt32)] = []
}

/// Deterministic pseudo-random numbers in 0..<1 (a 64-bit LCG).
struct TestRandom {
    var state: UInt64
    mutating func next() -> Double {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Double(state >> 11) / Double(1 << 53)
    }
}

let ms: Int64 = 1_000_000

/// Drives a `JitterBuffer` with a manual clock: time moves only by `run`.
final class JitterHarness {
    let buffer: JitterBuffer
    private(set) var now: Int64
    private var pending: [ScheduledPacket] = []
    private let payload = [UInt8](repeating: 0x42, count: 1500)
    /// Every decision, in pull order.
    private(set) var decisions: [Played] = []
    /// `currentDelayMilliseconds` after every pull.
    private(set) var delays: [Double] = []
    /// What each pull tells the buffer about the audio just played (near-silent or not).
    var quiet = false

    init(config: JitterBufferConfig = JitterBufferConfig(), start: Int64 = 1_000 * ms) {
        buffer = JitterBuffer(config: config)
        now = start
    }

    /// Puts packets on the network; each is inserted at the first pull at or after its arrival.
    func send(_ packets: [ScheduledPacket]) {
        pending.append(contentsOf: packets)
        pending.sort { $0.arrival < $1.arrival }
    }

    /// Pulls `count` times, 20 ms apart (times `pullPeriodScale`, to model a skewed playout clock).
    func run(pulls count: Int, pullPeriod: Int64 = 20 * ms) {
        for _ in 0..<count {
            var i = 0
            while i < pending.count, pending[i].arrival <= now {
                let p = pending[i]
                payload.withUnsafeBytes { bytes in
                    for c in p.copies {
                        buffer.insertRedundant(sequenceNumber: c.sequence, timestamp: c.timestamp, ssrc: p.ssrc,
                                               payload: UnsafeRawBufferPointer(rebasing: bytes[0..<p.payloadBytes]),
                                               arrival: Instant(nanoseconds: p.arrival))
                    }
                    buffer.insert(sequenceNumber: p.sequence, timestamp: p.timestamp, ssrc: p.ssrc, marker: p.marker,
                                  payload: UnsafeRawBufferPointer(rebasing: bytes[0..<p.payloadBytes]), arrival: Instant(nanoseconds: p.arrival),
                                  retransmission: p.retransmission)
                }
                i += 1
            }
            pending.removeFirst(i)
            decisions.append(Played(buffer.pull(now: Instant(nanoseconds: now), quiet: quiet)))
            delays.append(buffer.stats.currentDelayMilliseconds)
            now += pullPeriod
        }
    }

    /// Pulls until `played` packets have been played (counting DTX), at most `limit` times; so a test stops when
    /// its stream is over instead of watching the buffer conceal the silence after it.
    func run(untilPlayed played: Int, limit: Int) {
        var n = 0
        while buffer.stats.played < played && n < limit {
            run(pulls: 1)
            n += 1
        }
    }

    /// Moves the clock without pulling (the playout side stalled).
    func stall(_ nanoseconds: Int64) { now += nanoseconds }

    /// Packets still on the network.
    var inFlight: Int { pending.count }

    /// Sequence numbers played from their own payload, in order.
    var playedSequences: [UInt16] { decisions.flatMap(\.sequences) }

    /// `.conceal` decisions before the last frame played (after the stream ends the buffer rightly conceals).
    var concealments: Int {
        guard let last = decisions.lastIndex(where: { !$0.sequences.isEmpty }) else { return 0 }
        return decisions[...last].filter { $0 == .conceal }.count
    }
}

/// A 20 ms stream of `count` packets starting at `sequence`/`timestamp`, sent from `sendStart`, each arriving
/// after `delay(i)`.
func stream(count: Int, sequence: UInt16 = 0, timestamp: UInt32 = 0, sendStart: Int64 = 1_000 * ms,
            ssrc: UInt32 = 1, delay: (Int) -> Int64 = { _ in 30 * ms }) -> [ScheduledPacket] {
    (0..<count).map { i in
        ScheduledPacket(sequence: sequence &+ UInt16(truncatingIfNeeded: i),
                        timestamp: timestamp &+ UInt32(truncatingIfNeeded: i * 960), ssrc: ssrc,
                        arrival: sendStart + Int64(i) * 20 * ms + delay(i))
    }
}
