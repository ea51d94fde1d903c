// impair-proxy: a seeded UDP proxy that delays, jitters, loses (Gilbert-Elliott bursts), reorders and duplicates
// datagrams in both directions — netem for loopback, without netem.
//
//   impair-proxy --listen 127.0.0.2 --upstream 127.0.0.1 --ports 7400,7401 --profile moderate [--seed 1] [--duration S]
//                [--sender-stalls GAP_S/MIN_MS/MAX_MS] [--sender-drift D]
//
// With one seed, each flow's media meets the same losses, delays and duplicates in every run: every direction of every
// flow (numbered in the order flows appear) draws from its own random streams, one for RTP and one for the rest.
//
// Each listen port forwards to the same port on the upstream host. Every client address gets one upstream socket for
// all ports, so the relay sees one address per client (its flow may move from the public port to a worker's); replies
// go back out of the listen port that matches the port they came from. Profiles model the jitter-bench traces' networks:
//   clean     no impairment
//   mild      base 20 ms, jitter exponential mean 4 ms, random loss 0.5 %
//   moderate  base 30 ms, jitter Lomax(15 ms, 3), Gilbert-Elliott loss ≈ 2 % in bursts, 0.5 % duplicates
//   harsh     base 40 ms, jitter Lomax(30 ms, 2.5), Gilbert-Elliott loss ≈ 7 % in bursts, 1 % duplicates,
//             delay spikes of 150–400 ms (p = 0.0007 per packet)
//
// A real sender's timing, on any profile, for the RTP packets from each client toward the relay (SenderLag.swift):
//   --sender-stalls GAP_S/MIN_MS/MAX_MS  capture stalls every GAP_S seconds on average (one chance per packet),
//                                        MIN_MS–MAX_MS long (log-uniform); every later packet of the client is held
//                                        by the stalls so far. 4/10/120 is Chromium's fake capture on a loaded machine
//   --sender-drift D                     the client's clock runs 1 + D against real time: a packet t ms after its
//                                        first is held D · t ms more (D < 0: held 1000 ms at first, shrinking to 0)
// The hold is capped at 2 s: past it the client stops falling behind. Each client's stalls have their own random
// stream: the network's losses and delays for a seed are the same with or without them.
import Foundation
import ParleyNet
import ParleyWire
import SenderModel

struct Profile {
    var base = 0.0, jitterScale = 0.0, jitterShape = 0.0, exponentialMean = 0.0
    var lossGood = 0.0, lossBad = 0.0, goodToBad = 0.0, badToGood = 1.0
    var duplicate = 0.0, spikeProbability = 0.0

    static func named(_ name: String) -> Profile? {
        switch name {
        case "clean": return Profile()
        case "mild": return Profile(base: 20, exponentialMean: 4, lossGood: 0.005)
        case "moderate": return Profile(base: 30, jitterScale: 15, jitterShape: 3, lossGood: 0.01, lossBad: 0.6, goodToBad: 0.004,
                                        badToGood: 0.25, duplicate: 0.005)
        case "harsh": return Profile(base: 40, jitterScale: 30, jitterShape: 2.5, lossGood: 0.05, lossBad: 1, goodToBad: 0.005,
                                     badToGood: 0.2, duplicate: 0.01, spikeProbability: 0.0007)
        default: return nil
        }
    }
}

/// A random stream (SplitMix64): small, seeded, reproducible. Each direction of each flow has two: one for its RTP
/// (media) packets and one for everything else, so a flow's media sees the same losses, delays and duplicates for a
/// given seed whatever else crosses the proxy and whenever (signalling, keepalives, other flows).
struct Random {
    let seed: UInt64
    var generator: SeededRandomNumberGenerator
    init(state: UInt64) {
        seed = state
        generator = SeededRandomNumberGenerator(seed: state)
    }
    mutating func next() -> UInt64 { generator.next() }
    mutating func uniform() -> Double { generator.unitInterval() }
}

/// One direction of a flow: a lane for its RTP packets and one for everything else, each with its own random stream
/// and Gilbert-Elliott and spike state.
struct Channel {
    var profile: Profile
    var media: Lane
    var other: Lane
}

