import BenchmarkSupport
// forward-bench: the per-packet cost of parse + route in `RelayCore`, in ns per received and per forwarded
// packet and in allocations per forwarded packet (goal: zero), against a baseline of the bare work measured
// in the same run. Members join through the core's real signalling; a manual clock stands in for time.
//
//   swift build -c release --product forward-bench && .build/release/forward-bench [--json]
import ParleyRelayCore
import ParleyWire

let options = Options.parseOrExit(CommandLine.arguments.dropFirst())
ColdCaches.bytes = options.coldMegabytes << 20
Scenario.prefetch = options.prefetch
let config = RelayCoreConfig()
var problems: [String] = []

// The shape asked for: warm up, then time `runs` passes of the core and of the baseline over the same packets.
let scenario = Scenario(shape: Shape(rooms: options.rooms, membersPerRoom: options.members, speakersPerRoom: options.speakers))
let train = PacketTrain(capacity: max(options.packets, options.warmup))
train.load(options.warmup, from: &scenario.streams)
_ = scenario.run(train)
let baseline = BaselineRouter(scenario)  // built after warm-up: it forwards the speakers the core selected
_ = baseline.run(train)

var coreRuns: [PacketFigures] = []
var baselineRuns: [PacketFigures] = []
var ticks = TickFigures()
for _ in 0..<options.runs {
    train.load(options.packets, from: &scenario.streams)
    Allocations.counting(true)
    let core = scenario.run(train)
    let bare = baseline.run(train)
    Allocations.counting(false)
    coreRuns.append(core.packets)
    baselineRuns.append(bare)
    ticks.add(core.ticks)
    if core.packets.forwarded != bare.forwarded {
        problems.append("core forwarded \(core.packets.forwarded) datagrams, baseline \(bare.forwarded)")
    }
}
let counters = scenario.core.counters
if scenario.core.memberCount != scenario.clients.count { problems.append("members lost: \(scenario.core.memberCount) of \(scenario.clients.count) remain") }
for reason in DropReason.allCases where counters.drops(reason) > 0 {
    problems.append("\(counters.drops(reason)) datagrams dropped as \(reason.label)")
}

// The same shape encrypted: members joined through the Noise handshake speak SRTP; the relay unprotects each
// packet with its speaker's key and protects it once with the room's key for every listener.
let sealed = Scenario(shape: scenario.shape, encrypted: true)
train.load(options.warmup, from: &sealed.streams)
_ = sealed.run(train)
var encryptedRuns: [PacketFigures] = []
for _ in 0..<options.runs {
    train.load(options.packets, from: &sealed.streams)
    Allocations.counting(true)
    encryptedRuns.append(sealed.run(train).packets)
    Allocations.counting(false)
}
for reason in DropReason.allCases where sealed.core.counters.drops(reason) > 0 {
    problems.append("encrypted: \(sealed.core.counters.drops(reason)) datagrams dropped as \(reason.label)")
}
if let forwarded = encryptedRuns.first?.forwarded, forwarded != coreRuns.first?.forwarded {
    problems.append("encrypted run forwarded \(forwarded) datagrams, cleartext \(coreRuns.first?.forwarded ?? 0)")
}

// The same rooms as a node of a cluster sharing every room with one other node (cascading). Receiving: the other
// node's speaker in each room arrives over the link (opened, selected, fanned out here). Sending: this node's speakers'
// forwarded packets are also sealed once for the other node (`cascade_out`), against the encrypted run above.
let cascadePerRun = max(1, options.packets / max(1, options.rooms))
let cascadeWarmup = max(1, options.warmup / max(1, options.rooms))
let cascade = CascadeScenario(shape: Shape(rooms: options.rooms, membersPerRoom: options.members, speakersPerRoom: 0),
                              packetsPerRoom: cascadeWarmup + cascadePerRun * options.runs)
_ = cascade.receive(0..<cascadeWarmup)
var cascadeInRuns: [PacketFigures] = []
for r in 0..<options.runs {
    let start = cascadeWarmup + r * cascadePerRun
    Allocations.counting(true)
    cascadeInRuns.append(cascade.receive(start..<start + cascadePerRun))
    Allocations.counting(false)
}
if let forwarded = cascadeInRuns.first?.forwarded, forwarded != cascadePerRun * options.rooms * options.members {
    problems.append("cascade run forwarded \(forwarded) datagrams, expected \(cascadePerRun * options.rooms * options.members)")
}
let sending = CascadeScenario(shape: scenario.shape, packetsPerRoom: 1)
train.load(options.warmup, from: &sending.scenario.streams)
_ = sending.scenario.run(train)
var cascadeOutRuns: [PacketFigures] = []
for _ in 0..<options.runs {
    train.load(options.packets, from: &sending.scenario.streams)
    let sealedBefore = sending.scenario.core.counters.cascadeOut
    Allocations.counting(true)
    cascadeOutRuns.append(sending.scenario.run(train).packets)
    Allocations.counting(false)
    if sending.scenario.core.counters.cascadeOut - sealedBefore < UInt64(options.packets) / 2 {
        problems.append("cascade sending: \(sending.scenario.core.counters.cascadeOut - sealedBefore) packets sealed for the other node")
    }
}
for s in [cascade.scenario, sending.scenario] {
    for reason in DropReason.allCases where s.core.counters.drops(reason) > 0 {
        problems.append("cascade: \(s.core.counters.drops(reason)) datagrams dropped as \(reason.label)")
    }
}

