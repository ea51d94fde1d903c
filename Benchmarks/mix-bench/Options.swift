import BenchmarkSupport
import Glibc
import ParleyRelayCore

/// How the speakers talk.
enum TalkPattern: String {
    /// Every speaker talks all the time (the shape: three speaking at once).
    case continuous
    /// Each speaker talks 6 s of every 10 s, the speakers staggered, with DTX during the pauses.
    case pauses
}

/// The command line: the shape of the load and how long to measure it.
struct Options {
    /// Mix-mode rooms on the one worker.
    var rooms = 10
    /// Members per room (speakers included).
    var members = 10
    /// Members per room that send audio.
    var speakers = 3
    /// Simulated seconds measured.
    var seconds = 30
    /// Simulated seconds before measuring (jitter buffers, encoders and queues settle).
    var warmupSeconds = 2
    /// Opus complexity of the relay's mix encoders (and of the floor's).
    var complexity = 5
    /// How the speakers talk.
    var talkPattern = TalkPattern.continuous
    /// The rooms' mode: "mix", or "hybrid" (the speakers may publish and hear each other forwarded; the others may
    /// not, and hear one shared mix).
    var mode = "mix"
    /// Print only the JSON line.
    var jsonOnly = false

    static let usage = """
        usage: mix-bench [--rooms R] [--members N] [--speakers S] [--seconds T] [--warmup W] [--complexity C]
                         [--talk-pattern continuous|pauses] [--mode mix|hybrid] [--json]
          Measures how many mix-mode rooms one RelayCore (one worker, one core) sustains: R rooms of N members,
          S of them speaking real Opus, driven on a manual clock for T simulated seconds after W seconds of warm-up.
          Thread CPU time of the core's calls only. Baseline in the same run: the bare libopus work of the same
          rooms (S decodes + S+1 encodes per room per 20 ms; hybrid: S decodes + 1 encode) with no relay logic.
          --mode hybrid: the S speakers may publish and hear each other forwarded, the other N−S may not and
          hear one shared mix.
          Defaults: --rooms 10 --members 10 --speakers 3 --seconds 30 --warmup 2 --complexity 5 --talk-pattern continuous
        """

    /// Parses `arguments` (without the program name); prints the usage and exits on anything it does not understand.
    static func parseOrExit(_ arguments: some Sequence<String>) -> Options {
        var options = Options()
        let line = BenchmarkCommandLine(program: "mix-bench", usage: usage)
        options.jsonOnly = line.parse(arguments) { flag, next in
            switch flag {
            case "--talk-pattern":
                guard let pattern = next().flatMap(TalkPattern.init(rawValue:)) else { line.fail("--talk-pattern is continuous or pauses") }
                options.talkPattern = pattern
            case "--mode":
                guard let mode = next(), mode == "mix" || mode == "hybrid" else { line.fail("--mode is mix or hybrid") }
                options.mode = mode
            case "--rooms": options.rooms = line.integer(flag, next, minimum: 0)
            case "--members": options.members = line.integer(flag, next, minimum: 0)
            case "--speakers": options.speakers = line.integer(flag, next, minimum: 0)
            case "--seconds": options.seconds = line.integer(flag, next, minimum: 0)
            case "--warmup": options.warmupSeconds = line.integer(flag, next, minimum: 0)
            case "--complexity": options.complexity = line.integer(flag, next, minimum: 0)
            default: line.fail("unknown option \(flag)")
            }
        }.json
        let limits = RelayCoreConfig()  // the defaults the benchmark runs with
        if options.rooms < 1 { line.fail("--rooms must be at least 1") }
        if options.rooms > limits.maxRooms { line.fail("--rooms is at most \(limits.maxRooms) (maxRooms)") }
        if options.members < 2 { line.fail("--members must be at least 2 (a speaker and a listener)") }
        if options.members > limits.maxMembersPerRoom { line.fail("--members is at most \(limits.maxMembersPerRoom) (maxMembersPerRoom)") }
        if options.speakers < 1 || options.speakers > min(options.members, 15) { line.fail("--speakers is 1...min(--members, 15)") }
        if options.seconds < 1 { line.fail("--seconds must be at least 1") }
        if options.complexity > 10 { line.fail("--complexity is 0...10") }
        return options
    }
}