/// Gilbert-Elliott loss and the delay model of one lane, after the sender's own lateness when it has one.
struct Lane {
    var profile: Profile
    var random: Random
    var sender: SenderLag? = nil
    var bad = false
    var spikeUntil = 0.0
    var spikeExtra = 0.0

    /// The delay in ms for a packet sent at `nowMs`, or nil to drop it.
    mutating func delay(nowMs: Double) -> Double? {
        let held = sender?.hold(nowMs: nowMs) ?? 0
        bad = bad ? random.uniform() >= profile.badToGood : random.uniform() < profile.goodToBad
        if random.uniform() < (bad ? profile.lossBad : profile.lossGood) { return nil }
        var d = profile.base
        if profile.jitterShape > 0 {  // Lomax (Pareto II): scale · ((1 − u)^(−1/shape) − 1)
            d += profile.jitterScale * (pow(1 - random.uniform(), -1 / profile.jitterShape) - 1)
        } else if profile.exponentialMean > 0 {
            d += -profile.exponentialMean * log(1 - random.uniform())
        }
        if nowMs >= spikeUntil, random.uniform() < profile.spikeProbability {
            let length = 150 + 250 * random.uniform()
            spikeUntil = nowMs + length
            spikeExtra = length
        }
        if nowMs < spikeUntil { d += spikeExtra * (spikeUntil - nowMs) / max(1, spikeExtra) }
        return held + min(d, 2000)
    }
}

struct Pending {
    var due: Int64
    var bytes: [UInt8]
    var socket: UDPSocket
    var to: PeerAddress
}

func fail(_ message: String) -> Never {
    writeLine("impair-proxy: \(message)", fd: 2)
    exit(2)
}

let usage = "usage: impair-proxy --listen IP --upstream IP --ports P[,P…] --profile clean|mild|moderate|harsh"
    + " [--seed N] [--duration S] [--sender-stalls GAP_S/MIN_MS/MAX_MS] [--sender-drift D]"
var args = Array(CommandLine.arguments.dropFirst())
var options: [String: String] = [:]
while !args.isEmpty {
    let flag = args.removeFirst()
    guard flag.hasPrefix("--"), !args.isEmpty else { fail(usage) }
    options[String(flag.dropFirst(2))] = args.removeFirst()
}
guard let listenHost = options["listen"], let upstreamHost = options["upstream"], let portList = options["ports"],
      let profile = Profile.named(options["profile"] ?? "clean") else {
    fail(usage)
}
var senderStalls: SenderStalls?
var senderDrift = 0.0
if let spec = options["sender-stalls"] {
    guard let stalls = SenderStalls(parsing: spec) else { fail("bad --sender-stalls \(spec): \(usage)") }
    senderStalls = stalls
}
if let spec = options["sender-drift"] {
    guard let drift = Double(spec) else { fail("bad --sender-drift \(spec): \(usage)") }
    senderDrift = drift
}
let ports = portList.split(separator: ",").compactMap { UInt16($0) }
let seed = UInt64(options["seed"] ?? "1") ?? 1
let duration = Double(options["duration"] ?? "0") ?? 0
var listeners: [UDPSocket] = []
do {
    for p in ports {
        guard let a = PeerAddress(parsing: "\(listenHost):\(p)") else { fail("bad --listen address") }
        listeners.append(try UDPSocket(bindingTo: a))
    }
} catch { fail("\(error)") }

/// Per client: its upstream socket and one channel per direction.
final class Flow {
    let client: PeerAddress
    let upstream: UDPSocket
    var up: Channel
    var down: Channel
    /// Flow `index` (the order flows first appeared in) of a proxy seeded with `seed`; its media toward the relay
    /// held by `stalls` and `drift` when either is set.
    init(client: PeerAddress, upstream: UDPSocket, profile: Profile, seed: UInt64, index: UInt64,
         stalls: SenderStalls?, drift: Double) {
        self.client = client; self.upstream = upstream
        func stream(_ k: UInt64) -> Random { Random(state: seed &* 0x9E37_79B9_7F4A_7C15 &+ index &* 4 &+ k) }
        up = Channel(profile: profile, media: Lane(profile: profile, random: stream(0)), other: Lane(profile: profile, random: stream(1)))
        down = Channel(profile: profile, media: Lane(profile: profile, random: stream(2)), other: Lane(profile: profile, random: stream(3)))
        if stalls != nil || drift != 0 {
            up.media.sender = SenderLag(stalls: stalls, drift: drift, seed: ~(seed &* 0x9E37_79B9_7F4A_7C15 &+ index))
        }
    }
}
var flows: [PeerAddress: Flow] = [:]
var pending: [Pending] = []
var forwarded = 0, dropped = 0, duplicated = 0
let start = Clock.monotonicNanoseconds()
let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
signal(SIGPIPE, SIG_IGN)

