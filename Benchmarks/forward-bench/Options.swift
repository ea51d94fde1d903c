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

    static let usage = """
        usage: forward-bench [--rooms N] [--members N] [--speakers N] [--packets N] [--warmup N] [--runs N] [--json]
          Measures the relay core's per-packet parse + route cost (ns and allocations per packet) against a
          baseline of the bare work (parse, sender lookup, one queue entry per listener) measured in the same run.
        """

    /// Parses `arguments` (without the program name); prints the usage and exits on anything it does not understand.
    static func parseOrExit(_ arguments: some Sequence<String>) -> Options {
        var options = Options()
        var rest = arguments.makeIterator()
        while let flag = rest.next() {
            if flag == "--json" { options.jsonOnly = true; continue }
            if flag == "-h" || flag == "--help" { print(usage); exit(0) }
            guard let text = rest.next(), let value = Int(text), value > 0 else { exitWithUsage("\(flag) needs a positive integer") }
            switch flag {
            case "--rooms": options.rooms = value
            case "--members": options.members = value
            case "--speakers": options.speakers = value
            case "--packets": options.packets = value
            case "--warmup": options.warmup = value
            case "--runs": options.runs = value
            default: exitWithUsage("unknown option \(flag)")
            }
        }
        let limits = RelayCoreConfig()  // the defaults the benchmark runs with
        if options.members < 2 { exitWithUsage("--members must be at least 2 (a speaker and a listener)") }
        if options.members > limits.maxMembersPerRoom { exitWithUsage("--members is at most \(limits.maxMembersPerRoom) (maxMembersPerRoom)") }
        if options.rooms > limits.maxRooms - 1 { exitWithUsage("--rooms is at most \(limits.maxRooms - 1) (maxRooms, less one for the selection room)") }
        if options.speakers > options.members { exitWithUsage("--speakers cannot exceed --members") }
        return options
    }

    private static func exitWithUsage(_ problem: String) -> Never {
        printToStandardError("forward-bench: \(problem)\n\(usage)")
        exit(2)
    }
}
