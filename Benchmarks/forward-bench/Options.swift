import BenchmarkSupport
import Glibc
import ParleyRelayCore

/// The command line: the shape of the load and how long to measure it.
struct Options {
    /// Rooms on the worker.
    var rooms = 10
    /// Members per room (speakers included).
    var members = 10
    /// Members per room that send audio.
    var speakers = 3
    /// Packets received per timed run.
    var packets = 200_000
    /// Packets received before timing, so speaker selection, dictionaries and queues settle.
    var warmup = 20_000
    /// Timed runs; the median is reported.
    var runs = 3
    /// Print only the JSON line.
    var jsonOnly = false
    /// Megabytes written between 20 ms rounds to evict the caches (`ColdCaches`); 0: warm.
    var coldMegabytes = 0
    /// Each 20 ms round starts by prefetching the lines the last one noted, as the worker does (`HotLines`).
    var prefetch = true

    static let usage = """
        usage: forward-bench [--rooms N] [--members N] [--speakers N] [--packets N] [--warmup N] [--runs N]
                             [--cold MB [--no-prefetch]] [--json]
          Measures the relay core's per-packet parse + route cost (ns and allocations per packet) against a
          baseline of the bare work (parse, sender lookup, one queue entry per listener) measured in the same run.
        """

    /// Parses `arguments` (without the program name); prints the usage and exits on anything it does not understand.
    static func parseOrExit(_ arguments: some Sequence<String>) -> Options {
        var options = Options()
        let line = BenchmarkCommandLine(program: "forward-bench", usage: usage)
        options.jsonOnly = line.parse(arguments) { flag, next in
            switch flag {
            case "--rooms": options.rooms = line.integer(flag, next)
            case "--members": options.members = line.integer(flag, next)
            case "--speakers": options.speakers = line.integer(flag, next)
            case "--packets": options.packets = line.integer(flag, next)
            case "--warmup": options.warmup = line.integer(flag, next)
            case "--runs": options.runs = line.integer(flag, next)
            case "--cold": options.coldMegabytes = line.integer(flag, next)
            case "--no-prefetch": options.prefetch = false
            default: line.fail("unknown option \(flag)")
            }
        }.json
        let limits = RelayCoreConfig()  // the defaults the benchmark runs with
        if options.members < 2 { line.fail("--members must be at least 2 (a speaker and a listener)") }
        if options.members > limits.maxMembersPerRoom { line.fail("--members is at most \(limits.maxMembersPerRoom) (maxMembersPerRoom)") }
        if options.rooms > limits.maxRooms - 1 { line.fail("--rooms is at most \(limits.maxRooms - 1) (maxRooms, less one for the selection room)") }
        if options.speakers > options.members { line.fail("--speakers cannot exceed --members") }
        return options
    }
}
