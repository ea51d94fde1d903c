import BenchmarkSupport
import Glibc
import ParleyWire

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
        usage: soak-bench [--cycles N] [--block N] [--members N] [--speakers N] [--media-ms MS] [--mode forward|mix|hybrid]
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
        let line = BenchmarkCommandLine(program: "soak-bench", usage: usage)
        line.parse(arguments, acceptsJSON: false) { flag, next in
            switch flag {
            case "--cycles": o.cycles = line.integer(flag, next)
            case "--block": o.block = line.integer(flag, next)
            case "--members": o.shape.members = line.integer(flag, next)
            case "--speakers": o.shape.speakers = line.integer(flag, next)
            case "--media-ms": o.shape.mediaMilliseconds = Int64(line.integer(flag, next))
            case "--mode":
                o.shape.mode = next() ?? ""
                if !RoomMode.isValid(o.shape.mode) { line.fail("--mode must be \(RoomMode.choices)") }
            case "--empty-timeout": o.emptyRoomTimeoutSeconds = Int64(line.integer(flag, next))
            case "--flood": o.flood = line.integer(flag, next)
            case "--trim": o.trim = true
            default: line.fail("unknown option \(flag)")
            }
        }
        if o.shape.members < 2 { line.fail("--members must be at least 2") }
        if o.shape.speakers > o.shape.members { line.fail("--speakers cannot exceed --members") }
        return o
    }
}
