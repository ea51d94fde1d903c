import BenchmarkSupport
// soak-bench: memory after many join/leave cycles against an in-process relay core on a manual clock. A relay for
// drop-in rooms sees endless churn and runs for months: what every member, endpoint, presence session, call and room
// holds must be freed when it ends, so RSS and the allocator's in-use bytes stay flat however many sessions pass.
//
//   swift build -c release --product soak-bench && .build/release/soak-bench [--cycles 3000] [--flood 10000] [--trim]
import Glibc
import ParleyRelayCore
import ParleyWire

let options = Options.parseOrExit(CommandLine.arguments.dropFirst())
var config = RelayCoreConfig()
// The soak's plain-RTP tool sends cleartext RTP (what it measures is memory, not SRTP): the core must allow it.
config.allowCleartext = true
config.emptyRoomTimeout = .seconds(options.emptyRoomTimeoutSeconds)
config.maxRooms = 1_000_000
config.maxMembersPerRoom = max(config.maxMembersPerRoom, options.shape.members)
let world = SoakWorld(config: config)
let started = world.clock.monotonic
// Time for every session still ending to be removed (dead members time out) and every room to close once empty.
let settleMilliseconds = (config.memberTimeout + config.emptyRoomTimeout + .seconds(2)).milliseconds

print(options.flood.map { "soak-bench: join flood of \($0) members in rooms of \(options.shape.members), \(options.shape.speakers) speaking per room" }
      ?? "soak-bench: \(options.cycles) cycles of \(options.shape.members) members (\(options.shape.speakers) speaking \(options.shape.mediaMilliseconds) ms, \(options.shape.mode)) + 1 RTP endpoint + 2 presence sessions and a call")
print("empty_room_timeout \(options.emptyRoomTimeoutSeconds) s, member_timeout \(config.memberTimeout.wholeSeconds) s\(options.trim ? "; malloc_trim(0) before every reading" : "")")
print(Reading.header)
var readings = [Reading("start", world: world, sessions: 0, trim: options.trim, started: started)]
print(readings[0].row)
var sessions = 0

if let flood = options.flood {
    let peak = world.runFlood(flood, shape: options.shape)
    sessions = flood
    readings.append(Reading("joined", world: world, sessions: sessions, trim: options.trim, started: started))
    print(readings.last!.row)
    for p in peak { world.remove(p) }  // every flood client dies at once
    world.run(milliseconds: (config.memberTimeout + .seconds(1)).milliseconds)
    readings.append(Reading("timed out", world: world, sessions: sessions, trim: options.trim, started: started))
    print(readings.last!.row)
} else {
    var k = 0
    while k < options.cycles {
        for _ in 0..<min(options.block, options.cycles - k) {
            sessions += world.runCycle(k, shape: options.shape)
            k += 1
        }
        readings.append(Reading("\(k) cycles", world: world, sessions: sessions, trim: options.trim, started: started))
        print(readings.last!.row)
    }
    if readings.count > 2 {
        let g = readings.last!.growthPerThousandSessions(since: readings[1])
        print("growth per 1,000 sessions from \(readings[1].label) to \(readings.last!.label): RSS \(fixed(g.resident, 1)) KB, in use \(fixed(g.inUse, 1)) KB")
    }
}

world.run(milliseconds: settleMilliseconds)
readings.append(Reading("all ended", world: world, sessions: sessions, trim: options.trim, started: started))
print(readings.last!.row)
if !options.trim {
    readings.append(Reading("malloc_trim", world: world, sessions: sessions, trim: true, started: started))
    print(readings.last!.row)
}
// What may stay once everything ended: the bounded event logs (1,024 room and member events, 256 call events, never
// drained here) and tables at their peak capacity — well under this.
let allowedRemainder: UInt64 = 2 << 20
let final = readings.last!
let remainder = Int64(final.inUseBytes) - Int64(readings[0].inUseBytes)
print("tables once everything ended: \(final.live == .empty ? "all empty" : final.live.description)")
print("in use once everything ended minus at the start: \(fixed(Double(remainder) / 1024, 1)) KB after \(sessions) sessions (allowed: \(allowedRemainder >> 10) KB)")
guard final.live == .empty, remainder <= Int64(allowedRemainder) else {
    print("FAIL: sessions that ended left memory behind")
    exit(1)
}
