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
        let line = BenchmarkCommandLine(program: "crypto-bench", usage: usage)
        options.jsonOnly = line.parse(arguments) { flag, next in
            switch flag {
            case "--packets": options.packets = line.integer(flag, next)
            case "--runs": options.runs = line.integer(flag, next)
            default: line.fail("unknown option \(flag)")
            }
        }.json
        return options
    }
}
