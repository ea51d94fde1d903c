import BenchmarkSupport
import Glibc

/// The command line of `soak-bench`.
struct Options {
    /// Join/leave cycles in all.
    var cycles = 3_000
    /// Cycles between two memory readings.
    var block = 300
    /// The shape of each cycle.
    var shape = CycleShape()
    /// Seconds an empty room stays open (the relay's default is 300; shorter so a run sees rooms close).
    var emptyRoomTimeoutSeconds: Int64 = 10
    /// Instead of cycles: this many members join (rooms of `shape.members`), then all die and time out.
    var flood: Int?
    /// Call `malloc_trim(0)` before every reading: what remains is held by live allocations, not by the allocator.
    var trim = false

    static let usage = """
        usage: soak-bench [--cycles N] [--block N] [--members N] [--speakers N] [--media-ms MS] [--mode forward|mix]
                          [--empty-timeout S] [--trim] | --flood N [--members N] [--empty-timeout S] [--trim]
          Runs many join/leave cycles against an in-process relay core on a manual clock (members, a plain-RTP
          endpoint, two presence sessions and a call per cycle; members end by leave, kick, replacement, timeout
          and room close) and prints, after each block of cycles, the core's live table sizes, the resident set
          size and the bytes glibc's allocator has in use and holds; then the growth per 1,000 sessions between
          the first and the last reading, and the figures once everything has ended. --flood N joins N members as
          fast as the relay admits them (joins_per_second), lets them all time out, and prints memory at each stage.
          Exits 1 when a table is not empty or more than 2 MB stays in use once everything has ended.
        """

    /// Parses `arguments` (without the program name); prints the usage and exits on anything it does not understand.
    static func parseOrExit(_ arguments: some Sequence<String>) -> Options {
        var o = Options()
        var rest = arguments.makeIterator()
        func positive(_ flag: String) -> Int {
            guard let text = rest.next(), let v = Int(text), v > 0 else { exitWithUsage("\(flag) needs a positive integer") }
            return v
        }
        while let flag = rest.next() {
            switch flag {
            case "-h", "--help": print(usage); exit(0)
            case "--cycles": o.cycles = positive(flag)
            case "--block": o.block = positive(flag)
            case "--members": o.shape.members = positive(flag)
            case "--speakers": o.shape.speakers = positive(flag)
            case "--media-ms": o.shape.mediaMilliseconds = Int64(positive(flag))
            case "--mode":
                o.shape.mode = rest.next() ?? ""
                if o.shape.mode != "forward" && o.shape.mode != "mix" { exitWithUsage("--mode must be forward or mix") }
            case "--empty-timeout": o.emptyRoomTimeoutSeconds = Int64(positive(flag))
            case "--flood": o.flood = positive(flag)
            case "--trim": o.trim = true
            default: exitWithUsage("unknown option \(flag)")
            }
        }
        if o.shape.members < 2 { exitWithUsage("--members must be at least 2") }
        if o.shape.speakers > o.shape.members { exitWithUsage("--speakers cannot exceed --members") }
        return o
    }

    private static func exitWithUsage(_ problem: String) -> Never {
        printToStandardError("soak-bench: \(problem)\n\(usage)")
        exit(2)
    }
}
