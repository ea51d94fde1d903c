import BenchmarkSupport
import Glibc

/// The command line: what to encode and how long to measure it.
struct Options {
    /// Encoder complexity 0…10.
    var complexity: Int32 = 5
    /// Frames (20 ms each) encoded and decoded per timed run; the 10 s signal repeats to fill them.
    var frames = 5_000
    /// Timed rounds; each times the wrapper and the direct calls once, and the median is reported.
    var rounds = 5
    /// Print only the JSON line.
    var jsonOnly = false

    static let usage = """
        usage: opus-bench [--complexity N] [--frames N] [--rounds N] [--json]
          Measures µs of thread CPU time per 20 ms frame (48 kHz mono, 32 kbit/s, FEC on, VOIP) to encode and to
          decode through ParleyMedia's OpusEncoder/OpusDecoder and through direct libopus calls on raw handles,
          interleaving the two in blocks of 50 frames; reports the medians and wrapper/direct ratios.
        """

    /// Parses `arguments` (without the program name); prints the usage and exits on anything it does not understand.
    static func parseOrExit(_ arguments: some Sequence<String>) -> Options {
        var options = Options()
        let line = BenchmarkCommandLine(program: "opus-bench", usage: usage)
        options.jsonOnly = line.parse(arguments) { flag, next in
            switch flag {
            case "--complexity":
                let value = line.integer(flag, next, minimum: 0)
                guard value <= 10 else { line.fail("--complexity is 0...10") }
                options.complexity = Int32(value)
            case "--frames":
                let value = line.integer(flag, next, minimum: 0)
                guard value > 0 else { line.fail("--frames must be positive") }
                options.frames = value
            case "--rounds":
                let value = line.integer(flag, next, minimum: 0)
                guard value > 0 else { line.fail("--rounds must be positive") }
                options.rounds = value
            default: line.fail("unknown option \(flag)")
            }
        }.json
        return options
    }
}
