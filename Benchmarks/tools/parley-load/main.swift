// parley-load: real members over UDP on loopback — each with its own socket and address — join a Parley relay through
// its signalling (tokens, cookie round trip, keepalives, leave); speakers send pre-encoded Opus speech every 20 ms
// with a send timestamp; every member accounts for what it receives, and delivery is over every member asked for.
// With --raw-baseline the same members and sockets take turns, in alternating blocks, with a minimal
// recvmmsg→sendmmsg fan-out forwarder running as a process of its own, and Parley's output packets per CPU-second is
// reported as a ratio of that path's, measured in the same run. A run that did not measure what it was asked to —
// members missing, or the generator's own send ticks late — says so and exits non-zero (`Verdict`).
//
//   swift build -c release --product parley-load && swift build -c release --product parley-relay
//   .build/release/parley-load --spawn --workers 1 --rooms 10 --members 10 --speakers 3 --duration 20 [--raw-baseline]
import CParleySys
import Foundation
import Glibc
import ParleyNet
import ParleyWire

if CommandLine.arguments.count == 2 && CommandLine.arguments[1] == RawForwarder.serveFlag { RawForwarder.serve() }
let options = Options.parseOrExit(CommandLine.arguments.dropFirst())
if options.selfCheck { exit(SelfCheck.run()) }
signal(SIGPIPE, SIG_IGN)

/// Pins this thread — and what it starts from now on: threads, the relay, the raw forwarder — to `cpus`.
@MainActor func pin(to cpus: [Int], _ what: String) {
    let r = cpus.map { Int32($0) }.withUnsafeBufferPointer { parley_pin_to_cpus($0.baseAddress, Int32($0.count)) }
    if r != 0 { exitFailing("cannot pin \(what) to CPUs \(cpus): \(String(cString: strerror(-r)))") }
}
/// Runs `start` (a child to spawn) pinned to --relay-cpus, then this generator goes back to --load-cpus (or every CPU).
@MainActor func pinnedForRelay<T>(_ start: () throws -> T) rethrows -> T {
    guard let relayCPUs = options.relayCPUs else { return try start() }
    pin(to: relayCPUs, "the relay")
    defer { pin(to: options.loadCPUs ?? Array(0..<Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))), "the load generator") }
    return try start()
}
if let load = options.loadCPUs { pin(to: load, "the load generator") }

let clip: SpeechClip
do { clip = try SpeechClip() } catch { writeLine("parley-load: cannot encode the speech clip: \(error)", fd: 2); exit(1) }
if options.speakers > 3 && options.mode == "forward" {
    writeLine("note: more speakers than the relay's default 3 forwarding slots: 'expected' assumes every packet is forwarded and will overstate loss")
}

let findMaxStepSeconds = min(options.duration, 8)
let findMaxSteps = options.findMax
    ? RelayLimits.findMaxSteps(members: options.members, speakers: options.speakers, stepSeconds: findMaxStepSeconds, capSeconds: options.findMaxCap)
    : []

