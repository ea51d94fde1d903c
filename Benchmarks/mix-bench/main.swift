import BenchmarkSupport
// mix-bench: how many mix-mode rooms one RelayCore (one worker, one core) sustains. R rooms of N members, S of
// them speaking real Opus with RFC 6464 levels, all joined through the core's real signalling; a manual clock
// stands in for time and the core is driven as the worker loop drives it (handle, runMixes at each deadline,
// tick). Thread CPU of the core's calls gives CPU-seconds per room per second of audio, whose inverse is rooms
// per core. Baseline in the same run: the bare libopus work of the same rooms (the C-equivalent floor).
//
//   swift build -c release --product mix-bench && .build/release/mix-bench [--rooms 10] [--json]
import Glibc
import ParleyMedia
import ParleyRelayCore
import ParleyWire

let options = Options.parseOrExit(CommandLine.arguments.dropFirst())
let wallStart = monotonicNanoseconds()
var config = RelayCoreConfig()
config.mixComplexity = options.complexity
let shape = Shape(rooms: options.rooms, membersPerRoom: options.members, speakersPerRoom: options.speakers, hybrid: options.mode == "hybrid")

// Each speaker index has its own voice, encoded once (10 s, replayed in a loop); rooms start at different offsets.
let rings: [SpeakerRing]
do {
    rings = try (0..<shape.speakersPerRoom).map { k throws(OpusError) in
        try SpeakerRing(voice: k, of: shape.speakersPerRoom, seconds: 10, pattern: options.talkPattern)
    }
} catch {
    fail("cannot encode the speakers' audio: \(error)")
}

let scenario = Scenario(shape: shape, config: config, rings: rings)
let floor = Floor(shape: shape, rings: rings, complexity: options.complexity, bitrate: config.mixBitrate,
                  expectedLossPercent: config.mixExpectedLossPercent)
let spanOverhead = emptySpanNanoseconds()
let droppedBefore = DropReason.allCases.map { scenario.core.counters.drops($0) }

// Warm-up: jitter buffers reach their target, minus-one encoders are created, queues and arrays reach size.
scenario.run(frames: options.warmupSeconds * 50)
_ = floor.run(frames: options.warmupSeconds * 50)
let mixedBefore = scenario.core.counters.mixedPacketsSent
let floorDecodesBefore = floor.decodes, floorEncodesBefore = floor.encodes

// Measure in 1 s blocks, core and floor alternating, so drifting load from other processes falls on both alike.
var core = Window()
var floorCost = CallCost()
var coreBlocks: [Double] = [], floorBlocks: [Double] = []
Allocations.counting(true)
for _ in 0..<options.seconds {
    scenario.measuring = true
    scenario.run(frames: 50)
    scenario.measuring = false
    let block = scenario.takeWindow()
    core.add(block)
    coreBlocks.append(1e9 / (Double(block.total.nanoseconds) / Double(shape.rooms)))
    let floorBlock = floor.run(frames: 50)
    floorCost.add(floorBlock)
    floorBlocks.append(1e9 / (Double(floorBlock.nanoseconds) / Double(shape.rooms)))
}
Allocations.counting(false)

// Sanity checks.
var problems: [String] = []
let frames = core.frames
let members = scenario.clients.count
if scenario.core.memberCount != members { problems.append("members lost: \(scenario.core.memberCount) of \(members) remain") }
for (i, reason) in DropReason.allCases.enumerated() where scenario.core.counters.drops(reason) > droppedBefore[i] {
    problems.append("\(scenario.core.counters.drops(reason) - droppedBefore[i]) datagrams dropped as \(reason.label)")
}
// Who should hear what: the mix (every member of a mix room, a hybrid room's non-speakers); a hybrid room's speakers
// hear the other speakers forwarded, and no mix.
let mixListeners = scenario.clients.enumerated().filter { shape.hearsMix(member: $0.offset % shape.membersPerRoom) }.map(\.element)
let hybridSpeakers = scenario.clients.enumerated().filter { !shape.hearsMix(member: $0.offset % shape.membersPerRoom) }.map(\.element)
let minimumMixed = mixListeners.map(\.mixedReceived).min() ?? 0
let silentMembers = mixListeners.filter { $0.mixedReceived == 0 }.map(\.identity)
if !silentMembers.isEmpty { problems.append("no mixed audio reached \(silentMembers.count) members: \(silentMembers.prefix(5).joined(separator: ", "))") }
if hybridSpeakers.contains(where: { $0.mixedReceived > 0 }) { problems.append("a hybrid room's speaker was sent the mix") }
if shape.speakersPerRoom >= 2, let quiet = hybridSpeakers.first(where: { $0.forwardedReceived == 0 }) {
    problems.append("\(quiet.identity) heard no other speaker forwarded")
}
if options.talkPattern == .continuous, minimumMixed < frames * 98 / 100 {
    problems.append("a member received mixed audio in only \(minimumMixed) of \(frames) frames")
}
if Int(scenario.core.counters.mixedPacketsSent - mixedBefore) != core.mixedPackets {
    problems.append("the core counted \(scenario.core.counters.mixedPacketsSent - mixedBefore) mixed packets, the clients received \(core.mixedPackets)")
}
let encodesPerTick = Double(core.encodes) / Double(shape.rooms * frames)
let expected = Double(shape.expectedEncodesPerTick)
if options.talkPattern == .continuous, abs(encodesPerTick - expected) > 0.05 * expected {
    problems.append("\(fixed(encodesPerTick, 3)) encodes per room per 20 ms, expected \(shape.expectedEncodesPerTick)")
}
let decodeCheck = scenario.decodeCheck
if decodeCheck.errors > 0 { problems.append("\(decodeCheck.errors) mixed packets failed to decode") }
if decodeCheck.frames > 0, decodeCheck.level > 60 { problems.append("the mixes decode to near silence (−\(fixed(decodeCheck.level, 1)) dBov)") }

let results = Results(options: options, shape: shape, core: core, floor: floorCost,
                      floorDecodes: floor.decodes - floorDecodesBefore, floorEncodes: floor.encodes - floorEncodesBefore,
                      coreBlocks: coreBlocks, floorBlocks: floorBlocks, spanOverheadNanoseconds: spanOverhead,
                      minimumMixedPerClient: minimumMixed, decodeCheck: decodeCheck,
                      ringDTXShare: rings.reduce(0) { $0 + $1.dtxShare } / Double(rings.count),
                      ringPayloadBytes: rings.reduce(0) { $0 + $1.meanPayloadBytes } / Double(rings.count),
                      wallSeconds: Double(monotonicNanoseconds() - wallStart) / 1e9, problems: problems)
if !options.jsonOnly {
    print(results.table)
    print("")
}
print(results.json)
if !problems.isEmpty { exit(1) }
