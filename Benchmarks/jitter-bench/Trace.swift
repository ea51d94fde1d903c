// Traces: the shared CSV format (`seq,send_ms,arrival_ms` with `lost`), and a synthetic generator of the same
// network model (base delay + heavy-tailed jitter + Gilbert-Elliott loss + rare delay spikes + clock skew), with a
// real sender's capture stalls and clock drift on top when asked (SenderModel's `SenderTiming`).
//
// `send_ms` stays the packet's RTP time (k · 20 ms) whatever the sender does: a stall or drift shows as arrivals
// later (or earlier) than the network alone makes them, as it does for a receiver. A CSV trace may name its stalls'
// total on a comment line (`stall_ms=131`); without it the bench reports the total as unknown (null).
import Foundation
import ParleyWire
import SenderModel

/// One packet of a trace; `arrivalMs` is nil when lost in the network.
struct TracePacket {
    var seq: Int
    var sendMs: Double
    var arrivalMs: Double?
}

/// A named list of packets in send order.
struct Trace {
    var name: String
    var packets: [TracePacket]
    /// The sender's stalls: how many and their total in ms (nil when a CSV trace does not say).
    var stallCount: Int? = nil
    var stallMs: Double? = nil

    /// The stalls' total in 20 ms frames, rounded up: how many frames a receiver must make up for them.
    var stallFrames: Int? { stallMs.map { Int(($0 / 20).rounded(.up)) } }

    /// Parses the shared `jb-trace v1` CSV; the name is the file's `profile=` (or its file name).
    static func load(path: String) throws -> Trace {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var name = (path as NSString).lastPathComponent
        var packets: [TracePacket] = []
        var stallMs: Double?
        packets.reserveCapacity(16_000)
        // `isNewline`, not "\n": a CRLF line end is one Character in Swift and would not split.
        for line in text.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("#") {
                func value(_ key: String) -> Substring? {
                    line.range(of: key).map { r in line[r.upperBound...].prefix { !$0.isWhitespace } }
                }
                if let profile = value("profile=") { name = String(profile) }
                if let stall = value("stall_ms=") { stallMs = Double(stall) }
                continue
            }
            let f = line.split(separator: ",")
            guard f.count == 3, let seq = Int(f[0]), let send = Double(f[1]) else { continue }
            packets.append(TracePacket(seq: seq, sendMs: send, arrivalMs: Double(f[2].trimmingCharacters(in: .whitespaces))))
        }
        return Trace(name: name, packets: packets, stallMs: stallMs)
    }
}

/// The deterministic generator of synthetic traces (SplitMix64).
struct SplitMix64 {
    var generator: SeededRandomNumberGenerator
    init(state: UInt64) { generator = SeededRandomNumberGenerator(seed: state) }
    mutating func next() -> UInt64 { generator.next() }
    /// Uniform in (0, 1) (never 0: traces take its logarithm).
    mutating func uniform() -> Double { (Double(next() >> 11) + 0.5) / Double(1 << 53) }
}

/// Parameters of the network model used by the shared traces (see their second comment line).
struct NetworkModel {
    enum Jitter { case exponential(mean: Double), lomax(scale: Double, shape: Double) }
    var name: String
    var baseMs = 40.0
    var jitter = Jitter.exponential(mean: 5)
    var lossGood = 0.005, lossBad = 1.0, pGoodToBad = 0.0005, pBadToGood = 0.5
    var spikeProbability = 0.0, spikeMinMs = 0.0, spikeMaxMs = 0.0
    /// Receiver clock rate error: +0.001 means the receiver's clock runs 0.1 % fast.
    var skew = 0.0
    /// The sender's capture stalls (nil: none) and clock drift (+0.005: packet k leaves at k · 20 · 1.005 ms).
    var stalls: SenderStalls? = nil
    var senderDrift = 0.0