/// RTP (not RTCP, RFC 5761: payload types 64–95 with the marker bit are RTCP's).
func isMedia(_ bytes: [UInt8]) -> Bool {
    bytes.count >= 12 && bytes[0] & 0xC0 == 0x80 && !(64...95).contains(bytes[1] & 0x7F)
}

@MainActor func schedule(_ bytes: [UInt8], via socket: UDPSocket, to: PeerAddress, channel: inout Channel, now: Int64) {
    let nowMs = Double(now - start) / 1e6
    let media = isMedia(bytes)
    var lane = media ? channel.media : channel.other
    defer { if media { channel.media = lane } else { channel.other = lane } }
    guard let d = lane.delay(nowMs: nowMs) else { dropped += 1; return }
    pending.append(Pending(due: now + Int64(d * 1e6), bytes: bytes, socket: socket, to: to))
    if lane.random.uniform() < channel.profile.duplicate {
        duplicated += 1
        pending.append(Pending(due: now + Int64((d + 1 + 5 * lane.random.uniform()) * 1e6), bytes: bytes, socket: socket, to: to))
    }
}

let sender = (senderStalls.map { ", sender stalls \($0.spec)" } ?? "")
    + (senderDrift != 0 ? ", sender drift \(senderDrift)" : "")
writeLine("impair-proxy ready: \(listenHost):\(portList) → \(upstreamHost), profile \(options["profile"] ?? "clean"),"
          + " seed \(seed)\(sender)")
while duration == 0 || Double(Clock.monotonicNanoseconds() - start) / 1e9 < duration {
    let now = Clock.monotonicNanoseconds()
    let next = pending.map(\.due).min()
    let wait = next.map { max(0, ($0 - now) / 1_000_000) } ?? 100
    var fds = listeners.map(\.fd)
    for f in flows.values { fds.append(f.upstream.fd) }
    _ = Poll.readable(fds, timeoutMilliseconds: Int32(min(wait, 100)))
    let t = Clock.monotonicNanoseconds()
    for (i, l) in listeners.enumerated() {
        while let (n, from) = l.receive(into: buffer) {
            var flow = flows[from]
            if flow == nil {
                guard let up = try? UDPSocket(bindingTo: PeerAddress(parsing: "\(upstreamHost):0")!) else { continue }
                flow = Flow(client: from, upstream: up, profile: profile, seed: seed, index: UInt64(flows.count),
                            stalls: senderStalls, drift: senderDrift)
                flows[from] = flow
            }
            let f = flow!
            schedule(Array(buffer[0..<n]), via: f.upstream, to: PeerAddress(parsing: "\(upstreamHost):\(ports[i])")!, channel: &f.up, now: t)
        }
    }
    for f in flows.values {
        while let (n, from) = f.upstream.receive(into: buffer) {
            guard let i = ports.firstIndex(of: from.port) else { continue }
            schedule(Array(buffer[0..<n]), via: listeners[i], to: f.client, channel: &f.down, now: t)
        }
    }
    let due = Clock.monotonicNanoseconds()
    pending.sort { $0.due < $1.due }
    while let first = pending.first, first.due <= due {
        pending.removeFirst()
        try? first.socket.send(first.bytes, to: first.to)
        forwarded += 1
    }
}
writeLine("impair-proxy: forwarded \(forwarded), dropped \(dropped), duplicated \(duplicated)")
for flow in flows.values.sorted(by: { "\($0.client)" < "\($1.client)" }) {
    guard let lag = flow.up.media.sender else { continue }
    writeLine("impair-proxy: \(flow.client) → relay: \(lag.timing.stallCount) sender stalls of"
              + " \(lag.timing.stalledMs) ms in all, last hold \(lag.lastMs) ms")
}