var spawned: SpawnedProcess?
let server: PeerAddress
var probe: ProcessProbe?
switch options.target {
case .spawn:
    let largestRoom = findMaxSteps.max() ?? options.members
    let limits = RelayLimits.environment(membersPerRoom: largestRoom, roomsOverRun: options.rooms * max(1, findMaxSteps.count),
                                         membersAtOnce: options.rooms * largestRoom, rampSeconds: options.ramp)
    do {
        spawned = try pinnedForRelay {
            try SpawnedProcess.relay(workers: options.workers, environment: limits, allowCleartext: options.cleartext)
        }
    } catch { writeLine("parley-load: \(error)", fd: 2); exit(1) }
    server = spawned!.address
    probe = spawned!.probe
    writeLine("spawned relay limits: " + limits.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
case .server(let a):
    server = a
    probe = options.relayPID.map { ProcessProbe(pid: $0) } ?? ProcessProbe.find(named: "parley-relay")
    if probe == nil { writeLine("note: relay process not found; relay CPU and memory are not reported (pass --relay-pid)") }
}
defer { spawned?.stop() }

writeLine(String(format: "parley-load: %d rooms × %d members, %d speakers per room, %@ mode, %.0f s; relay %@ (pid %d); speech clip %d frames, %.0f %% sent (DTX pauses)",
                 options.rooms, options.members, options.speakers, options.mode, options.duration, server.description,
                 probe?.pid ?? -1, clip.frames.count, clip.sentFraction * 100))

@MainActor func finish(_ status: Int32) -> Never {
    spawned?.stop()   // exit() skips the top-level defer
    exit(status)
}

@MainActor func exitFailing(_ message: String) -> Never {
    writeLine("parley-load: \(message)", fd: 2)
    finish(1)
}

/// The verdict over `runs` (every block of both sides): members missing in the worst Parley block, tick lateness of
/// the block whose ticks ran latest at the 99th percentile.
@MainActor func verdict(_ runs: [RunResult], worstMissing: RunResult) -> Verdict {
    let latest = runs.max { $0.sendLatenessP99Milliseconds < $1.sendLatenessP99Milliseconds } ?? worstMissing
    let mostRemoved = runs.max { $0.removedReasons.count < $1.removedReasons.count }?.removedReasons ?? []
    return Verdict(asked: worstMissing.members, missingReasons: worstMissing.missingReasons, removedReasons: mostRemoved,
                   tickLateness: latest.tickLateness,
                   lateTicks: runs.reduce(0) { $0 + $1.lateTicks }, limitMilliseconds: options.maxTickLatenessMilliseconds)
}

if options.findMax {
    // Step the listeners per room up until delivery < 99.9 % or p99 > 20 ms, within the time cap. A step with
    // members missing or the generator late did not measure the relay: the search stops there and says so.
    var held: RunResult?
    var spent = 0.0
    var stoppedBy: Verdict?
    for (step, membersPerRoom) in findMaxSteps.enumerated() where spent + findMaxStepSeconds <= options.findMaxCap {
        writeLine("find-max step \(step): \(options.rooms) rooms × \(membersPerRoom) members (\(membersPerRoom - options.speakers) listeners per room)")
        let t0 = Clock.monotonicNanoseconds()
        let run: LoadRun
        do {
            run = try LoadRun(options: options, clip: clip, target: .relay(server, probe), membersPerRoom: membersPerRoom,
                              prefix: "max\(step)-\(getpid())", progress: true)
        } catch { writeLine("cannot open sockets: \(error)"); break }
        let r = run.run(against: .relay(server, probe), durationSeconds: findMaxStepSeconds)
        spent += Double(Clock.monotonicNanoseconds() - t0) / 1e9
        let v = verdict([r], worstMissing: r)
        let relayHeld = r.deliveryRatio >= 0.999 && r.latency.quantileMilliseconds(0.99) <= 20
        writeLine(String(format: "  → members %d (joined %d), out %.0f pps, delivery %.4f %%, p99 %.2f ms, relay CPU %.0f %%, load-gen CPU %.0f %%, tick lateness p99 %.2f max %.2f ms: %@",
                         r.members, r.joined, r.outPacketsPerSecond, r.deliveryRatio * 100, r.latency.quantileMilliseconds(0.99),
                         r.targetCPUSeconds / r.durationSeconds * 100, r.generatorCPUSeconds / r.durationSeconds * 100,
                         r.sendLatenessP99Milliseconds, r.sendLatenessMaxMilliseconds, !v.problems.isEmpty ? "not measured as asked" : relayHeld ? "held" : "NOT held"))
        if !v.problems.isEmpty {
            for line in v.lines { writeLine("  " + line) }
            stoppedBy = v
            break
        }
        if !relayHeld { break }
        held = r
    }
    if let held {
        writeLine("")
        writeLine(Report.table([held], mix: options.mode == "mix"))
        writeLine(String(format: "largest load held: %d members (%d rooms), %.0f output pps, %.0f out pkts per relay CPU-second", held.members,
                         options.rooms, held.outPacketsPerSecond, held.outPacketsPerCPUSecond))
        if let path = options.json {
            let json = Report.json(held, raw: nil, options: options, verdict: verdict([held], worstMissing: held),
                                   extra: ["find_max_members": held.members, "find_max_stopped_by": stoppedBy.map { $0.lines.joined(separator: "; ") } ?? "relay",
                                           "find_max_exit_status": stoppedBy?.exitStatus ?? 0])
            do { try json.write(toFile: path, atomically: true, encoding: .utf8) } catch { exitFailing("cannot write \(path): \(error)") }
        }
    } else {
        writeLine("no step held")
    }
    if stoppedBy != nil {
        writeLine("the search stopped at a step that did not measure the relay: the largest load held is a limit of the load generator or of the shape, not of the relay")
    }
    finish(stoppedBy?.exitStatus ?? 0)
}

let run: LoadRun
do {
    run = try LoadRun(options: options, clip: clip, target: .relay(server, probe), membersPerRoom: options.members,
                      prefix: "load-\(getpid())", progress: true)
} catch { exitFailing("cannot open the members' sockets: \(error)") }

var forwarder: SpawnedProcess?
if options.rawBaseline {
    do { forwarder = try pinnedForRelay { try SpawnedProcess.rawForwarder() } } catch {
        exitFailing("cannot start the raw forwarder: \(error)")
    }
}
let order = options.rawBaseline ? Blocks.order(blocksPerSide: options.blocks) : [.parley]
let blockSeconds = options.duration / Double(options.rawBaseline ? options.blocks : 1)
var parleyBlocks: [RunResult] = [], rawBlocks: [RunResult] = []
for (k, side) in order.enumerated() {
    let name = side == .parley ? "parley relay" : "raw fan-out forwarder (same members and sockets)"
    writeLine(order.count > 1 ? "— block \(k + 1)/\(order.count): \(name) —" : "— \(name) —")
    switch side {
    case .parley:
        let r = run.run(against: .relay(server, probe), durationSeconds: blockSeconds)
        if !r.missingReasons.isEmpty { writeLine("\(r.missingReasons.count) members missing when media started, e.g. \(r.missingReasons[0])") }
        parleyBlocks.append(r)
    case .raw:
        rawBlocks.append(run.run(against: .raw(forwarder!.address, forwarder!.probe), durationSeconds: blockSeconds))
    }
}
forwarder?.stop()

let parley = RunResult.pooled(parleyBlocks)
let raw = rawBlocks.isEmpty ? nil : RunResult.pooled(rawBlocks)
let outcome = verdict(parleyBlocks + rawBlocks, worstMissing: parley)
writeLine("")
writeLine(Report.table([parley] + (raw.map { [$0] } ?? []), mix: options.mode == "mix"))
if let raw {
    writeLine("")
    writeLine(Report.blocks(order: order, parley: parleyBlocks, raw: rawBlocks))
    let ratios = Blocks.pairRatios(parley: parleyBlocks.map(\.outPacketsPerCPUSecond), raw: rawBlocks.map(\.outPacketsPerCPUSecond))
    if raw.outPacketsPerCPUSecond > 0 {
        writeLine(String(format: "parley ÷ raw fan-out, output packets per CPU-second: pooled %.0f ÷ %.0f = %.3f, median of %d block pairs %.3f (goal ≥ %@)",
                         parley.outPacketsPerCPUSecond, raw.outPacketsPerCPUSecond, parley.outPacketsPerCPUSecond / raw.outPacketsPerCPUSecond,
                         ratios.count, Blocks.median(ratios) ?? 0,
                         options.cleartext ? "0.95, cleartext"
                             : "0.9 with SRTP in and out; the raw forwarder is cleartext"))
        let extra = Blocks.pairExtraNanoseconds(parley: parleyBlocks.map(\.outPacketsPerCPUSecond),
                                                raw: rawBlocks.map(\.outPacketsPerCPUSecond))
        writeLine(String(format: "parley − raw per output datagram: pooled %.0f ns (%.2f µs against %.2f µs), "
                         + "median of the block pairs %.0f ns",
                         1e9 / parley.outPacketsPerCPUSecond - 1e9 / raw.outPacketsPerCPUSecond,
                         1e6 / parley.outPacketsPerCPUSecond,
                         1e6 / raw.outPacketsPerCPUSecond, Blocks.median(extra) ?? 0))
    }
}
if options.mode == "mix" {
    writeLine("mix mode: mixed packets carry no send time; 'latency' is each listener's arrival delay relative to its first mixed packet through the mix's RTP clock (delay variation), not one-way latency.")
}
let json = Report.json(parley, raw: raw, options: options, verdict: outcome,
                       blocks: options.rawBaseline ? (order, parleyBlocks, rawBlocks) : nil)
if let path = options.json {
    do { try json.write(toFile: path, atomically: true, encoding: .utf8) } catch { exitFailing("cannot write \(path): \(error)") }
}
writeLine(json)
for line in outcome.lines { writeLine(line) }
finish(outcome.exitStatus)