    /// The three shared profiles and a few others of the same family, to check the tuning generalises.
    static func named(_ name: String) -> NetworkModel? {
        var m = NetworkModel(name: name)
        switch name {
        case "mild": break
        case "moderate":
            m.jitter = .exponential(mean: 15); m.lossGood = 0.02; m.pGoodToBad = 0.002; m.pBadToGood = 0.33
        case "harsh":
            m.jitter = .lomax(scale: 30, shape: 2.5); m.lossGood = 0.05; m.pGoodToBad = 0.005; m.pBadToGood = 0.2
            m.spikeProbability = 0.000666667; m.spikeMinMs = 150; m.spikeMaxMs = 400
        case "wifi":      // moderate jitter, heavier tail, short spikes
            m.baseMs = 15; m.jitter = .lomax(scale: 12, shape: 3); m.lossGood = 0.01; m.pGoodToBad = 0.002
            m.pBadToGood = 0.4; m.spikeProbability = 0.002; m.spikeMinMs = 80; m.spikeMaxMs = 200
        case "cellular":  // long base delay, heavy tail, frequent long spikes
            m.baseMs = 80; m.jitter = .lomax(scale: 40, shape: 2.2); m.lossGood = 0.03; m.pGoodToBad = 0.003
            m.pBadToGood = 0.25; m.spikeProbability = 0.0015; m.spikeMinMs = 200; m.spikeMaxMs = 600
        case "calm":      // nearly ideal LAN
            m.baseMs = 5; m.jitter = .exponential(mean: 1); m.lossGood = 0.001; m.pGoodToBad = 0.0001
        case "stalls":    // a clean path from a sender whose capture stalls (Chromium's fake capture, loaded machine)
            m.baseMs = 20; m.jitter = .exponential(mean: 3); m.lossGood = 0; m.pGoodToBad = 0
            m.stalls = .typical
        default: return nil
        }
        return m
    }

    /// Generates `count` packets of 20 ms with the given seed. The sender's stalls draw from a generator of their
    /// own: with or without them, a seed gives the network the same losses, jitter and spikes.
    func generate(seed: UInt64, count: Int = 15_000) -> Trace {
        var rng = SplitMix64(state: seed &* 0x2545_F491_4F6C_DD1D &+ 1)
        var sender = SenderTiming(stalls: stalls, drift: senderDrift, seed: ~(seed &* 0x2545_F491_4F6C_DD1D))
        var bad = false
        var spikeStart = -1.0, spikeLength = 0.0
        var packets: [TracePacket] = []
        packets.reserveCapacity(count)
        for seq in 0..<count {
            let send = Double(seq) * 20
            if bad { if rng.uniform() < pBadToGood { bad = false } } else if rng.uniform() < pGoodToBad { bad = true }
            let lost = rng.uniform() < (bad ? lossBad : lossGood)
            if spikeProbability > 0 && rng.uniform() < spikeProbability {
                spikeStart = send
                spikeLength = spikeMinMs + (spikeMaxMs - spikeMinMs) * rng.uniform()
            }
            var extra = 0.0
            if spikeStart >= 0 && send - spikeStart < spikeLength { extra = spikeLength - (send - spikeStart) }
            let u = rng.uniform()
            let j: Double
            switch jitter {
            case .exponential(let mean): j = -mean * log(u)
            case .lomax(let scale, let shape): j = scale * (pow(u, -1 / shape) - 1)
            }
            let late = sender.lateness(nominalMs: send)
            let arrival = ((send + late + baseMs + j + extra) * (1 + skew) * 10).rounded() / 10
            packets.append(TracePacket(seq: seq, sendMs: send, arrivalMs: lost ? nil : arrival))
        }
        var traceName = "\(name)#\(seed)" + (skew != 0 ? "@skew\(skew)" : "")
        if let stalls, name != "stalls" || stalls != .typical { traceName += "+stalls=\(stalls.spec)" }
        if senderDrift != 0 { traceName += "+drift=\(senderDrift)" }
        return Trace(name: traceName, packets: packets, stallCount: sender.stallCount, stallMs: sender.stalledMs)
    }
}
