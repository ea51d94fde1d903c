// parley-load: real members over UDP on loopback — each with its own socket and address — join a Parley relay through
// its signalling (tokens, cookie round trip, keepalives, leave); speakers send pre-encoded Opus speech every 20 ms
// with a send timestamp; every member accounts for what it receives. With --raw-baseline the same members and
// sockets then run through a minimal recvmmsg→sendmmsg fan-out forwarder, and Parley's output packets per relay
// CPU-second is reported as a ratio of that path's, measured in the same run.
//
//   swift build -c release --product parley-load && swift build -c release --product parley-relay
//   .build/release/parley-load --spawn --workers 1 --rooms 10 --members 10 --speakers 3 --duration 20 [--raw-baseline]
import Foundation
import Glibc
import ParleyNet
import ParleyWire

let options = Options.parseOrExit(CommandLine.arguments.dropFirst())
signal(SIGPIPE, SIG_IGN)

let clip: SpeechClip
do { clip = try SpeechClip() } catch { writeLine("parley-load: cannot encode the speech clip: \(error)", fd: 2); exit(1) }
if options.speakers > 3 && options.mode == "forward" {
    writeLine("note: more speakers than the relay's default 3 forwarding slots: 'expected' assumes every packet is forwarded and will overstate loss")
}

var spawned: SpawnedRelay?
let server: PeerAddress
var probe: ProcessProbe?
switch options.target {
case .spawn:
    do {
        spawned = try SpawnedRelay(workers: options.workers,
                                   environment: ["PARLEY_MAX_MEMBERS_PER_ROOM": "1000", "PARLEY_MAX_ROOMS": "10000"])
    } catch { writeLine("parley-load: \(error)", fd: 2); exit(1) }
    server = spawned!.address
    probe = spawned!.probe
case .server(let a):
    server = a
    probe = options.relayPID.map { ProcessProbe(pid: $0) } ?? ProcessProbe.find(named: "parley-relay")
    if probe == nil { writeLine("note: relay process not found; relay CPU and memory are not reported (pass --relay-pid)") }
}
defer { spawned?.stop() }

writeLine(String(format: "parley-load: %d rooms × %d members, %d speakers per room, %@ mode, %.0f s; relay %@ (pid %d); speech clip %d frames, %.0f %% sent (DTX pauses)",
                 options.rooms, options.members, options.speakers, options.mode, options.duration, server.description,
                 probe?.pid ?? -1, clip.frames.count, clip.sentFraction * 100))

@MainActor func exitFailing(_ message: String) -> Never {
    writeLine("parley-load: \(message)", fd: 2)
    spawned?.stop()
    exit(1)
}

if options.findMax {
    // Step the listeners per room up until delivery < 99.9 % or p99 > 20 ms, within the time cap.
    let stepSeconds = min(options.duration, 8)
    var listeners = max(1, options.members - options.speakers)
    var held: RunResult?
    var spent = 0.0
    var step = 0
    while spent + stepSeconds <= options.findMaxCap {
        let membersPerRoom = options.speakers + listeners
        writeLine("find-max step \(step): \(options.rooms) rooms × \(membersPerRoom) members (\(listeners) listeners per room)")
        let t0 = Clock.monotonicNanoseconds()
        let run: LoadRun
        do {
            run = try LoadRun(options: options, clip: clip, target: .relay(server, probe), membersPerRoom: membersPerRoom,
                              prefix: "max\(step)-\(getpid())", progress: true)
        } catch { writeLine("cannot open sockets: \(error)"); break }
        let r = run.run(against: .relay(server, probe), durationSeconds: stepSeconds)
        spent += Double(Clock.monotonicNanoseconds() - t0) / 1e9
        let ok = r.deliveryRatio >= 0.999 && r.latency.quantileMilliseconds(0.99) <= 20 && r.joined == r.members
        writeLine(String(format: "  → members %d, out %.0f pps, delivery %.4f %%, p99 %.2f ms, relay CPU %.0f %%, load-gen CPU %.0f %%: %@",
                         r.members, r.outPacketsPerSecond, r.deliveryRatio * 100, r.latency.quantileMilliseconds(0.99),
                         r.targetCPUSeconds / r.durationSeconds * 100, r.generatorCPUSeconds / r.durationSeconds * 100, ok ? "held" : "NOT held"))
        if !ok { break }
        held = r
        listeners = listeners < 10 ? listeners * 2 + 3 : listeners * 2
        step += 1
    }
    if let held {
        writeLine("")
        writeLine(Report.table([held], mix: options.mode == "mix"))
        writeLine(String(format: "largest load held: %d members (%d rooms), %.0f output pps, %.0f out pkts per relay CPU-second", held.members,
                         options.rooms, held.outPacketsPerSecond, held.outPacketsPerCPUSecond))
        if let path = options.json {
            try? Report.json(held, raw: nil, options: options, extra: ["find_max_members": held.members]).write(toFile: path, atomically: true, encoding: .utf8)
        }
    } else {
        writeLine("no step held")
    }
    spawned?.stop()   // exit() skips the top-level defer
    exit(0)
}

let run: LoadRun
do {
    run = try LoadRun(options: options, clip: clip, target: .relay(server, probe), membersPerRoom: options.members,
                      prefix: "load-\(getpid())", progress: true)
} catch { exitFailing("cannot open the members' sockets: \(error)") }

writeLine("— parley relay —")
let parley = run.run(against: .relay(server, probe), durationSeconds: options.duration)
if !parley.refusals.isEmpty { writeLine("\(parley.refusals.count) members not admitted, e.g. \(parley.refusals[0])") }

var raw: RunResult?
if options.rawBaseline {
    writeLine("— raw fan-out forwarder (same members and sockets) —")
    do {
        let forwarder = try RawForwarder()
        forwarder.start()
        raw = run.run(against: .raw(forwarder), durationSeconds: options.duration)
        forwarder.stop()
    } catch { exitFailing("cannot start the raw forwarder: \(error)") }
}

writeLine("")
writeLine(Report.table([parley] + (raw.map { [$0] } ?? []), mix: options.mode == "mix"))
if let raw, raw.outPacketsPerCPUSecond > 0 {
    writeLine(String(format: "\nparley ÷ raw fan-out, output packets per CPU-second: %.0f ÷ %.0f = %.3f (goal ≥ 0.9)",
                     parley.outPacketsPerCPUSecond, raw.outPacketsPerCPUSecond, parley.outPacketsPerCPUSecond / raw.outPacketsPerCPUSecond))
}
if options.mode == "mix" {
    writeLine("mix mode: mixed packets carry no send time; 'latency' is each listener's arrival delay relative to its first mixed packet through the mix's RTP clock (delay variation), not one-way latency.")
}
let json = Report.json(parley, raw: raw, options: options)
if let path = options.json {
    do { try json.write(toFile: path, atomically: true, encoding: .utf8) } catch { exitFailing("cannot write \(path): \(error)") }
}
writeLine(json)
