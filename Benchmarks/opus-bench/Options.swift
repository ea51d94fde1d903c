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
        var rest = arguments.makeIterator()
        while let flag = rest.next() {
            if flag == "--json" { options.jsonOnly = true; continue }
            if flag == "-h" || flag == "--help" { print(usage); exit(0) }
            guard let text = rest.next(), let value = Int(text), value >= 0 else { exitWithUsage("\(flag) needs a non-negative integer") }
            switch flag {
            case "--complexity":
                guard value <= 10 else { exitWithUsage("--complexity is 0...10") }
                options.complexity = Int32(value)
            case "--frames":
                guard value > 0 else { exitWithUsage("--frames must be positive") }
                options.frames = value
            case "--rounds":
                guard value > 0 else { exitWithUsage("--rounds must be positive") }
                options.rounds = value
            default: exitWithUsage("unknown option \(flag)")
            }
        }
        return options
    }

    private static func exitWithUsage(_ problem: String) -> Never {
        printToStandardError("opus-bench: \(problem)\n\(usage)")
        exit(2)
    }
}

/// Writes `text` and a newline to standard error (fd 2; the C `stderr` global is not concurrency-safe in Swift 6).
func printToStandardError(_ text: String) {
    let line = text + "\n"
    _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
}