// The same rooms of WebRTC members (what browsers are): ICE check and DTLS handshake through the core, one speaker per
// room (DTLS-SRTP, AEAD_AES_128_GCM), the others listening: each forwarded packet is rewritten onto the listener's one
// stream and protected with that listener's keys (libsrtp2), where native members share the room's key.
let webrtcPerRun = max(1, options.packets / max(1, options.rooms))
let webrtcWarmup = max(1, options.warmup / max(1, options.rooms))
var webrtcRuns: [PacketFigures] = []
do {
    let webrtc = try WebRTCScenario(rooms: options.rooms, membersPerRoom: options.members,
                                    packetsPerSpeaker: webrtcWarmup + webrtcPerRun * options.runs)
    problems += webrtc.failures.map { "WebRTC: " + $0 }
    _ = webrtc.run(0..<webrtcWarmup)
    for r in 0..<options.runs {
        let start = webrtcWarmup + r * webrtcPerRun
        Allocations.counting(true)
        webrtcRuns.append(webrtc.run(start..<start + webrtcPerRun))
        Allocations.counting(false)
    }
    for reason in DropReason.allCases where webrtc.core.counters.drops(reason) > 0 {
        problems.append("WebRTC: \(webrtc.core.counters.drops(reason)) datagrams dropped as \(reason.label)")
    }
    let expected = webrtcPerRun * options.rooms * (options.members - 1)
    if let forwarded = webrtcRuns.first?.forwarded, forwarded != expected {
        problems.append("WebRTC run forwarded \(forwarded) datagrams, expected \(expected)")
    }
} catch {
    problems.append("WebRTC scenario: \(error)")
    webrtcRuns = [PacketFigures()]
}

// Encrypted joins: 1,000 members into 100 rooms of 10, three times; the relay's time inside `handle` for each initiation.
let joinRuns = (0..<3).map { _ in Scenario(shape: Shape(rooms: 100, membersPerRoom: 10, speakersPerRoom: 1), encrypted: true).initiations }
let joins = joinRuns.sorted { Double($0.nanoseconds) / Double(max(1, $0.count)) < Double($1.nanoseconds) / Double(max(1, $1.count)) }[1]

// Selection: one speaker more than the forwarded slots, in one room. Its packets are received, counted and
// observed, then dropped by selection; count the allocations made while handling them alone.
let slots = config.maxForwardedSpeakers
let selection = Scenario(shape: Shape(rooms: 1, membersPerRoom: max(options.members, slots + 2), speakersPerRoom: slots + 1))
let extra = slots  // the last speaker to join, last in the round-robin: the slots are taken when it first speaks
train.load(options.warmup, from: &selection.streams)
_ = selection.run(train)
if selection.forwardedSpeakers.contains(selection.streams[extra].address) { problems.append("the extra speaker was forwarded") }
train.load(options.packets, from: &selection.streams)
Allocations.counting(true)
let selectionRun = selection.run(train, watchedSpeaker: extra)
Allocations.counting(false)
let extraPackets = (options.packets + slots - extra) / (slots + 1)
let expectedForwarded = (options.packets - extraPackets) * (selection.shape.membersPerRoom - 1)
if selectionRun.packets.forwarded != expectedForwarded {
    problems.append("selection room forwarded \(selectionRun.packets.forwarded) datagrams, expected \(expectedForwarded)")
}

let results = Results(options: options, core: coreRuns, baseline: baselineRuns, encrypted: encryptedRuns, webrtc: webrtcRuns,
                      cascadeIn: cascadeInRuns, cascadeOut: cascadeOutRuns,
                      initiations: joins, ticks: ticks, droppedPackets: extraPackets,
                      droppedAllocations: selectionRun.watchedAllocations, droppedSpeakerIndex: extra, slots: slots,
                      problems: problems)
if !options.jsonOnly {
    print(results.table)
    print("")
}
print(results.json)
