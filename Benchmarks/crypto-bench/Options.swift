import BenchmarkSupport
import Glibc

/// The command line: how many packets to time and how often.
struct Options {
    /// Packets per timed run of each measurement.
    var packets = 200_000
    /// Timed runs; the median is reported.
    var runs = 5
    /// Print only the JSON line.
    var jsonOnly = false

    static let usage = """
        usage: crypto-bench [--packets N] [--runs N] [--json]
          Measures µs of thread CPU time per 120-byte RTP packet (20-byte header with an RFC 6464 audio level,
          100-byte payload) to protect and unprotect it as SRTP AEAD_AES_256_GCM (RFC 7714, ParleyCrypto), and to
          seal and open 120 bytes with libsodium's bare AEADs (AES-256-GCM with the key expanded once and one-shot,
          XChaCha20-Poly1305) in the same run; counts allocations per packet (goal: 0).
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
            case "--packets": options.packets = value
            case "--runs": options.runs = value
            default: exitWithUsage("unknown option \(flag)")
            }
        }
        return options
    }

    private static func exitWithUsage(_ problem: String) -> Never {
        printToStandardError("crypto-bench: \(problem)\n\(usage)")
        exit(2)
    }
}
