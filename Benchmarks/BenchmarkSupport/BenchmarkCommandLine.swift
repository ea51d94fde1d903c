import Glibc

/// The command line the in-process benchmarks share: `--json`, `-h`/`--help`, and `--flag value` pairs handed to the
/// program, which knows its own flags. Problems print `program: problem` and the usage on standard error and exit 2.
public struct BenchmarkCommandLine {
    /// The program's name, first in every error line.
    public let program: String
    /// The usage text printed for `--help` and after every problem.
    public let usage: String

    /// A reader for `program` with its `usage`.
    public init(program: String, usage: String) {
        self.program = program
        self.usage = usage
    }

    /// Walks `arguments` (without the program name). `--json` (when `acceptsJSON`) is reported in the result;
    /// `-h`/`--help` prints the usage and exits 0; every other argument is handed to `take` with a function that
    /// yields the next argument (nil at the end), for the flags that take a value.
    @discardableResult
    public func parse(_ arguments: some Sequence<String>, acceptsJSON: Bool = true,
                      _ take: (_ flag: String, _ next: () -> String?) -> Void) -> (json: Bool, Void) {
        var json = false
        var rest = arguments.makeIterator()
        while let flag = rest.next() {
            if acceptsJSON, flag == "--json" { json = true; continue }
            if flag == "-h" || flag == "--help" { print(usage); exit(0) }
            take(flag) { rest.next() }
        }
        return (json, ())
    }

    /// The value after `flag` as an integer of at least `minimum` (1: "a positive integer", 0: "a non-negative
    /// integer"); anything else fails.
    public func integer(_ flag: String, _ next: () -> String?, minimum: Int = 1) -> Int {
        guard let text = next(), let value = Int(text), value >= minimum else {
            fail("\(flag) needs a \(minimum > 0 ? "positive" : "non-negative") integer")
        }
        return value
    }

    /// Prints `program: problem` and the usage on standard error, and exits 2.
    public func fail(_ problem: String) -> Never {
        printToStandardError("\(program): \(problem)\n\(usage)")
        exit(2)
    }
}
