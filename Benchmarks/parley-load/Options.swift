import Glibc
import ParleyNet
import ParleyWire

/// The command line of `parley-load`.
struct Options {
    enum Target { case server(PeerAddress), spawn }
    var target: Target = .spawn
    var workers = 1
    var rooms = 10
    var members = 10
    var speakers = 3
    var duration = 20.0
    var mode = "forward"
    var ramp = 1.0
    var json: String?
    var relayPID: Int32?
    var rawBaseline = false
    var findMax = false
    var findMaxCap = 60.0
    /// One-way latency above which a packet counts as late, in ms.
    var lateMilliseconds = 20.0

    static let usage = """
        usage: parley-load [--server HOST:PORT [--relay-pid PID] | --spawn [--workers N]] --rooms R --members M --speakers S
                           --duration SECONDS [--mode forward|mix] [--ramp SECONDS] [--json FILE] [--raw-baseline]
                           [--find-max [--find-max-cap SECONDS]] [--late-ms MS]
          Simulated members (one UDP socket each, loopback) join through Parley signalling; S per room send pre-encoded
          Opus speech every 20 ms with a send timestamp (RTP header extension id 2); every member accounts for what it
          receives. --raw-baseline also runs the same load through a minimal recvmmsg→sendmmsg forwarder in this process
          and reports Parley's output packets per relay CPU-second as a ratio of that path's.
        """

    static func parseOrExit(_ arguments: some Sequence<String>) -> Options {
        var o = Options()
        var rest = arguments.makeIterator()
        func value(_ flag: String) -> String {
            guard let v = rest.next() else { exitWithUsage("\(flag) needs a value") }
            return v
        }
        func positive(_ flag: String) -> Int {
            guard let v = Int(value(flag)), v > 0 else { exitWithUsage("\(flag) needs a positive integer") }
            return v
        }
        func seconds(_ flag: String) -> Double {
            guard let v = Double(value(flag)), v >= 0 else { exitWithUsage("\(flag) needs a number of seconds") }
            return v
        }
        while let flag = rest.next() {
            switch flag {
            case "-h", "--help": print(usage); exit(0)
            case "--server":
                guard let a = PeerAddress(parsing: value(flag)) else { exitWithUsage("--server must be HOST:PORT") }
                o.target = .server(a)
            case "--spawn": o.target = .spawn
            case "--workers": o.workers = positive(flag)
            case "--rooms": o.rooms = positive(flag)
            case "--members": o.members = positive(flag)
            case "--speakers": o.speakers = positive(flag)
            case "--duration": o.duration = seconds(flag)
            case "--ramp": o.ramp = seconds(flag)
            case "--mode":
                o.mode = value(flag)
                if o.mode != "forward" && o.mode != "mix" { exitWithUsage("--mode must be forward or mix") }
            case "--json": o.json = value(flag)
            case "--relay-pid": o.relayPID = Int32(positive(flag))
            case "--raw-baseline": o.rawBaseline = true
            case "--find-max": o.findMax = true
            case "--find-max-cap": o.findMaxCap = seconds(flag)
            case "--late-ms": o.lateMilliseconds = seconds(flag)
            default: exitWithUsage("unknown option \(flag)")
            }
        }
        if o.members < 2 { exitWithUsage("--members must be at least 2") }
        if o.speakers > o.members { exitWithUsage("--speakers cannot exceed --members") }
        if o.duration <= 0 { exitWithUsage("--duration must be positive") }
        return o
    }

    static func exitWithUsage(_ problem: String) -> Never {
        writeLine("parley-load: \(problem)\n\(usage)", fd: 2)
        exit(2)
    }
}
